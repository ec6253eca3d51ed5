"""The provider's unauthenticated health endpoint (`kubeletServer.healthzListen`, the chart's probes).

`GET /healthz` answers 200 `ok` in plain HTTP without credentials once the provider has
started, serves nothing else, and stops answering when the provider stops; the default
configuration opens no such port. The chart's probes using it run for real in
tests/e2e/test_helm_install.py (`helm install --wait` waits for readiness).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.ports import free_port
from tests.support.provider_harness import ProviderHarness
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
