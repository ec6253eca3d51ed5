"""`GET /metrics/resource`: the resource metrics metrics-server scrapes, as Prometheus text.

What lives here, pure: `resource_metrics(summary)`, the Summary built by stats.py rendered as
the kubelet's `/metrics/resource` series (`pkg/kubelet/metrics/collectors/
resource_metrics.go`), the ones metrics-server >= 0.6 scrapes: node/pod/container CPU seconds
and working set, container start time, `scrape_error`; container series labelled `container`,
`pod`, `namespace`, every sample with its millisecond timestamp. (`/metrics`, the provider's own
series, is vk_provider/metrics.py.) Must not: collect or count anything.
"""

from __future__ import annotations

from typing import Any

from vk_common.objects import parse_time

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_HELP = {
    "container_cpu_usage_seconds_total": (
        "counter",
        "Cumulative cpu time consumed by the container in core-seconds",
    ),
    "container_memory_working_set_bytes": ("gauge", "Current working set of the container in bytes"),
    "container_start_time_seconds": ("gauge", "Start time of the container since unix epoch in seconds"),
    "node_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the node in core-seconds"),
    "node_memory_working_set_bytes": ("gauge", "Current working set of the node in bytes"),
    "pod_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the pod in core-seconds"),
    "pod_memory_working_set_bytes": ("gauge", "Current working set of the pod in bytes"),
    "scrape_error": ("gauge", "1 if there was an error while getting container metrics, 0 otherwise"),
}


def _ms(stamp: str) -> int:
    """A Summary timestamp (RFC 3339) in milliseconds since the epoch."""
    when = parse_time(stamp)
    if when is None:
        raise ValueError(f"not an RFC 3339 time: {stamp!r}")
    return int(when.timestamp() * 1000)


def label_text(**labels: str) -> str:
    """`{k="v",...}` with the text format's escapes ('' without labels)."""
    if not labels:
        return ""
    escaped = (
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels.items()
    )
    return "{" + ",".join(escaped) + "}"


def number_text(value: float) -> str:
    """A sample value as the text format writes it (integers without a fraction)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def resource_metrics(summary: dict[str, Any]) -> str:
    samples: dict[str, list[str]] = {name: [] for name in _HELP}

    def add(name: str, labels: str, value: float, stamp: str | None) -> None:
        samples[name].append(f"{name}{labels} {number_text(value)}" + (f" {_ms(stamp)}" if stamp else ""))

    def cpu_mem(prefix: str, labels: str, stats: dict[str, Any]) -> None:
        cpu, mem = stats.get("cpu") or {}, stats.get("memory") or {}
        if "usageCoreNanoSeconds" in cpu:
            add(
                f"{prefix}_cpu_usage_seconds_total",
                labels,
                cpu["usageCoreNanoSeconds"] / 1e9,
                cpu.get("time"),
            )
        if "workingSetBytes" in mem:
            add(f"{prefix}_memory_working_set_bytes", labels, mem["workingSetBytes"], mem.get("time"))

    cpu_mem("node", "", summary.get("node") or {})
    for pod in summary.get("pods") or []:
        ref = pod.get("podRef") or {}
        cpu_mem("pod", label_text(namespace=ref.get("namespace", ""), pod=ref.get("name", "")), pod)
        for c in pod.get("containers") or []:
            namespace, name = ref.get("namespace", ""), ref.get("name", "")
            labels = label_text(container=c["name"], namespace=namespace, pod=name)
            cpu_mem("container", labels, c)
            if c.get("startTime"):
                add(
                    "container_start_time_seconds",
                    labels,
                    _ms(c["startTime"]) / 1000,
                    (c.get("cpu") or {}).get("time"),
                )
    add("scrape_error", "", 0, None)
    lines: list[str] = []
    for name, (kind, text) in _HELP.items():
        if samples[name]:
            lines += [f"# HELP {name} [STABLE] {text}", f"# TYPE {name} {kind}", *samples[name]]
    return "\n".join(lines) + "\n"
