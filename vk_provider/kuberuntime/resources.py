"""A container's resources → the cgroup limits it runs with, by the kubelet's formulas (pure).

What lives here: `linux_resources(container, field, pod_limits)`: requests.cpu as CPU shares (the
minimum without one, as the kubelet gives), limits.cpu as a CFS quota over the 100 ms period,
limits.memory as the memory limit (the runtime adds no swap), a limit the container does not set
taken from the pod-level `spec.resources.limits` when the pod has pod-level resources
(`pod_limits`; getCPULimit / getMemoryLimit); what a container is created with, what an in-place
resize compares and applies. A quantity that does not parse is a `ContainerConfigError` naming
the field.
Must not: call an engine.

Upstream: pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares, MilliCPUToQuota),
pkg/kubelet/kuberuntime/kuberuntime_container_linux.go (generateLinuxContainerResources).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vk_common.quantity import parse_quantity
from vk_provider.runtime.types import ContainerConfigError, LinuxResources

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
QUOTA_PERIOD = 100000
MIN_QUOTA_PERIOD = 1000


def _milli_cpu(quantity: str) -> int:
    return math.ceil(parse_quantity(str(quantity)) * 1000)


def cpu_shares(milli_cpu: int) -> int:
    if milli_cpu == 0:
        return MIN_SHARES
    return max(MIN_SHARES, min(MAX_SHARES, milli_cpu * SHARES_PER_CPU // 1000))


def cpu_quota(milli_cpu: int, period: int = QUOTA_PERIOD) -> int:
    return max(MIN_QUOTA_PERIOD, milli_cpu * period // 1000)


def linux_resources(
    container: Mapping[str, Any], field: str, pod_limits: Mapping[str, Any] | None = None
) -> LinuxResources:
    """limits.memory → memory limit, limits.cpu → quota and period, requests.cpu → shares;
    `pod_limits`: the pod-level limits (None: the pod has no pod-level resources), for the
    limits the container leaves out (a zero one counts as left out, as Quantity.IsZero)."""
    resources = container.get("resources") or {}
    limits = dict(resources.get("limits") or {})
    requests = resources.get("requests") or {}
    try:
        for name, value in (pod_limits or {}).items():
            if name in ("cpu", "memory") and not parse_quantity(str(limits.get(name) or 0)):
                limits[name] = value
    except ValueError as exc:
        raise ContainerConfigError(f"{field}.resources: {exc}") from exc
    try:
        memory = math.ceil(parse_quantity(str(limits["memory"]))) if limits.get("memory") is not None else 0
        milli_limit = _milli_cpu(limits["cpu"]) if limits.get("cpu") is not None else None
        # The API defaults requests to limits; with neither the kubelet gives the minimum.
        request = requests.get("cpu", limits.get("cpu"))
        shares = cpu_shares(_milli_cpu(request) if request is not None else 0)
    except ValueError as exc:
        raise ContainerConfigError(f"{field}.resources: {exc}") from exc
    return LinuxResources(
        cpu_shares=shares,
        cpu_quota=0 if milli_limit is None else cpu_quota(milli_limit),
        cpu_period=0 if milli_limit is None else QUOTA_PERIOD,
        memory_limit=memory,
    )
