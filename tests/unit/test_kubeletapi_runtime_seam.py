"""The kubelet API reaches containers only through the Runtime protocol: a runtime that is not
Docker serves /pods, logs, exec, stats and port-forward, and its runtime-neutral errors
become the kubelet's HTTP statuses and messages (ContainerNotFound 404, other failures 500,
StreamError a Failure Status on the error channel)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from vk_provider.config import KubeletServerConfig
from vk_provider.kubeletapi import KubeletServer, portforward
from vk_provider.runtime.protocol import STDERR, STDOUT
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerNotFound,
    ContainerRole,
    ContainerRunState,
    ContainerStats,
    PodRuntimeState,
    PodSandboxState,
    RuntimeFailure,
    StreamError,
)

DEADLINE = 10.0
UNROUTABLE_NODE_IP = "192.0.2.1"  # TEST-NET-1: port-forward must dial the runtime's pod address


class FakeSession:
    def __init__(self, code: int) -> None:
        self.code = code
        self.stdin = b""

    async def output(self) -> AsyncIterator[tuple[int, bytes]]:
        yield STDOUT, b"out"
        yield STDERR, b"err"

    async def write_stdin(self, data: bytes) -> None:
        self.stdin += data

    def close_stdin(self) -> None:
        pass

    async def resize(self, width: int, height: int) -> None:
        pass

    async def exit_code(self) -> int | None:
        return self.code

    async def close(self) -> None:
        pass


class FakeRuntime:
    """One running pod `default/web` with container `app` (id c1) on a runtime named `fake`."""

    def __init__(self, pod_address: str) -> None:
        self.address = pod_address
        self.log_error: Exception | None = None
        self.exec_error: StreamError | None = None
        self.exec_commands: list[list[str]] = []

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        app = ContainerInstance(
            "app", ContainerRole.APP, 0, "c1", "img", "sha256:x", ContainerRunState.RUNNING,
            container_uri="fake://c1",
        )  # fmt: skip
        return {"u1": PodRuntimeState("u1", "default", "web", PodSandboxState("sb", True, ""), (app,))}

    async def container_logs(
        self, container_id: str, *, follow: bool, timestamps: bool, tail: int | None, since: float | None
    ) -> AsyncIterator[bytes]:
        if self.log_error is not None:
            raise self.log_error

        async def lines() -> AsyncIterator[bytes]:
            yield f"log of {container_id}\n".encode()

        return lines()

    async def container_stats(self, container_ids: Sequence[str]) -> list[ContainerStats | None]:
        sample = ContainerStats(
            cpu_usage_core_nanoseconds=7, memory_usage_bytes=100, memory_working_set_bytes=60
        )
        return [sample for _ in container_ids]

    def pod_address(self, pod: PodRuntimeState) -> str:
        return self.address

    async def open_exec(
        self, container_id: str, command: list[str], *, stdin: bool, stdout: bool, stderr: bool, tty: bool
    ) -> FakeSession:
        if self.exec_error is not None:
            raise self.exec_error
        self.exec_commands.append(command)
        return FakeSession(3)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[FakeRuntime, str, aiohttp.ClientSession]]:
    runtime = FakeRuntime("127.0.0.1")
    config = KubeletServerConfig(listen="127.0.0.1:0", auth="none")
    server = KubeletServer(config, "node-a", runtime, UNROUTABLE_NODE_IP)  # type: ignore[arg-type]
    await server.start()
    http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False))
    try:
        yield runtime, f"https://127.0.0.1:{server.port}", http
    finally:
        await http.close()
        await server.stop()


async def get_text(http: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with http.get(url) as resp:
        return resp.status, await resp.text()


async def test_pods_carry_the_runtimes_container_uri(
    served: tuple[FakeRuntime, str, aiohttp.ClientSession],
) -> None:
    _, base, http = served
    async with http.get(f"{base}/pods") as resp:
        [item] = (await resp.json())["items"]
    assert item["status"]["containerStatuses"][0]["containerID"] == "fake://c1"


async def test_runtime_errors_become_the_kubelets_statuses(
    served: tuple[FakeRuntime, str, aiohttp.ClientSession],
) -> None:
    runtime, base, http = served
    url = f"{base}/containerLogs/default/web/app"
    assert await get_text(http, url) == (200, "log of c1\n")
    runtime.log_error = ContainerNotFound('container "c1" not found on this node')
    assert await get_text(http, url) == (404, 'container "c1" not found on this node\n')
    runtime.log_error = RuntimeFailure("the engine does not answer")
    assert await get_text(http, url) == (500, "the engine does not answer\n")


async def exec_over_websocket(http: aiohttp.ClientSession, url: str) -> tuple[dict[int, bytes], Any]:
    out: dict[int, bytes] = {}
    status = None
    async with http.ws_connect(url, protocols=("v5.channel.k8s.io",)) as ws:
        async with asyncio.timeout(DEADLINE):
            async for msg in ws:
                channel, data = msg.data[0], msg.data[1:]
                if channel == 3:
                    status = json.loads(data)
                else:
                    out[channel] = out.get(channel, b"") + data
    return out, status


async def test_exec_runs_through_the_runtimes_session(
    served: tuple[FakeRuntime, str, aiohttp.ClientSession],
) -> None:
    runtime, base, http = served
    url = f"{base}/exec/default/web/app?command=false&output=1&error=1"
    out, status = await exec_over_websocket(http, url)
    assert runtime.exec_commands == [["false"]]
    assert out == {1: b"out", 2: b"err"}
    assert status["reason"] == "NonZeroExitCode" and status["details"]["causes"][0]["message"] == "3"
    runtime.exec_error = StreamError("the engine refused the exec")
    out, status = await exec_over_websocket(http, url)
    assert out == {}
    assert status["message"] == "Internal error occurred: the engine refused the exec"


async def test_stats_come_from_the_runtimes_samples(
    served: tuple[FakeRuntime, str, aiohttp.ClientSession],
) -> None:
    _, base, http = served
    async with http.get(f"{base}/stats/summary") as resp:
        summary: Mapping[str, Any] = await resp.json()
    [pod] = summary["pods"]
    [app] = pod["containers"]
    assert app["cpu"]["usageCoreNanoSeconds"] == 7
    assert (app["memory"]["usageBytes"], app["memory"]["workingSetBytes"]) == (100, 60)
    assert "rssBytes" not in app["memory"]


async def test_port_forward_dials_the_runtimes_pod_address(
    served: tuple[FakeRuntime, str, aiohttp.ClientSession],
) -> None:
    _, base, http = served

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.read(100))
        await writer.drain()
        writer.close()

    pod_server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = pod_server.sockets[0].getsockname()[1]
    try:
        url = f"{base}/portForward/default/web?ports={port}"
        async with http.ws_connect(url, protocols=("v4.channel.k8s.io",)) as ws:
            async with asyncio.timeout(DEADLINE):
                headers = [await ws.receive_bytes(), await ws.receive_bytes()]
                assert headers == [b"\x00" + port.to_bytes(2, "little"), b"\x01" + port.to_bytes(2, "little")]
                await ws.send_bytes(b"\x00ping")
                assert await ws.receive_bytes() == b"\x00ping"
    finally:
        pod_server.close()
        await pod_server.wait_closed()


def test_a_port_forward_dial_that_times_out_says_so_as_go_does() -> None:
    """The error frame kubectl prints when the pod's port never answers names the timeout (an
    asyncio timeout's own message is empty), as the kubelet's Go dialer words it."""
    target = portforward._Target("10.244.0.7", "web_default", "u-1")
    assert target.failure(8080, TimeoutError()) == (
        b"error forwarding port 8080 to pod web_default, uid u-1: dial tcp 10.244.0.7:8080: i/o timeout"
    )
    refused = ConnectionRefusedError(111, "Connection refused")
    assert target.failure(8080, refused).endswith(b"dial tcp 10.244.0.7:8080: [Errno 111] Connection refused")
