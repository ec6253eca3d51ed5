"""The provider's own `/metrics`, scraped as a user or Prometheus reaches a kubelet's: through the
apiserver's node proxy (`kubectl get --raw /api/v1/nodes/<node>/proxy/metrics`), read with
prometheus-client's parser. `metrics.enabled: false` turns the endpoint off (404).
"""

from __future__ import annotations

import asyncio
import dataclasses
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


async def test_metrics_through_the_node_proxy_show_the_pod_started_running_and_its_runtime_calls(
    harness: ProviderHarness,
) -> None:
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
    harness = ProviderHarness(node_name, tmp_path, plane=plane)
    await harness.start_sandbox()
    try:
        config = dataclasses.replace(harness.config(), metrics=MetricsConfig(enabled=False))
        harness.provider = Provider(config)
        await harness.provider.start()
        code, _, err = await get_raw(harness, metrics_path(harness))
        assert code != 0 and "NotFound" in err, err
        code, out, err = await get_raw(harness, f"/api/v1/nodes/{node_name}/proxy/healthz")
        assert (code, out) == (0, "ok"), err  # the rest of the kubelet API still answers
    finally:
        await harness.close()
