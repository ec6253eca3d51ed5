"""`GET /metrics/cadvisor`: the kubelet's cAdvisor series for this node's containers, as text.

What lives here, pure: `cadvisor_metrics(stats_pass)`, the stats pass of stats.py rendered as the
series the kubelet's cAdvisor endpoint gives and kube-prometheus's rules and dashboards query
(github.com/google/cadvisor metrics/prometheus.go; labels as `containerPrometheusLabelsFunc` in
pkg/kubelet/server/server.go: `container`, `pod`, `namespace`, `image`, `name`, `id`, every
family with the same label set). One series per running app container: CPU seconds
(`cpu="total"`), memory usage, working set and RSS, start and creation time, and the spec's CPU
shares, period, quota and memory limit where the runtime reports them; the samples carry the
pass's millisecond timestamp as cAdvisor's do. `id` is the kubelet's pod cgroup shape
(`/kubepods/pod<uid>/<container id>`) and `name` the container id, as with a CRI runtime.
The runtime's stats carry no network or filesystem figures, so `container_network_*` and
`container_fs_*` are not served (docs/metrics.md). Must not: take samples (stats.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from vk_provider.kubeletapi.metrics import label_text, number_text
from vk_provider.kubeletapi.stats import ContainerSample, StatsPass

# name: (type, help) in cAdvisor's words, in the order served.
FAMILIES: dict[str, tuple[str, str]] = {
    "container_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed in seconds."),
    "container_memory_usage_bytes": (
        "gauge",
        "Current memory usage in bytes, including all memory regardless of when it was accessed",
    ),
    "container_memory_working_set_bytes": ("gauge", "Current working set in bytes."),
    "container_memory_rss": ("gauge", "Size of RSS in bytes."),
    "container_start_time_seconds": ("gauge", "Start time of the container since unix epoch in seconds."),
    "container_creation_time_seconds": ("gauge", "Container creation time since unix epoch in seconds."),
    "container_spec_cpu_period": ("gauge", "CPU period of the container."),
    "container_spec_cpu_quota": ("gauge", "CPU quota of the container."),
    "container_spec_cpu_shares": ("gauge", "CPU share of the container."),
    "container_spec_memory_limit_bytes": ("gauge", "Memory limit for the container."),
    "container_scrape_error": (
        "gauge",
        "1 if there was an error while getting container metrics, 0 otherwise",
    ),
}


def _series(sample: ContainerSample, stamp: int) -> Iterator[tuple[str, str, float, int | None]]:
    """(family, labels, value, timestamp in ms or None) of one container."""
    pod, c = sample.pod, sample.container
    base = {
        "container": c.name,
        "id": f"/kubepods/pod{pod.uid}/{c.container_id}",
        "image": c.image,
        "name": c.container_id,
        "namespace": pod.namespace,
        "pod": pod.name,
    }
    labels = label_text(**base)
    yield (
        "container_cpu_usage_seconds_total",
        label_text(**{**base, "cpu": "total"}),
        sample.cpu["usageCoreNanoSeconds"] / 1e9,
        stamp,
    )
    for family, key in (
        ("container_memory_usage_bytes", "usageBytes"),
        ("container_memory_working_set_bytes", "workingSetBytes"),
        ("container_memory_rss", "rssBytes"),
    ):
        if key in sample.memory:
            yield family, labels, sample.memory[key], stamp
    if c.created_at is not None:
        yield "container_creation_time_seconds", labels, int(c.created_at.timestamp()), None
    started = c.started_at or c.created_at
    if started is not None:
        yield "container_start_time_seconds", labels, int(started.timestamp()), None
    spec = c.resources
    if spec is not None:
        yield "container_spec_cpu_period", labels, spec.cpu_period, None
        if spec.cpu_quota:
            yield "container_spec_cpu_quota", labels, spec.cpu_quota, None
        yield "container_spec_cpu_shares", labels, spec.cpu_shares, None
        yield "container_spec_memory_limit_bytes", labels, spec.memory_limit, None


def cadvisor_metrics(taken: StatsPass) -> str:
    stamp = int(taken.at.timestamp() * 1000)
    samples: dict[str, list[str]] = {name: [] for name in FAMILIES}
    for sample in taken.samples:
        for family, labels, value, at in _series(sample, stamp):
            samples[family].append(f"{family}{labels} {number_text(value)}" + (f" {at}" if at else ""))
    samples["container_scrape_error"].append("container_scrape_error 0")
    lines: list[str] = []
    for name, (kind, text) in FAMILIES.items():
        if samples[name]:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *samples[name]]
    return "\n".join(lines) + "\n"
