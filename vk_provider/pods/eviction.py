"""The eviction manager's local-storage check: a disk emptyDir used past its sizeLimit evicts its pod.

What lives here: the pure rules, `disk_size_limits(pod)` (the disk emptyDirs with a positive
sizeLimit; a Memory one is a tmpfs of that size, which the kernel bounds) and
`empty_dir_limit_message(pod, used)` (the kubelet's eviction message for the first emptyDir,
in spec order, used past its limit, or None), `is_critical(pod)` (never evicted); then
`EmptyDirEviction`, the loop that every `interval` seconds, only while some pod has such a
limit, asks the runtime for the node's volume usage once (`Runtime.volume_usage`, one engine
query for the whole node) and hands each pod over its limit with the message to `evict`
(the pod workers' `PodWorkers.evict`: Event Evicted, containers killed, phase Failed with
reason Evicted).
Must not: kill containers or write statuses itself (the pod workers do), or query the engine
more than once per period.

Upstream: pkg/kubelet/eviction/eviction_manager.go (localStorageEviction,
emptyDirLimitEviction, evictPod), pkg/kubelet/eviction/helpers.go (Reason,
emptyDirMessageFmt), pkg/kubelet/types/pod_update.go (IsCriticalPod).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import is_mirror, is_static
from vk_common.objects import uid as uid_of
from vk_common.quantity import parse_quantity
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import RuntimeFailure

log = get_logger("pods.eviction")

EVICTED = "Evicted"  # helpers.go Reason
EVICTION_GRACE_SECONDS = 1  # eviction_manager.go immediateEvictionGracePeriodSeconds
MONITORING_SECONDS = 10.0  # the kubelet's evictionMonitoringPeriod
SYSTEM_CRITICAL_PRIORITY = 2 * 10**9  # scheduling.SystemCriticalPriority


def disk_size_limits(pod: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    """Volume name -> (limit in bytes, the limit as written) of each disk emptyDir with a sizeLimit > 0."""
    out: dict[str, tuple[int, str]] = {}
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        if "emptyDir" not in vol:
            continue
        ed = vol.get("emptyDir") or {}
        limit = ed.get("sizeLimit")
        if ed.get("medium") == "Memory" or limit in (None, ""):
            continue
        try:
            size = math.ceil(parse_quantity(str(limit)))
        except ValueError:
            continue  # the API validates quantities; an invalid one limits nothing
        if size > 0:
            out[str(vol["name"])] = (size, str(limit))
    return out


def empty_dir_limit_message(pod: Mapping[str, Any], used: Mapping[str, int]) -> str | None:
    """emptyDirLimitEviction: the message for the first emptyDir whose `used` bytes exceed its limit."""
    for name, (size, written) in disk_size_limits(pod).items():
        if used.get(name, 0) > size:
            return f"Usage of EmptyDir volume {json.dumps(name)} exceeds the limit {json.dumps(written)}. "
    return None


def is_critical(pod: Mapping[str, Any]) -> bool:
    """IsCriticalPod: static and mirror pods, and a priority of system-critical or more."""
    priority = (pod.get("spec") or {}).get("priority")
    return (
        is_static(pod)
        or is_mirror(pod)
        or (priority is not None and int(priority) >= SYSTEM_CRITICAL_PRIORITY)
    )


class EmptyDirEviction:
    """Evicts pods whose disk emptyDirs outgrow their sizeLimit, checked every `interval` seconds."""

    def __init__(
        self,
        runtime: Runtime,
        pods: Callable[[], Iterable[Mapping[str, Any]]],
        evict: Callable[[str, str], None],
        interval: float = MONITORING_SECONDS,
    ) -> None:
        """`pods()` gives the pods still running (syncing, not being killed); `evict(uid, message)`."""
        self._runtime = runtime
        self._pods = pods
        self._evict = evict
        self._interval = interval

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.check()
            except RuntimeFailure as exc:
                log.warning("cannot measure the emptyDir volumes", extra={"err": exc.message})
            except Exception:
                log.exception("the emptyDir sizeLimit check failed")  # the next period tries again

    async def check(self) -> None:
        """One pass: no engine query unless some pod has a disk sizeLimit."""
        limited = [p for p in self._pods() if disk_size_limits(p) and not is_critical(p)]
        if not limited:
            return
        usage = await self._runtime.volume_usage()
        for pod in limited:
            uid = uid_of(pod)
            used = {name: size for (owner, name), size in usage.items() if owner == uid}
            message = empty_dir_limit_message(pod, used)
            if message is not None:
                log.info("evicting the pod", extra=pod_fields(pod, reason="Evicted", detail=message))
                self._evict(uid, message)
