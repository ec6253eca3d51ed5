"""The provider's own `/metrics`, scraped as a user or Prometheus reaches a kubelet's: through the
apiserver's node proxy (`kubectl get --raw /api/v1/nodes/<node>/proxy/metrics`), read with
prometheus-client's parser. `metrics.enabled: false` turns the endpoint off (404). On both
control planes; the kubelet API listens on the host's address, since the real apiserver's node
proxy refuses loopback ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric

from tests.support.kubectl import KUBECTL
from tests.support.manifests import sh
from tests.support.metrics import families, total
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.pod_status import phase
from tests.support.provider_harness import ProviderHarness
from vk_provider.app import Provider
from vk_provider.config import MetricsConfig
from vk_provider.node.agent import detect_node_ip

pytestmark = pytest.mark.docker


async def get_raw(harness: ProviderHarness, path: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        str(KUBECTL),
        "--kubeconfig",
        str(harness.kubeconfig),
        "get",
        "--raw",
        path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def metrics_path(harness: ProviderHarness) -> str:
    return f"/api/v1/nodes/{harness.node_name}/proxy/metrics"


async def scrape(harness: ProviderHarness) -> dict[str, Metric]:
    code, out, err = await get_raw(harness, metrics_path(harness))
    assert code == 0, err
    return families(out)


@contextlib.asynccontextmanager
async def provider(
    node_name: str, tmp_path: Path, plane: EmulatorPlane | RealPlane, *, enabled: bool = True
) -> AsyncIterator[ProviderHarness]:
    """The sandbox and a provider whose kubelet API is on the host's own address: the real
    apiserver's node proxy refuses a loopback one ("address not allowed")."""
    harness = ProviderHarness(node_name, tmp_path, plane=plane)
    await harness.start_sandbox()
    try:
        base = harness.config()
        ip = detect_node_ip()
        config = dataclasses.replace(
            base,
            node=dataclasses.replace(base.node, internal_ip=ip),
            kubelet_server=dataclasses.replace(base.kubelet_server, listen=f"{ip}:0"),
            metrics=MetricsConfig(enabled=enabled),
        )
        harness.provider = Provider(config)
        await harness.provider.start()
        yield harness
    finally:
        await harness.close()


async def test_metrics_through_the_node_proxy_show_the_pod_started_running_and_its_runtime_calls(
    node_name: str, tmp_path: Path, plane: EmulatorPlane | RealPlane, test_images: dict[str, str]
) -> None:
    async with provider(node_name, tmp_path, plane) as harness:
        await harness.create(harness.manifest("counted", [sh("main", "sleep 3600")]))
        await harness.wait_for("counted", lambda p: phase(p) == "Running")
        scraped = await scrape(harness)
    assert total(scraped["vk_provider_pod_start_duration_seconds"], "_count") >= 1
    assert 0 < total(scraped["vk_provider_pod_start_duration_seconds"], "_sum") < 300
    assert total(scraped["vk_provider_running_pods"]) >= 1
    assert total(scraped["vk_provider_running_containers"], container_state="running") >= 1
    # The sandbox and the app container were each created and started through the engine.
    assert total(scraped["vk_provider_runtime_operations"], "_total", operation_type="start") >= 2
    assert total(scraped["vk_provider_runtime_operations_duration_seconds"], "_count") >= 2
    assert "vk_provider_runtime_operations_errors" in scraped
    assert total(scraped["vk_provider_pod_worker_duration_seconds"], "_count", operation_type="sync") >= 1
    assert total(scraped["vk_provider_pod_status_sync_duration_seconds"], "_count") >= 1
    assert total(scraped["vk_provider_pod_status_patches"], "_total") >= 1
    requests = scraped["vk_provider_rest_client_requests"]
    assert total(requests, "_total", method="PATCH", code="200") >= 1  # the status patch among them
    assert total(requests, "_total", method="GET", code="200") >= 1
    assert "vk_provider_watch_restarts" in scraped


async def test_metrics_enabled_false_answers_404(
    node_name: str, tmp_path: Path, plane: EmulatorPlane | RealPlane
) -> None:
    async with provider(node_name, tmp_path, plane, enabled=False) as harness:
        code, _, err = await get_raw(harness, metrics_path(harness))
        assert code != 0 and "NotFound" in err, err
        code, out, err = await get_raw(harness, f"/api/v1/nodes/{node_name}/proxy/healthz")
        assert (code, out) == (0, "ok"), err  # the rest of the kubelet API still answers
