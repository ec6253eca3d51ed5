"""The provider's own metrics, kubelet-style, served on the kubelet API's `/metrics`.

What lives here: `ProviderMetrics`, one prometheus-client `CollectorRegistry` per provider (not
the process-wide default: tests run several providers in one process) holding every
series: the kubelet's `kubelet_*` names (pkg/kubelet/metrics) and client-go's `rest_client_*`
where they have the series, `vk_provider_*` for the rest; `observe_running` (the running gauges
from the runtime's pods, set when scraped), `pod_start_seconds` (pure) and `render` (the text
exposition). The parts that count (runtime engine, kube client, reflector, pod workers, status
manager) hold the object and record into it. Must not: serve HTTP (kubeletapi/server.py), or
reach the apiserver or the engine itself.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

from vk_common.kube_version import KUBE_VERSION
from vk_common.objects import parse_time
from vk_provider import __version__

# The kubelet's names where a kubelet has the series (kube-prometheus' alerts and dashboards
# query them by name); `vk_provider_` only for series no kubelet has.
KUBELET = "kubelet"
PREFIX = "vk_provider"

# The kubelet's buckets: pod start (metrics.PodStartDuration), status sync
# (metrics.PodStatusSyncDuration), runtime operations (ExponentialBuckets(.005, 2.5, 14));
# prometheus-client adds +Inf.
POD_START_BUCKETS: tuple[float, ...] = (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240)
POD_START_BUCKETS += (300, 360, 480, 600, 900, 1200, 1800, 2700, 3600)
STATUS_SYNC_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 20, 30, 45, 60)
RUNTIME_BUCKETS = tuple(0.005 * 2.5**i for i in range(14))
IMAGE_PULL_BUCKETS = (1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600)
# metrics.imageSizeBuckets: (lower bound in bytes, label), the label of a size above the bound.
_GIB = 1024**3
IMAGE_SIZE_BUCKETS = (
    (100 * _GIB, "GT100GB"),
    (60 * _GIB, "60GB-100GB"),
    (40 * _GIB, "40GB-60GB"),
    (30 * _GIB, "30GB-40GB"),
    (20 * _GIB, "20GB-30GB"),
    (10 * _GIB, "10GB-20GB"),
    (5 * _GIB, "5GB-10GB"),
    (_GIB, "1GB-5GB"),
    (500 * 1024**2, "500MB-1GB"),
    (100 * 1024**2, "100MB-500MB"),
    (10 * 1024**2, "10MB-100MB"),
    (0, "0-10MB"),
)


def image_size_bucket(size: int) -> str:
    """The kubelet's `image_size_in_bytes` label of a pulled image (metrics.GetImageSizeBucket)."""
    if size <= 0:
        return "N/A"
    return next(label for bound, label in IMAGE_SIZE_BUCKETS if size > bound)


