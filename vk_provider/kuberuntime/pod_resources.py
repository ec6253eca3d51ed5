"""A pod's resources as a whole: its requests, its limits and its pod cgroup's values (pure).

What lives here: `pod_requests(pod, resources)` and `pod_limits(pod, resources)` (milli-CPU and
memory bytes, `resources` the containers' by name: as allocated), which add the containers up
as k8s.io/component-helpers/resource/helpers.go PodRequests / PodLimits do (the app containers
with the sidecars beside them, against the peak of the init phase; pod-level `spec.resources`
in their place where set; `spec.overhead` on top), and `pod_cgroup_resources(pod, resources)`,
the limits of the pod's cgroup as pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod sets
them by the pod's QoS class: CPU shares from the requests; a CFS quota and a memory limit
where every container declares one (Guaranteed: always); BestEffort the minimum shares alone;
`memory_request(container)`, one container's own memory request;
`pod_level_limits(pod)`, the pod-level limits the containers inherit (None when the pod has no
pod-level resources: resource/helpers.go IsPodLevelResourcesSet).
A quantity that does not parse counts 0 (its container fails on its own, naming the field).
Must not: call an engine or know where the pod cgroup lives (runtime/pod_cgroups.py does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from vk_common.objects import is_sidecar, spec
from vk_common.qos import pod_qos_class
from vk_common.quantity import quantity_or_zero
from vk_provider.kuberuntime.resources import MIN_SHARES, QUOTA_PERIOD, cpu_quota, cpu_shares
from vk_provider.runtime.types import LinuxResources

Pair = tuple[int, int]  # (milli-CPU, memory bytes)
Resources = Mapping[str, Mapping[str, Any]]  # container name -> its resources


def _amount(value: Any, scale: int) -> int:
    return math.ceil(quantity_or_zero(value) * scale)


def _pair(values: Mapping[str, Any]) -> Pair:
    return _amount(values.get("cpu"), 1000), _amount(values.get("memory"), 1)


def _requests_of(resources: Mapping[str, Any]) -> Pair:
    """A container's requests (a request defaults to its limit, as the apiserver defaults it)."""
    return _pair({**(resources.get("limits") or {}), **(resources.get("requests") or {})})


def memory_request(container: Mapping[str, Any]) -> int:
    """The container's own memory request in bytes (0: none), as its spec writes it."""
    return _amount(((container.get("resources") or {}).get("requests") or {}).get("memory"), 1)


def _limits_of(resources: Mapping[str, Any]) -> Pair:
    return _pair(resources.get("limits") or {})


def _aggregate(
    pod: Mapping[str, Any], resources: Resources, of: Callable[[Mapping[str, Any]], Pair]
) -> tuple[Pair, tuple[bool, bool]]:
    """The containers added up (AggregateContainerRequests / Limits), and per resource whether
    every container (an init container with the sidecars before it) declares a non-zero one."""
    s = spec(pod)
    declared = [True, True]

    def seen(pair: Pair) -> Pair:
        for i in (0, 1):
            declared[i] = declared[i] and pair[i] != 0
        return pair

    running = [0, 0]  # the app containers and the sidecars, which run beside them
    for c in s.get("containers") or []:
        own = seen(of(resources.get(str(c["name"])) or {}))
        running = [running[i] + own[i] for i in (0, 1)]
    sidecars, init_peak = [0, 0], [0, 0]
    for c in s.get("initContainers") or []:
        own = of(resources.get(str(c["name"])) or {})
        if is_sidecar(c):
            running = [running[i] + own[i] for i in (0, 1)]
            sidecars = [sidecars[i] + own[i] for i in (0, 1)]
            phase = seen((sidecars[0], sidecars[1]))
        else:
            phase = seen((own[0] + sidecars[0], own[1] + sidecars[1]))
        init_peak = [max(init_peak[i], phase[i]) for i in (0, 1)]
    return (max(running[0], init_peak[0]), max(running[1], init_peak[1])), (declared[0], declared[1])


def _pod_level(pod: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The pod-level cpu and memory of `spec.resources[key]` (requests default to limits)."""
    own = spec(pod).get("resources") or {}
    values = dict(own.get("limits") or {})
    if key == "requests":
        values.update(own.get("requests") or {})
    return {name: value for name, value in values.items() if name in ("cpu", "memory")}


def pod_level_limits(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """`spec.resources.limits` when the pod sets pod-level resources (a supported resource in
    its requests or limits: cpu, memory, hugepages), else None."""
    own = spec(pod).get("resources") or {}
    names = [*(own.get("requests") or {}), *(own.get("limits") or {})]
    if not any(n in ("cpu", "memory") or str(n).startswith("hugepages-") for n in names):
        return None
    return dict(own.get("limits") or {})


def _with_overhead(pod: Mapping[str, Any], pair: Pair, only_set: bool) -> Pair:
    overhead = _pair(spec(pod).get("overhead") or {})
    return (
        pair[0] + (overhead[0] if pair[0] or not only_set else 0),
        pair[1] + (overhead[1] if pair[1] or not only_set else 0),
    )


def pod_requests(pod: Mapping[str, Any], resources: Resources) -> Pair:
    """PodRequests: the containers' (pod-level requests in their place), plus the overhead."""
    total, _ = _aggregate(pod, resources, _requests_of)
    level = _pod_level(pod, "requests")
    total = (
        _amount(level["cpu"], 1000) if "cpu" in level else total[0],
        _amount(level["memory"], 1) if "memory" in level else total[1],
    )
    return _with_overhead(pod, total, only_set=False)


def pod_limits(pod: Mapping[str, Any], resources: Resources) -> tuple[Pair, tuple[bool, bool]]:
    """PodLimits, the overhead added to the limits that are set, and per resource whether the
    limit is declared (every container has one, or the pod level sets it)."""
    total, declared = _aggregate(pod, resources, _limits_of)
    level = _pod_level(pod, "limits")
    if "cpu" in level:
        total, declared = (_amount(level["cpu"], 1000), total[1]), (True, declared[1])
    if "memory" in level:
        total, declared = (total[0], _amount(level["memory"], 1)), (declared[0], True)
    return _with_overhead(pod, total, only_set=True), declared


def container_resources_of(pod: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The init and app containers' resources by name, as the spec has them."""
    s = spec(pod)
    return {
        str(c["name"]): dict(c.get("resources") or {})
        for c in [*(s.get("initContainers") or []), *(s.get("containers") or [])]
    }


def pod_cgroup_resources(pod: Mapping[str, Any], resources: Resources | None = None) -> LinuxResources:
    """ResourceConfigForPod: the pod cgroup's limits (0: not set), `resources` the allocated ones
    (None: the spec's)."""
    resources = container_resources_of(pod) if resources is None else resources
    qos = pod_qos_class(pod)
    if qos == "BestEffort":
        return LinuxResources(cpu_shares=MIN_SHARES)
    requested_cpu, _ = pod_requests(pod, resources)
    (cpu_limit, memory_limit), (cpu_declared, memory_declared) = pod_limits(pod, resources)
    guaranteed = qos == "Guaranteed"
    quota = cpu_quota(cpu_limit) if cpu_limit and (guaranteed or cpu_declared) else 0
    return LinuxResources(
        cpu_shares=cpu_shares(requested_cpu),
        cpu_quota=quota,
        cpu_period=QUOTA_PERIOD if quota else 0,
        memory_limit=memory_limit if guaranteed or memory_declared else 0,
    )
