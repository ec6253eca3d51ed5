"""The provider's unauthenticated health endpoints (`kubeletServer.healthzListen`, the chart's probes).

`GET /healthz` answers 200 `ok` in plain HTTP without credentials once the provider has
started, serves nothing else, and stops answering when the provider stops; the default
configuration opens no such port. `GET /readyz` answers 500 naming the failed check while the
provider's engine does not answer (a socket proxy the test owns is cut, the shared engine keeps
running) and 200 again once it does, each within 30 s, while `/healthz` stays ok. The chart's
probes using them run for real in tests/e2e/test_helm_install.py (`helm install --wait` waits
for readiness).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.docker_socket_proxy import DockerSocketProxy
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from vk_common.ports import free_port
from vk_provider.app import Provider

pytestmark = pytest.mark.docker


async def _get(port: int, path: str) -> tuple[int, str] | str:
    """(status, body), or the connection error's name."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
            session.get(f"http://127.0.0.1:{port}{path}") as resp,
        ):
            return resp.status, await resp.text()
    except aiohttp.ClientConnectorError as exc:
        return type(exc).__name__


async def test_healthz_answers_ok_while_the_provider_runs_and_nothing_else(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    harness = ProviderHarness(node_name, tmp_path)
    await harness.start_sandbox()
    port = free_port()
    config = harness.config()
    server = dataclasses.replace(config.kubelet_server, healthz_listen=f"127.0.0.1:{port}")
    provider = Provider(dataclasses.replace(config, kubelet_server=server))
    try:
        assert await _get(port, "/healthz") == "ClientConnectorError"  # not started: the probe fails
        await provider.start()
        assert await _get(port, "/healthz") == (200, "ok")
        assert (await _get(port, "/pods"))[0] == 404  # the kubelet API stays behind its auth
        assert (await _get(port, "/containerLogs/default/p/c"))[0] == 404
        await provider.stop()
        await asyncio.sleep(0)
        assert await _get(port, "/healthz") == "ClientConnectorError"
    finally:
        await provider.stop()
        await harness.close()


async def test_no_health_port_by_default(tmp_path: Path, node_name: str, docker_client: Any) -> None:
    async with ProviderHarness.running(node_name, tmp_path) as harness:
        assert harness.provider is not None and harness.provider.healthz is None


async def test_readyz_follows_the_engine_while_healthz_stays_ok(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    proxy = DockerSocketProxy(tmp_path / "docker.sock")
    await proxy.start()
    harness = ProviderHarness(node_name, tmp_path)
    await harness.start_sandbox()
    port = free_port()
    config = harness.config()
    server = dataclasses.replace(config.kubelet_server, healthz_listen=f"127.0.0.1:{port}")
    docker = dataclasses.replace(config.docker, host=proxy.url)
    provider = Provider(dataclasses.replace(config, kubelet_server=server, docker=docker))
    try:
        await provider.start()
        assert await _get(port, "/readyz") == (200, "ok")
        assert await _get(port, "/readyz?verbose") == (
            200,
            "[+]engine ok\n[+]apiserver ok\n[+]node ok\nreadyz check passed\n",
        )
        await proxy.stop()  # the engine "goes away" for this provider only

        async def answer(status: int) -> tuple[int, str] | None:
            got = await _get(port, "/readyz")
            return got if isinstance(got, tuple) and got[0] == status else None

        down = await eventually(lambda: answer(500), within=30, interval=1, what="/readyz to fail")
        assert (
            down[1] == "[-]engine failed: reason withheld\n[+]apiserver ok\n[+]node ok\nreadyz check failed\n"
        )
        assert await _get(port, "/healthz") == (200, "ok")  # liveness: the loop is alive
        await proxy.start()
        await eventually(lambda: answer(200), within=30, interval=1, what="/readyz to pass again")
        assert await _get(port, "/healthz") == (200, "ok")
    finally:
        await provider.stop()
        await harness.close()
        await proxy.stop()
