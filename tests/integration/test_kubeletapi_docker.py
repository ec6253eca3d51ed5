"""The kubelet API (`KubeletServer`) against real Docker containers: logs, exec, attach, auth, stats,
and the answers from the node's pods' spec and status (`KubeletServer.pods`)."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.polling import eventually
from tests.support.runtime_calls import ensure_sandbox, start_container
from vk_provider.config import KubeletServerConfig
from vk_provider.kubeletapi import KubeletServer
from vk_provider.kubeletapi.podstate import KnownPods
from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.pods.config import PodConfig
from vk_provider.runtime.docker import DockerRuntime
from vk_provider.runtime.types import ContainerInstance, ContainerRole, ContainerRunState
from vk_sandbox.pki.authority import SandboxPKI

DEADLINE = 60.0


async def run_pod(
    rt: DockerRuntime,
    name: str,
    containers: dict[str, str],
    *,
    attempt: int = 0,
    pod: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, ContainerInstance]]:
    """Start `sh -c <script>` containers (name -> script) in a pod (new, or `pod` again)."""
    if pod is None:
        specs = [
            {"name": n, "image": BUSYBOX_IMAGE, "command": ["sh", "-c", s]} for n, s in containers.items()
        ]
        pod = {
            "metadata": {"name": name, "namespace": "default", "uid": str(uuid.uuid4())},
            "spec": {"containers": specs},
        }
    sandbox = await ensure_sandbox(rt, pod)
    started = {}
    for c in pod["spec"]["containers"]:
        if c["name"] not in containers:
            continue
        script = containers[c["name"]]
        assert await rt.image_id(BUSYBOX_IMAGE) is not None
        started[c["name"]] = await start_container(
            rt,
            ContainerLaunch(
                pod=pod,
                container={**c, "command": ["sh", "-c", script]},
                role=ContainerRole.APP,
                attempt=attempt,
                env=(),
                command=("sh", "-c", script),
                args=None,
                sandbox=sandbox,
            ),
        )
    return pod, started


async def start_server(rt: DockerRuntime, node_name: str, **kwargs: Any) -> KubeletServer:
    server = KubeletServer(KubeletServerConfig(listen="127.0.0.1:0", **kwargs), node_name, rt, "127.0.0.1")
    await server.start()
    return server


@pytest.fixture
async def kubelet(runtime: DockerRuntime, node_name: str) -> AsyncIterator[tuple[KubeletServer, str]]:
    server = await start_server(runtime, node_name, auth="none")
    yield server, f"https://127.0.0.1:{server.port}"
    await server.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session:
        yield session


async def get_text(http: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with http.get(url, allow_redirects=False) as resp:
        return resp.status, await resp.text()


async def wait_for_log(http: aiohttp.ClientSession, url: str, needle: str) -> str:
    status, text = 0, ""

    async def appeared() -> str | None:
        nonlocal status, text
        status, text = await get_text(http, url)
        return text if status == 200 and needle in text else None

    log: str = await eventually(
        appeared, within=DEADLINE, interval=0.2, what=lambda: f"{needle!r}: {status} {text!r}"
    )
    return log


async def test_logs_plain_tail_timestamps_limit_and_since(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    _, base = kubelet
    await run_pod(runtime, "web", {"app": "echo a; echo b; echo c; sleep 3600"})
    url = f"{base}/containerLogs/default/web/app"
    assert await wait_for_log(http, url, "c\n") == "a\nb\nc\n"
    assert await get_text(http, url + "?tailLines=2") == (200, "b\nc\n")
    assert await get_text(http, url + "?limitBytes=3") == (200, "a\nb")
    status, text = await get_text(http, url + "?timestamps=true")
    lines = text.splitlines()
    assert status == 200 and [line.split(" ", 1)[1] for line in lines] == ["a", "b", "c"]
    assert lines[0].split(" ", 1)[0].endswith("Z") and "T" in lines[0]  # RFC 3339 (nano) timestamps
    assert await get_text(http, url + "?sinceTime=2999-01-01T00:00:00Z") == (200, "")
    assert await get_text(http, url + "?sinceSeconds=3600") == (200, "a\nb\nc\n")
    status, text = await get_text(http, url + "?sinceSeconds=5&sinceTime=2020-01-01T00:00:00Z")
    assert status == 400 and "sinceTime" in text
    status, text = await get_text(http, url + "?tailLines=-1")
    assert status == 400 and "tailLines" in text


async def test_logs_follow_streams_new_lines(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    _, base = kubelet
    await run_pod(runtime, "ticker", {"app": "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.3; done"})
    async with http.get(f"{base}/containerLogs/default/ticker/app?follow=true&tailLines=1") as resp:
        assert resp.status == 200
        seen: list[str] = []
        async with asyncio.timeout(DEADLINE):
            while len(seen) < 4:
                seen.append((await resp.content.readline()).decode())
    numbers = [int(line.split()[1]) for line in seen]
    assert numbers == list(range(numbers[0], numbers[0] + 4))  # consecutive lines as they are written


async def test_logs_previous_instance_and_errors(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    _, base = kubelet
    pod, _ = await run_pod(runtime, "crashy", {"app": "echo first run; exit 1"})

    async def exited() -> bool:
        state = await runtime.pod_state(pod["metadata"]["uid"])
        return state is not None and state.containers[0].state == ContainerRunState.EXITED

    await eventually(exited, within=DEADLINE, interval=0.2, what="the first run to exit")
    await run_pod(runtime, "crashy", {"app": "echo second run; sleep 3600"}, attempt=1, pod=pod)
    url = f"{base}/containerLogs/default/crashy/app"
    assert await wait_for_log(http, url, "second") == "second run\n"
    assert await get_text(http, url + "?previous=true") == (200, "first run\n")

    await run_pod(runtime, "single", {"app": "sleep 3600"})
    assert await get_text(http, f"{base}/containerLogs/default/single/app?previous=true") == (
        400,
        'previous terminated container "app" in pod "single" not found\n',
    )
    assert await get_text(http, f"{base}/containerLogs/default/nope/app") == (
        404,
        'pod "nope" does not exist\n',
    )
    assert await get_text(http, f"{base}/containerLogs/default/single/nope") == (
        404,
        'container "nope" not found in pod "single"\n',
    )


async def test_healthz_pods_and_strict_slash(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession, node_name: str
) -> None:
    _, base = kubelet
    pod, _ = await run_pod(runtime, "listed", {"app": "sleep 3600"})
    assert await get_text(http, f"{base}/healthz") == (200, "ok")
    async with http.get(f"{base}/healthz/", allow_redirects=False) as resp:
        assert resp.status == 301 and resp.headers["Location"] == "/healthz"
    async with http.get(f"{base}/runningpods?x=1", allow_redirects=False) as resp:
        assert resp.status == 301 and resp.headers["Location"] == "/runningpods/?x=1"
    async with http.get(f"{base}/pods") as resp:
        body = await resp.json()
    assert body["kind"] == "PodList"
    [item] = body["items"]
    assert item["metadata"] == {"name": "listed", "namespace": "default", "uid": pod["metadata"]["uid"]}
    assert item["spec"]["nodeName"] == node_name
    async with http.get(f"{base}/runningpods/") as resp:
        assert [p["metadata"]["name"] for p in (await resp.json())["items"]] == ["listed"]
    assert (await get_text(http, f"{base}/nothing"))[0] == 404


async def ws_session(
    http: aiohttp.ClientSession,
    url: str,
    protocol: str,
    stdin: bytes | None = None,
    close_stdin: bool = False,
) -> tuple[dict[int, bytes], dict[str, Any] | None, str | None]:
    """Run one exec/attach over WebSocket; returns (bytes per channel, the Status, the subprotocol)."""
    out: dict[int, bytes] = {}
    status = None
    async with http.ws_connect(url, protocols=(protocol,)) as ws:
        if stdin is not None:
            await ws.send_bytes(b"\x00" + stdin)
        if close_stdin:
            await ws.send_bytes(b"\xff\x00")
        async with asyncio.timeout(DEADLINE):
            async for msg in ws:
                assert msg.type == aiohttp.WSMsgType.BINARY
                channel, data = msg.data[0], msg.data[1:]
                if channel == 3:
                    status = json.loads(data)
                else:
                    out[channel] = out.get(channel, b"") + data
        return out, status, ws.protocol


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
async def test_exec_over_websocket_reports_output_and_exit_code(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession, protocol: str
) -> None:
    _, base = kubelet
    await run_pod(runtime, "shell", {"app": "sleep 3600"})
    query = "command=sh&command=-c&command=echo+hi%3B+echo+oops+%3E%262%3B+exit+3&output=1&error=1"
    out, status, negotiated = await ws_session(http, f"{base}/exec/default/shell/app?{query}", protocol)
    assert negotiated == protocol
    assert out == {1: b"hi\n", 2: b"oops\n"}
    assert status is not None
    assert status["status"] == "Failure" and status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]

    out, status, _ = await ws_session(http, f"{base}/exec/default/shell/app?command=true&output=1", protocol)
    assert out == {} and status == {"metadata": {}, "status": "Success"}


@pytest.mark.parametrize(
    "protocol", ["channel.k8s.io", "base64.channel.k8s.io", "v4.base64.channel.k8s.io", None]
)
async def test_exec_over_the_older_websocket_subprotocols(
    runtime: DockerRuntime,
    kubelet: tuple[KubeletServer, str],
    http: aiohttp.ClientSession,
    protocol: str | None,
) -> None:
    """The subprotocols the kubelet still serves besides v4/v5 (remotecommand/websocket.go):
    `channel.k8s.io` (what the upstream conformance spec "remote command execution over
    websockets" offers), no subprotocol at all (served as channel.k8s.io), and the base64
    text variants; before v4 the error channel carries the failure's message, not a Status."""
    _, base = kubelet
    await run_pod(runtime, "shell", {"app": "sleep 3600"})
    script = "head -c 6; echo oops >&2; exit 3"
    query = f"command=sh&command=-c&command={quote(script)}&input=1&output=1&error=1"
    url = f"{base}/exec/default/shell/app?{query}"
    text = protocol is not None and "base64" in protocol
    out: dict[int, bytes] = {}
    async with http.ws_connect(url, protocols=(protocol,) if protocol else ()) as ws:
        assert ws.protocol == protocol
        if text:
            await ws.send_str("0" + base64.b64encode(b"hello\n").decode())
        else:
            await ws.send_bytes(b"\x00hello\n")
        async with asyncio.timeout(DEADLINE):
            async for msg in ws:
                if text:
                    assert msg.type == aiohttp.WSMsgType.TEXT
                    channel, data = ord(msg.data[0]) - ord("0"), base64.b64decode(msg.data[1:])
                else:
                    assert msg.type == aiohttp.WSMsgType.BINARY
                    channel, data = msg.data[0], msg.data[1:]
                out[channel] = out.get(channel, b"") + data
    assert out[1] == b"hello\n" and out[2] == b"oops\n"
    if protocol == "v4.base64.channel.k8s.io":
        assert json.loads(out[3])["reason"] == "NonZeroExitCode"
    else:
        assert (
            out[3].decode()
            == f"command terminated with non-zero exit code: command 'sh -c {script}' exited with 3"
        )


async def test_exec_stdin_with_v5_close_and_tty(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    _, base = kubelet
    await run_pod(runtime, "shell", {"app": "sleep 3600"})
    url = f"{base}/exec/default/shell/app?command=sh&command=-c&command=wc+-c&input=1&output=1"
    out, status, _ = await ws_session(http, url, "v5.channel.k8s.io", stdin=b"hello\n", close_stdin=True)
    assert out[1].strip() == b"6" and status == {"metadata": {}, "status": "Success"}

    url = f"{base}/exec/default/shell/app?command=tty&output=1&tty=1"
    out, status, _ = await ws_session(http, url, "v5.channel.k8s.io")
    assert out[1].startswith(b"/dev/pts/") and status is not None and status["status"] == "Success"


async def test_exec_refusals(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    _, base = kubelet
    await run_pod(runtime, "shell", {"app": "sleep 3600"})
    status, text = await get_text(http, f"{base}/exec/default/shell/app?command=ls&output=1")
    assert status == 400 and "needs a WebSocket or SPDY/3.1 upgrade" in text
    status, text = await get_text(http, f"{base}/exec/default/shell/app?command=ls")
    assert status == 400 and "at least 1 of stdin, stdout, stderr" in text
    status, text = await get_text(http, f"{base}/exec/default/shell/nope?command=ls&output=1")
    assert (status, text) == (404, 'container "nope" not found in pod "shell"\n')


class CachedStatuses:
    """The status manager's cache as the kubelet API reads it (PodStatuses), filled by the test."""

    def __init__(self) -> None:
        self.by_uid: dict[str, dict[str, Any]] = {}

    def get_pod_status(self, uid: str) -> dict[str, Any] | None:
        return self.by_uid.get(uid)


async def test_answers_from_the_pods_spec_and_status(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    server, base = kubelet
    config, statuses = PodConfig(lambda _: None), CachedStatuses()
    server.pods = KnownPods(config, statuses)
    done, started = await run_pod(runtime, "done", {"app": "echo bye"})
    config.upsert("api", done)

    async def exited() -> bool:
        pod_state = await runtime.pod_state(done["metadata"]["uid"])
        latest = pod_state.latest("app", ContainerRole.APP) if pod_state is not None else None
        return latest is not None and latest.state == ContainerRunState.EXITED

    await eventually(exited, within=DEADLINE, interval=0.2, what="the app container to exit")
    terminated = {"exitCode": 0, "containerID": started["app"].container_uri}
    statuses.by_uid[done["metadata"]["uid"]] = {
        "containerStatuses": [{"name": "app", "state": {"terminated": terminated}}]
    }
    assert await get_text(http, f"{base}/containerLogs/default/done/app") == (200, "bye\n")
    assert await get_text(http, f"{base}/exec/default/done/app?command=ls&output=1") == (
        500,
        'container not found ("app")\n',
    )
    assert await get_text(http, f"{base}/attach/default/done/app?output=1") == (
        500,
        "container app not found in pod done_default\n",
    )

    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}
    pending = {
        "metadata": {"name": "pending", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"containers": [{"name": "c", "image": "127.0.0.1:1/missing:1"}]},
        "status": {"containerStatuses": [{"name": "c", "state": waiting}]},  # no cached status: the source's
    }
    config.upsert("api", pending)
    assert await get_text(http, f"{base}/containerLogs/default/pending/c") == (
        400,
        'container "c" in pod "pending" is waiting to start: trying and failing to pull image\n',
    )
    assert await get_text(http, f"{base}/exec/default/pending/c?command=ls&output=1") == (
        500,
        'container not found ("c")\n',
    )
    assert await get_text(http, f"{base}/containerLogs/default/pending/nope") == (
        404,
        'container "nope" not found in pod "pending"\n',
    )

    # not (or no longer) a pod of this node, though its containers remain in the engine
    await run_pod(runtime, "leftover", {"app": "sleep 3600"})
    assert await get_text(http, f"{base}/containerLogs/default/leftover/app") == (
        404,
        'pod "leftover" does not exist\n',
    )
    assert await get_text(http, f"{base}/exec/default/leftover/app?command=ls&output=1") == (
        404,
        "pod does not exist\n",
    )


async def test_attach_to_the_main_process(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    _, base = kubelet
    specs = [{"name": "app", "image": BUSYBOX_IMAGE, "stdin": True, "command": ["sh"]}]
    pod = {
        "metadata": {"name": "talker", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"containers": specs},
    }
    await run_pod(runtime, "talker", {"app": "while read l; do echo got $l; done"}, pod=pod)
    async with http.ws_connect(
        f"{base}/attach/default/talker/app?input=1&output=1&error=1", protocols=("v5.channel.k8s.io",)
    ) as ws:
        await ws.send_bytes(b"\x00hello\n")
        async with asyncio.timeout(DEADLINE):
            msg = await ws.receive()
    assert msg.data == b"\x01got hello\n"


async def attach_send_and_close(http: aiohttp.ClientSession, url: str, line: bytes) -> bytes:
    """One v5 attach session: send `line`, close stdin, and return the echo."""
    async with http.ws_connect(url, protocols=("v5.channel.k8s.io",)) as ws:
        await ws.send_bytes(b"\x00" + line)
        async with asyncio.timeout(DEADLINE):
            msg = await ws.receive()
        await ws.send_bytes(b"\xff\x00")  # v5: close the stdin stream
    return bytes(msg.data)


@pytest.mark.docker_only("an attach session's end closes the container's stdin, stdinOnce or not")
async def test_stdin_once_closes_stdin_when_the_first_attach_ends(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    """`stdinOnce`: the process sees EOF once the first attach session closes stdin; without
    it, stdin stays open for the next session."""
    _, base = kubelet
    specs = [
        {"name": "once", "image": BUSYBOX_IMAGE, "stdin": True, "stdinOnce": True},
        {"name": "kept", "image": BUSYBOX_IMAGE, "stdin": True},
    ]
    pod = {
        "metadata": {"name": "cats", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"containers": specs},
    }
    await run_pod(runtime, "cats", {"once": "cat", "kept": "cat"}, pod=pod)
    url = f"{base}/attach/default/cats/{{}}?input=1&output=1&error=1"
    assert await attach_send_and_close(http, url.format("once"), b"hello\n") == b"\x01hello\n"
    assert await attach_send_and_close(http, url.format("kept"), b"one\n") == b"\x01one\n"

    async def once_exited() -> ContainerInstance | None:
        state = await runtime.pod_state(pod["metadata"]["uid"])
        once = state.latest("once", ContainerRole.APP) if state is not None else None
        return once if once is not None and once.state == ContainerRunState.EXITED else None

    once = await eventually(once_exited, within=DEADLINE, interval=0.2, what="cat to see EOF and exit")
    assert once.exit_code == 0
    assert await attach_send_and_close(http, url.format("kept"), b"two\n") == b"\x01two\n"


async def test_stats_summary_has_pod_cpu_and_memory(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession, node_name: str
) -> None:
    _, base = kubelet
    pod, _ = await run_pod(runtime, "busy", {"app": "while true; do :; done"})

    async def with_rate() -> dict[str, Any] | None:
        # usageNanoCores needs the previous stats pass (one per STATS_INTERVAL, shared by scrapes)
        async with http.get(f"{base}/stats/summary") as resp:
            summary: dict[str, Any] = await resp.json()
        pods = summary["pods"]
        return summary if pods and "usageNanoCores" in pods[0]["containers"][0]["cpu"] else None

    summary = await eventually(with_rate, within=DEADLINE, interval=1, what="a second stats pass")
    assert summary["node"]["nodeName"] == node_name
    [p] = summary["pods"]
    assert p["podRef"] == {"name": "busy", "namespace": "default", "uid": pod["metadata"]["uid"]}
    [c] = p["containers"]
    assert c["name"] == "app" and c["memory"]["workingSetBytes"] > 0
    assert c["cpu"]["usageNanoCores"] > 10_000_000  # a busy loop, even on a crowded machine
    assert summary["node"]["cpu"]["usageCoreNanoSeconds"] >= c["cpu"]["usageCoreNanoSeconds"]
    async with http.get(f"{base}/metrics/resource") as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await resp.text()
    labels = '{container="app",namespace="default",pod="busy"}'
    for series in ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes"):
        assert f"{series}{labels} " in text
    assert "node_cpu_usage_seconds_total " in text and "scrape_error 0" in text


async def test_x509_auth(runtime: DockerRuntime, node_name: str, tmp_path: Path) -> None:
    pki, other = SandboxPKI(tmp_path / "pki"), SandboxPKI(tmp_path / "other")
    for auth in ("x509", "webhook"):
        server = await start_server(runtime, node_name, auth=auth, client_ca_file=str(pki.ca_cert_path))
        url = f"https://127.0.0.1:{server.port}/healthz"
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as anonymous:
                assert await get_text(anonymous, url) == (401, "Unauthorized\n")
                async with anonymous.get(url, headers={"Authorization": "Bearer abc"}) as resp:
                    assert resp.status == 401
                    if auth == "webhook":
                        assert "bearer tokens (TokenReview) are not supported" in await resp.text()
            async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=pki.ssl_client_context())
            ) as ok:
                assert await get_text(ok, url) == (200, "ok")
            async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=other.ssl_client_context())
            ) as bad:
                with pytest.raises((aiohttp.ClientError, ssl.SSLError, ConnectionError)):
                    await get_text(bad, url)
        finally:
            await server.stop()


async def test_port_forward_over_websocket(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    _, base = kubelet
    await run_pod(runtime, "www", {"app": "httpd -f -p 8080 -h /var/www"})
    url = f"{base}/portForward/default/www?port=8080,9"
    channels: dict[int, bytes] = {}

    async def served() -> bool:  # once httpd listens
        nonlocal channels
        channels = {}
        async with http.ws_connect(url, protocols=("v4.channel.k8s.io",)) as ws:
            assert ws.protocol == "v4.channel.k8s.io"
            await ws.send_bytes(b"\x00GET / HTTP/1.0\r\n\r\n")
            async with asyncio.timeout(DEADLINE):
                async for msg in ws:
                    channels[msg.data[0]] = channels.get(msg.data[0], b"") + msg.data[1:]
        return b"200 OK" in channels.get(0, b"")

    await eventually(served, within=DEADLINE, interval=0.3, what=lambda: f"an answer from httpd ({channels})")
    # Each channel starts with its port, little-endian; port 9 has nothing listening.
    assert channels[0][:2] == channels[1] == (8080).to_bytes(2, "little")
    assert channels[0].startswith(b"\x90\x1fHTTP/1.1 200 OK")
    assert channels[0].endswith(b"hello from vk-test/busybox\n")
    assert channels[2] == (9).to_bytes(2, "little")
    assert channels[3].startswith((9).to_bytes(2, "little") + b"error forwarding port 9 to pod ")


async def test_exec_waits_for_the_process_after_its_output_closes(
    runtime: DockerRuntime, kubelet: tuple[KubeletServer, str], http: aiohttp.ClientSession
) -> None:
    _, base = kubelet
    await run_pod(runtime, "shell", {"app": "sleep 3600"})
    script = "echo bye; exec >%26- 2>%26-; sleep 1; exit 4"
    url = f"{base}/exec/default/shell/app?command=sh&command=-c&command={script}&output=1&error=1"
    out, status, _ = await ws_session(http, url, "v5.channel.k8s.io")
    assert out == {1: b"bye\n"}
    assert status is not None and status["details"]["causes"][0]["message"] == "4"