def pod_start_seconds(pod: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds from the pod's creationTimestamp to `now` (None without one)."""
    created = parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
    return None if created is None else max(0.0, (now - created).total_seconds())


class ProviderMetrics:
    """Every series of one provider, in its own registry."""

    def __init__(self) -> None:
        # No `*_created` series (the kubelet has none; they would read as extra gauge families in
        # the text format). A process-wide switch of prometheus-client, the same for every provider.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry = CollectorRegistry()
        self.running_pods = Gauge(
            f"{KUBELET}_running_pods", "Number of pods that have a running pod sandbox.", registry=registry
        )
        self.running_containers = Gauge(
            f"{KUBELET}_running_containers",
            "Number of the node's containers in the runtime, by state.",
            ["container_state"],
            registry=registry,
        )
        self.pod_start_duration = Histogram(
            f"{KUBELET}_pod_start_duration_seconds",
            "Duration in seconds from a pod's creation to the node first reporting it Running.",
            buckets=POD_START_BUCKETS,
            registry=registry,
        )
        self.pod_worker_duration = Histogram(
            f"{KUBELET}_pod_worker_duration_seconds",
            "Duration in seconds of one step of a pod worker (sync, terminate or cleanup).",
            ["operation_type"],
            registry=registry,
        )
        self.pod_status_sync_duration = Histogram(
            f"{KUBELET}_pod_status_sync_duration_seconds",
            "Duration in seconds from a pod status change to its write to the API.",
            buckets=STATUS_SYNC_BUCKETS,
            registry=registry,
        )
        self.runtime_operations = Counter(
            f"{KUBELET}_runtime_operations",
            "Cumulative number of runtime operations by operation type.",
            ["operation_type"],
            registry=registry,
        )
        self.runtime_operations_duration = Histogram(
            f"{KUBELET}_runtime_operations_duration_seconds",
            "Duration in seconds of runtime operations, by operation type.",
            ["operation_type"],
            buckets=RUNTIME_BUCKETS,
            registry=registry,
        )
        self.runtime_operations_errors = Counter(
            f"{KUBELET}_runtime_operations_errors",
            "Cumulative number of runtime operation errors by operation type.",
            ["operation_type"],
            registry=registry,
        )
        self.rest_client_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests to the apiserver, by method and status code (<error>: no answer).",
            ["method", "code"],
            registry=registry,
        )
        self.rest_client_request_duration = Histogram(  # client-go labels it `verb` (the HTTP method)
            "rest_client_request_duration_seconds",
            "Request latency in seconds to the apiserver (until the answer's headers), by verb.",
            ["verb"],
            registry=registry,
        )
        self.image_pull_duration = Histogram(
            f"{KUBELET}_image_pull_duration_seconds",
            "Duration in seconds to pull an image.",
            ["image_size_in_bytes"],
            buckets=IMAGE_PULL_BUCKETS,
            registry=registry,
        )
        self.image_pulls = Counter(
            f"{PREFIX}_image_pulls",
            "Image pulls the node made, by result (success, failure).",
            ["result"],
            registry=registry,
        )
        self.watch_restarts = Counter(
            f"{PREFIX}_watch_restarts",
            "Watches of the apiserver started over with a relist (expired) or after a failure (error).",
            ["reflector", "reason"],
            registry=registry,
        )
        self.pod_status_patches = Counter(
            f"{PREFIX}_pod_status_patches", "Pod status patches the node sent.", registry=registry
        )
        self.pod_deletions = Counter(
            f"{PREFIX}_pod_deletions", "Final pod deletions the node sent.", registry=registry
        )
        self.pod_status_conflicts = Counter(
            f"{PREFIX}_pod_status_conflicts",
            "Pod status writes answered 409 Conflict (retried from a fresh read).",
            registry=registry,
        )
        self.pod_status_errors = Counter(
            f"{PREFIX}_pod_status_errors",
            "Pod status writes that failed otherwise (retried on the next sync).",
            registry=registry,
        )

        # The process's own series, as every Go binary's process_* (prometheus-client's collectors
        # of this process: CPU, memory, open files, start time; Python's info and GC).
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            registry.register(collector)
        build = Gauge(  # as kubernetes_build_info: one series, always 1
            f"{PREFIX}_build_info",
            "A metric with a constant '1' value labeled by the provider's version, the Kubernetes "
            "version it serves and the Python that runs it.",
            ["version", "kubernetes_version", "python_version", "platform"],
            registry=registry,
        )
        build.labels(__version__, KUBE_VERSION, platform.python_version(), _platform()).set(1)
        # /metrics/probes: the kubelet's prober series (pkg/kubelet/prober/prober_manager.go), in a
        # registry of their own as the kubelet serves them on a path of their own.
        self.probes_registry = CollectorRegistry()
        self.probe_total = Counter(
            "prober_probe_total",
            "Cumulative number of a liveness, readiness or startup probe for a container by result.",
            ["probe_type", "result", "container", "pod", "namespace", "pod_uid"],
            registry=self.probes_registry,
        )
        self.probe_duration = Histogram(  # client_golang's default buckets, as prometheus-client's
            "prober_probe_duration_seconds",
            "Duration in seconds for a probe response.",
            ["probe_type", "container", "pod", "namespace"],
            registry=self.probes_registry,
        )

    def apiserver_answers(self) -> float:
        """How many requests an apiserver answered without a server error (readiness.py)."""
        return sum(
            sample.value
            for family in self.rest_client_requests.collect()
            for sample in family.samples
            if sample.name.endswith("_total") and not sample.labels["code"].startswith(("<", "5"))
        )

    def observe_running(self, running_pods: int, containers_by_state: Mapping[str, int]) -> None:
        """Set the running gauges: pods with a running sandbox, and containers by state (every
        state the runtime knows, zero included: `runtime.types.running_counts`)."""
        self.running_pods.set(running_pods)
        for state, count in containers_by_state.items():
            self.running_containers.labels(state).set(count)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def render_probes(self) -> bytes:
        return generate_latest(self.probes_registry)


def _platform() -> str:
    """`linux/amd64`, as the Go build info's `platform`."""
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    return f"{platform.system().lower()}/{arch}"
