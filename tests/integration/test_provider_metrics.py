"""The provider's own `/metrics`, `/metrics/probes` and `/metrics/cadvisor`, scraped as a user or
Prometheus reaches a kubelet's: through the apiserver's node proxy (`kubectl get --raw
/api/v1/nodes/<node>/proxy/metrics`), read with prometheus-client's parser.
`metrics.enabled: false` turns the endpoint off (404). On both
control planes; the kubelet API listens on the host's address, since the real apiserver's node
proxy refuses loopback ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric

from tests.support.images import BUSYBOX_IMAGE
from tests.support.kubectl import run_kubectl
from tests.support.manifests import sh
from tests.support.metrics import families, total
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.pod_status import phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness, node_proxied_provider
from vk_provider.config import MetricsConfig

pytestmark = pytest.mark.docker


async def get_raw(harness: ProviderHarness, path: str) -> tuple[int, str, str]:
    return await run_kubectl(harness.kubeconfig, "get", "--raw", path)


def metrics_path(harness: ProviderHarness) -> str:
    return f"/api/v1/nodes/{harness.node_name}/proxy/metrics"


async def scrape(harness: ProviderHarness) -> dict[str, Metric]:
    code, out, err = await get_raw(harness, metrics_path(harness))
    assert code == 0, err
    return families(out)


def provider(
    node_name: str, tmp_path: Path, plane: EmulatorPlane | RealPlane, *, enabled: bool = True
) -> contextlib.AbstractAsyncContextManager[ProviderHarness]:
    """A provider the node proxy reaches, its `/metrics` on or off."""
    return node_proxied_provider(
        node_name, tmp_path, plane, lambda c: dataclasses.replace(c, metrics=MetricsConfig(enabled=enabled))
    )


async def test_metrics_through_the_node_proxy_show_the_pod_started_running_and_its_runtime_calls(
    node_name: str, tmp_path: Path, plane: EmulatorPlane | RealPlane, test_images: dict[str, str]
) -> None:
    async with provider(node_name, tmp_path, plane) as harness:
        await harness.create(harness.manifest("counted", [sh("main", "sleep 3600")]))
        await harness.wait_for("counted", lambda p: phase(p) == "Running")
        scraped = await scrape(harness)
    assert total(scraped["kubelet_pod_start_duration_seconds"], "_count") >= 1
    assert 0 < total(scraped["kubelet_pod_start_duration_seconds"], "_sum") < 300
    assert total(scraped["kubelet_running_pods"]) >= 1
    assert total(scraped["kubelet_running_containers"], container_state="running") >= 1
    # The sandbox and the app container were each created and started through the engine.
    assert total(scraped["kubelet_runtime_operations"], "_total", operation_type="start") >= 2
    assert total(scraped["kubelet_runtime_operations_duration_seconds"], "_count") >= 2
    assert "kubelet_runtime_operations_errors" in scraped
    assert total(scraped["kubelet_pod_worker_duration_seconds"], "_count", operation_type="sync") >= 1
    assert total(scraped["kubelet_pod_status_sync_duration_seconds"], "_count") >= 1
    assert total(scraped["vk_provider_pod_status_patches"], "_total") >= 1
    requests = scraped["rest_client_requests"]
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


async def test_probe_and_cadvisor_metrics_through_the_node_proxy_as_kube_prometheus_scrapes(
    node_name: str, tmp_path: Path, plane: EmulatorPlane | RealPlane, test_images: dict[str, str]
) -> None:
    probe = {"exec": {"command": ["true"]}, "periodSeconds": 1}
    limits = {"resources": {"limits": {"cpu": "500m", "memory": "64Mi"}}}
    async with provider(node_name, tmp_path, plane) as harness:
        created = await harness.create(
            harness.manifest("watched", [sh("main", "sleep 3600", readinessProbe=probe, **limits)])
        )
        uid = created["metadata"]["uid"]
        await harness.wait_for("watched", lambda p: phase(p) == "Running")
        node = f"/api/v1/nodes/{harness.node_name}/proxy"

        async def probed() -> dict[str, Metric] | None:
            code, out, err = await get_raw(harness, f"{node}/metrics/probes")
            assert code == 0, err
            found = families(out)
            family = found.get("prober_probe")
            wanted = {"probe_type": "Readiness", "result": "successful", "container": "main"}
            return found if family is not None and total(family, "_total", **wanted) >= 2 else None

        scraped = await eventually(probed, within=60, interval=1, what="two successful readiness probes")
        results = [s for s in scraped["prober_probe"].samples if s.labels.get("pod") == "watched"]
        assert {s.labels["pod_uid"] for s in results} == {uid}
        assert {s.labels["namespace"] for s in results} == {"default"}
        assert total(scraped["prober_probe_duration_seconds"], "_count", container="main") >= 2
        code, out, err = await get_raw(harness, f"{node}/metrics/cadvisor")
        assert code == 0, err
        cadvisor = families(out)
        own = {"container": "main", "pod": "watched", "namespace": "default"}
        cpu = [s for s in cadvisor["container_cpu_usage_seconds"].samples if own.items() <= s.labels.items()]
        assert len(cpu) == 1 and cpu[0].labels["cpu"] == "total" and cpu[0].value > 0
        assert cpu[0].labels["image"] == BUSYBOX_IMAGE and cpu[0].labels["id"] and cpu[0].labels["name"]
        assert total(cadvisor["container_memory_working_set_bytes"], **own) > 0
        assert total(cadvisor["container_spec_memory_limit_bytes"], **own) == 64 * 2**20
        assert total(cadvisor["container_spec_cpu_quota"], **own) == 50_000
        assert total(cadvisor["container_start_time_seconds"], **own) > 0
        own_metrics = await scrape(harness)
    assert "process_cpu_seconds" in own_metrics and "process_resident_memory_bytes" in own_metrics
    assert total(own_metrics["vk_provider_build_info"]) == 1
    durations = own_metrics["rest_client_request_duration_seconds"]
    assert total(durations, "_count", verb="GET") >= 1
