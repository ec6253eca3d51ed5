"""`GET /stats/summary`: CPU and memory of this node's pods, in the kubelet's Summary shape.

What lives here: `StatsCollector`, whose stats pass (`sample()`, cached for STATS_INTERVAL and
shared by concurrent callers: /stats/summary, /metrics/resource and /metrics/cadvisor all read
it) takes one sample of each running app container from the runtime
(`Runtime.container_stats`) and derives `usageNanoCores` from the previous sample of the same
container; `summary()` builds `statsv1alpha1.Summary` from it (`kubelet/pkg/apis/stats/
v1alpha1/types.go`): node (the sum of its pods, since the node is virtual), pods with podRef,
containers. Pure helpers `cpu_memory` and `summary_document` do the arithmetic.
Must not: know about HTTP.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vk_common.objects import format_time
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    ContainerStats,
    PodRuntimeState,
)

# How long a stats pass is served again: /stats/summary, /metrics/resource and /metrics/cadvisor
# scraped together (metrics-server, Prometheus) cost the engine one pass. The kubelet's cAdvisor
# samples every 10 s (housekeeping) and serves its latest sample in between.
STATS_INTERVAL = 5.0


def cpu_memory(
    sample: ContainerStats, previous: tuple[float, int] | None, now: float
) -> tuple[dict[str, int], dict[str, int]]:
    """(cpu, memory) stats of one sample; previous is (time, usageCoreNanoSeconds)."""
    total = sample.cpu_usage_core_nanoseconds
    cpu: dict[str, int] = {"usageCoreNanoSeconds": total}
    if previous is not None and now > previous[0] and total >= previous[1]:
        cpu["usageNanoCores"] = int((total - previous[1]) / (now - previous[0]))
    memory = {"usageBytes": sample.memory_usage_bytes, "workingSetBytes": sample.memory_working_set_bytes}
    if sample.memory_rss_bytes is not None:
        memory["rssBytes"] = sample.memory_rss_bytes
    return cpu, memory


def _sum(parts: list[dict[str, int]], keys: tuple[str, ...]) -> dict[str, int]:
    return {k: sum(p[k] for p in parts if k in p) for k in keys if any(k in p for p in parts)}


def summary_document(
    node_name: str, node_start: datetime, now: datetime, pods: list[dict[str, Any]]
) -> dict[str, Any]:
    """The Summary: pods as given (each with `containers`), node = sum of pods' cpu/memory."""
    stamp = format_time(now)
    cpu_keys, mem_keys = (
        ("usageNanoCores", "usageCoreNanoSeconds"),
        ("usageBytes", "workingSetBytes", "rssBytes"),
    )
    for pod in pods:
        pod["cpu"] = {"time": stamp, **_sum([c["cpu"] for c in pod["containers"]], cpu_keys)}
        pod["memory"] = {"time": stamp, **_sum([c["memory"] for c in pod["containers"]], mem_keys)}
    node = {
        "nodeName": node_name,
        "startTime": format_time(node_start),
        "cpu": {"time": stamp, **_sum([p["cpu"] for p in pods], cpu_keys)},
        "memory": {"time": stamp, **_sum([p["memory"] for p in pods], mem_keys)},
    }
    return {"node": node, "pods": pods}


@dataclass(frozen=True)
class ContainerSample:
    """One running app container's sample in a stats pass, with its pod and derived figures."""

    pod: PodRuntimeState
    container: ContainerInstance
    cpu: dict[str, int]
    memory: dict[str, int]


@dataclass(frozen=True)
class StatsPass:
    """One pass over the node's running app containers, at `at`."""

    at: datetime
    samples: tuple[ContainerSample, ...]


class StatsCollector:
    """The node's stats passes; a pass younger than `interval` seconds is served again, and
    concurrent callers share one pass, so scrapers cost the engine one pass per interval at
    most (`passes` counts them)."""

    def __init__(
        self,
        runtime: Runtime,
        node_name: str,
        *,
        interval: float = STATS_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.runtime = runtime
        self.node_name = node_name
        self.started = datetime.now(UTC)
        self.passes = 0
        self._interval = interval
        self._clock = clock
        self._lock = asyncio.Lock()
        self._last: tuple[float, StatsPass] | None = None
        self._previous: dict[str, tuple[float, int]] = {}

    async def sample(self) -> StatsPass:
        async with self._lock:
            if self._last is not None and self._clock() - self._last[0] < self._interval:
                return self._last[1]
            taken = await self._take()
            self._last = (self._clock(), taken)
            return taken

    async def _take(self) -> StatsPass:
        self.passes += 1
        states = await self.runtime.list_pods()
        running = [
            (state, c)
            for state in states.values()
            for c in state.containers
            if c.role == ContainerRole.APP and c.state == ContainerRunState.RUNNING
        ]
        raws = await self.runtime.container_stats([c.container_id for _, c in running])
        now = datetime.now(UTC)
        samples: list[ContainerSample] = []
        seen: dict[str, tuple[float, int]] = {}
        for (state, c), raw in zip(running, raws, strict=True):
            if raw is None:
                continue
            cpu, memory = cpu_memory(raw, self._previous.get(c.container_id), now.timestamp())
            seen[c.container_id] = (now.timestamp(), cpu["usageCoreNanoSeconds"])
            samples.append(ContainerSample(state, c, cpu, memory))
        self._previous = seen
        return StatsPass(now, tuple(samples))

    async def summary(self) -> dict[str, Any]:
        taken = await self.sample()
        stamp = format_time(taken.at)
        pods: dict[str, dict[str, Any]] = {}
        for sample in taken.samples:
            state, c = sample.pod, sample.container
            pod = pods.setdefault(
                state.uid,
                {
                    "podRef": {"name": state.name, "namespace": state.namespace, "uid": state.uid},
                    "startTime": format_time(state.sandbox.created_at)
                    if state.sandbox is not None and state.sandbox.created_at is not None
                    else stamp,
                    "containers": [],
                },
            )
            started = c.started_at or c.created_at
            pod["containers"].append(
                {
                    "name": c.name,
                    "startTime": format_time(started) if started is not None else stamp,
                    "cpu": {"time": stamp, **sample.cpu},
                    "memory": {"time": stamp, **sample.memory},
                }
            )
        return summary_document(self.node_name, self.started, taken.at, list(pods.values()))
