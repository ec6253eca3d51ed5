"""vk_provider.metrics and `/metrics` on the kubelet API: the provider's own series, one registry per
provider, read back with prometheus-client's parser as a scraper reads them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from tests.support.metrics import families, sample, total
from vk_common.kube_version import KUBE_VERSION
from vk_provider import __version__
from vk_provider.config import DockerConfig, KubeletServerConfig
from vk_provider.kubeletapi import KubeletServer
from vk_provider.metrics import ProviderMetrics, image_size_bucket, pod_start_seconds
from vk_provider.runtime.docker.engine import Engine
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
    running_counts,
)

FAMILIES = {
    "kubelet_running_pods": "gauge",
    "kubelet_running_containers": "gauge",
    "kubelet_pod_start_duration_seconds": "histogram",
    "kubelet_pod_worker_duration_seconds": "histogram",
    "kubelet_pod_status_sync_duration_seconds": "histogram",
    "kubelet_runtime_operations": "counter",
    "kubelet_runtime_operations_duration_seconds": "histogram",
    "kubelet_runtime_operations_errors": "counter",
    "rest_client_requests": "counter",
    "rest_client_request_duration_seconds": "histogram",
    "vk_provider_watch_restarts": "counter",
    "vk_provider_pod_status_patches": "counter",
    "vk_provider_pod_deletions": "counter",
    "vk_provider_pod_status_conflicts": "counter",
    "vk_provider_pod_status_errors": "counter",
    "vk_provider_build_info": "gauge",
    "kubelet_image_pull_duration_seconds": "histogram",
    "vk_provider_image_pulls": "counter",
}


def container(name: str, state: ContainerRunState, attempt: int = 0) -> ContainerInstance:
    return ContainerInstance(name, ContainerRole.APP, attempt, f"id-{name}-{attempt}", "img", "", state)


OWN_PREFIXES = ("vk_provider_", "kubelet_", "rest_client_")


def test_every_series_is_rendered_with_its_kubelet_style_name_and_type() -> None:
    found = families(ProviderMetrics().render().decode())
    own = {name: family.type for name, family in found.items() if name.startswith(OWN_PREFIXES)}
    assert own == FAMILIES
    # The counters served before prometheus-client keep their names.
    text = ProviderMetrics().render().decode()
    for name in ("pod_status_patches", "pod_deletions", "pod_status_conflicts", "pod_status_errors"):
        assert f"\nvk_provider_{name}_total 0.0\n" in text


def test_each_provider_has_its_own_registry() -> None:
    first, second = ProviderMetrics(), ProviderMetrics()
    first.pod_deletions.inc()
    assert sample(first, "vk_provider_pod_deletions_total") == 1
    assert sample(second, "vk_provider_pod_deletions_total") == 0


def test_the_running_gauges_count_running_sandboxes_and_containers_by_state() -> None:
    metrics = ProviderMetrics()
    running = PodSandboxState("s1", running=True)
    pods = [
        PodRuntimeState(
            "u1",
            "d",
            "a",
            running,
            (container("app", ContainerRunState.EXITED), container("app", ContainerRunState.RUNNING, 1)),
        ),
        PodRuntimeState("u2", "d", "b", PodSandboxState("s2", running=False)),
        PodRuntimeState("u3", "d", "c", None, (container("x", ContainerRunState.CREATED),)),
    ]
    metrics.observe_running(*running_counts(pods))
    scraped = families(metrics.render().decode())
    assert total(scraped["kubelet_running_pods"]) == 1
    containers = scraped["kubelet_running_containers"]
    by_state = {s.labels["container_state"]: s.value for s in containers.samples}
    assert by_state == {"created": 1, "running": 1, "exited": 1, "unknown": 0}
    metrics.observe_running(*running_counts([]))  # scraped again after the pods are gone: back to zero
    assert sample(metrics, "kubelet_running_pods") == 0
    assert sample(metrics, "kubelet_running_containers", container_state="running") == 0


def test_pod_start_seconds_from_the_creation_timestamp() -> None:
    now = datetime(2026, 12, 3, 10, 0, 30, tzinfo=UTC)
    pod = {"metadata": {"creationTimestamp": "2026-12-03T10:00:00Z"}}
    assert pod_start_seconds(pod, now) == 30
    assert pod_start_seconds({"metadata": {}}, now) is None


async def test_engine_calls_are_counted_timed_and_their_errors_counted_by_operation() -> None:
    """Engine.call is the one way to the runtime's pool: every call is an operation, named after
    the called function (no engine is needed to run a plain function in the pool)."""
    engine = Engine(DockerConfig())

    def inspect_container(name: str) -> str:
        return name

    def _remove_volume() -> None:
        raise OSError("gone")

    try:
        assert await engine.call(inspect_container, "c") == "c"
        with pytest.raises(OSError):
            await engine.call(_remove_volume)
    finally:
        await engine.close()
    m = engine.metrics
    assert sample(m, "kubelet_runtime_operations_total", operation_type="inspect_container") == 1
    assert sample(m, "kubelet_runtime_operations_errors_total", operation_type="inspect_container") == 0
    assert sample(m, "kubelet_runtime_operations_total", operation_type="remove_volume") == 1
    assert sample(m, "kubelet_runtime_operations_errors_total", operation_type="remove_volume") == 1
    count = "kubelet_runtime_operations_duration_seconds_count"
    assert sample(m, count, operation_type="inspect_container") == 1


class NoPods:
    """The runtime seam of /metrics: the running gauges are read from `list_pods` when scraped."""

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        return {"u1": PodRuntimeState("u1", "d", "a", PodSandboxState("s", running=True))}


@pytest.mark.parametrize("enabled", [True, False])
async def test_metrics_is_served_when_enabled_and_404_when_not(tmp_path: Path, enabled: bool) -> None:
    metrics = ProviderMetrics()
    metrics.pod_status_patches.inc(7)
    config = KubeletServerConfig(listen="127.0.0.1:0", auth="none")
    server = KubeletServer(
        config,
        "node-a",
        NoPods(),  # type: ignore[arg-type]  # /metrics needs only list_pods
        "127.0.0.1",
        metrics=metrics if enabled else None,
    )
    await server.start()
    try:
        url = f"https://127.0.0.1:{server.port}/metrics"
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http,
            http.get(url) as resp,
        ):
            status, content_type, text = resp.status, resp.headers["Content-Type"], await resp.text()
    finally:
        await server.stop()
    if not enabled:
        assert status == 404
        return
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    scraped = families(text)
    assert total(scraped["vk_provider_pod_status_patches"], "_total") == 7
    assert total(scraped["kubelet_running_pods"]) == 1


def test_the_process_and_python_series_and_the_build_info_are_served() -> None:
    found = families(ProviderMetrics().render().decode())
    for name in ("process_cpu_seconds", "process_resident_memory_bytes", "process_start_time_seconds"):
        assert name in found, name
    assert "python_info" in found and "python_gc_collections" in found
    [build] = found["vk_provider_build_info"].samples
    assert build.value == 1
    assert build.labels["version"] == __version__ and build.labels["kubernetes_version"] == KUBE_VERSION
    assert build.labels["platform"].startswith("linux/")


def test_request_durations_are_labelled_verb_as_client_go() -> None:
    metrics = ProviderMetrics()
    metrics.rest_client_request_duration.labels("PATCH").observe(0.1)
    assert sample(metrics, "rest_client_request_duration_seconds_count", verb="PATCH") == 1


def test_apiserver_answers_count_answered_requests_without_server_errors() -> None:
    metrics = ProviderMetrics()
    assert metrics.apiserver_answers() == 0
    for code in ("200", "404", "<error>", "503", "200"):
        metrics.rest_client_requests.labels("GET", code).inc()
    assert metrics.apiserver_answers() == 3


def test_image_size_buckets_are_the_kubelets() -> None:
    assert image_size_bucket(0) == "N/A"
    assert image_size_bucket(1) == "0-10MB"
    assert image_size_bucket(10 * 1024**2) == "0-10MB"  # above a bound, not at it
    assert image_size_bucket(10 * 1024**2 + 1) == "10MB-100MB"
    assert image_size_bucket(3 * 1024**3) == "1GB-5GB"
    assert image_size_bucket(200 * 1024**3) == "GT100GB"
