"""One `docker stats` sample read as the runtime-neutral `ContainerStats`.

What lives here: `container_stats`, pure: CPU time from `cpu_stats.cpu_usage.total_usage`,
memory usage, the working set (usage minus inactive file pages: cgroup v2 reports
`inactive_file`, v1 `total_inactive_file`) and RSS (`rss`, or `anon` on cgroup v2) when
the engine reports it. Must not: do I/O or compute rates (the kubelet API's collector
keeps the previous sample).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.runtime.types import ContainerStats


def container_stats(raw: Mapping[str, Any]) -> ContainerStats:
    total = int(((raw.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage") or 0)
    mem = raw.get("memory_stats") or {}
    usage = int(mem.get("usage") or 0)
    detail = mem.get("stats") or {}
    inactive = int(detail.get("inactive_file", detail.get("total_inactive_file", 0)) or 0)
    rss = int(detail.get("rss", detail.get("anon", 0)) or 0) if "rss" in detail or "anon" in detail else None
    return ContainerStats(
        cpu_usage_core_nanoseconds=total,
        memory_usage_bytes=usage,
        memory_working_set_bytes=max(0, usage - inactive),
        memory_rss_bytes=rss,
    )
