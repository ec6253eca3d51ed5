"""A container status's `resources` and `allocatedResources` (pure).

What lives here: `status_resources`, the kubelet's convertContainerStatusResources
(pkg/kubelet/kubelet_pods.go): the allocated resources, with the cpu request, cpu limit and
memory limit the runtime reports it actually applies (cgroup shares, CFS quota, memory
limit; pkg/kubelet/cm/helpers_linux.go SharesToMilliCPU / QuotaToMilliCPU) when the
container runs (`apply_actual`, which the pod level's status uses too: status/pod_level.py).
A value equal to the allocated one keeps the allocated spelling ("500m", "64Mi").
Must not: do I/O or keep state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vk_common.objects import copy_json
from vk_common.quantity import parse_quantity
from vk_provider.runtime.types import ContainerInstance, ContainerRunState, LinuxResources

MIN_SHARES = 2  # pkg/kubelet/cm/helpers_linux.go
SHARES_PER_CPU = 1024
MIN_MILLI_CPU_LIMIT = 10
_BINARY_SUFFIXES = ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki")


def _milli(text: Any) -> int:
    return math.ceil(parse_quantity(str(text)) * 1000)


def shares_to_milli_cpu(shares: int) -> int:
    return math.ceil(shares * 1000 / SHARES_PER_CPU) if shares >= MIN_SHARES else 0


def quota_to_milli_cpu(quota: int, period: int) -> int:
    return quota * 1000 // period if quota > 0 and period > 0 else 0


def format_milli_cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(value: int) -> str:
    """A byte count as resource.Quantity's BinarySI canonical form (134217728 -> 128Mi)."""
    for power, suffix in zip(range(6, 0, -1), _BINARY_SUFFIXES, strict=True):
        if value and value % (1024**power) == 0:
            return f"{value // 1024**power}{suffix}"
    return str(value)


def _cpu(values: dict[str, Any], actual: int, minimum: int) -> None:
    allocated = _milli(values["cpu"]) if "cpu" in values else 0
    if (actual > minimum or allocated > minimum) and actual != allocated:
        values["cpu"] = format_milli_cpu(actual)


def status_resources(allocated: Mapping[str, Any], instance: ContainerInstance) -> dict[str, Any]:
    """The status `resources` of one container instance given its allocated resources."""
    resources: dict[str, Any] = copy_json(allocated)
    if instance.state == ContainerRunState.RUNNING and instance.resources is not None:
        apply_actual(resources, instance.resources)
    return resources


def apply_actual(resources: dict[str, Any], applied: LinuxResources) -> None:
    """Put in `resources`' requests and limits maps (those it has) the cpu request, cpu limit and
    memory limit the cgroup values `applied` amount to, where they differ from the allocated."""
    limits, requests = resources.get("limits"), resources.get("requests")
    if isinstance(limits, dict):
        if applied.cpu_quota > 0:
            _cpu(limits, quota_to_milli_cpu(applied.cpu_quota, applied.cpu_period), MIN_MILLI_CPU_LIMIT)
        if applied.memory_limit > 0:
            old = limits.get("memory")
            if old is None or math.ceil(parse_quantity(str(old))) != applied.memory_limit:
                limits["memory"] = format_bytes(applied.memory_limit)
    if isinstance(requests, dict):
        _cpu(requests, shares_to_milli_cpu(applied.cpu_shares), MIN_SHARES)
