"""A pod status's pod-level `resources` and `allocatedResources` (pure).

What lives here: `pod_level_status`, what the kubelet writes with
InPlacePodLevelResourcesVerticalScaling (beta, on, in v1.37) for every pod, pod-level resources or
not (pkg/kubelet/kubelet_pods.go generateAPIPodStatus): `allocatedResources` the allocated pod's
requests (resource/helpers.go PodRequests: the pod-level requests where set, the containers'
added up otherwise, cpu and memory), and `resources` (convertToAPIPodLevelResourcesStatus): for a
pod not Running, or whose pod cgroup's limits are not known, the allocated pod-level resources
with PodRequests / PodLimits as requests and limits (getEffectiveAllocatedResources); for a
Running one, the allocated pod-level resources with the cpu request, cpu limit and memory limit
the pod cgroup was last set to (`status/resources.apply_actual`, with the kubelet's minimum
floors), where they differ from the allocated. The kubelet reads the cgroup back; we take the
limits we last wrote to it (the same values), and an unlimited memory limit shows none (a cgroup
v1 kubelet shows the kernel's "unlimited" number).
Must not: do I/O or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_common.objects import copy_json, spec
from vk_provider.kuberuntime.pod_resources import Resources, pod_limits, pod_requests
from vk_provider.runtime.types import LinuxResources
from vk_provider.status.resources import apply_actual, format_bytes, format_milli_cpu

_NAMES = ("cpu", "memory")


def _listed(
    pod: Mapping[str, Any],
    resources: Resources,
    key: str,
    amounts: tuple[int, int],
    declared: tuple[bool, bool],
) -> dict[str, str]:
    """cpu and memory as a ResourceList: the pod level's own quantity where it sets one (and no
    overhead is added), else the amount, for the names `declared`."""
    level = (spec(pod).get("resources") or {}).get(key) or {}
    overhead = spec(pod).get("overhead") or {}
    out: dict[str, str] = {}
    for i, name in enumerate(_NAMES):
        if name in level and name not in overhead:
            out[name] = str(level[name])
        elif declared[i] or name in level:
            out[name] = format_milli_cpu(amounts[i]) if name == "cpu" else format_bytes(amounts[i])
    return out


def _declared(pod: Mapping[str, Any], resources: Resources, key: str) -> tuple[bool, bool]:
    """Per name whether a container's `key` (requests or limits) has it (AggregateContainer
    Requests / Limits list only those) or the overhead adds it."""
    names = {n for r in resources.values() for n in (r.get(key) or {})}
    names |= set(spec(pod).get("overhead") or {})
    return "cpu" in names, "memory" in names


def pod_requests_list(pod: Mapping[str, Any], resources: Resources) -> dict[str, str]:
    """PodRequests as a ResourceList (cpu and memory): `status.allocatedResources`."""
    declared = _declared(pod, resources, "requests")
    return _listed(pod, resources, "requests", pod_requests(pod, resources), declared)


def pod_level_status(
    pod: Mapping[str, Any], resources: Resources, cgroup: LinuxResources | None, running: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """(`status.resources`, `status.allocatedResources`) of `pod` (its pod-level resources the
    allocated ones), `resources` the containers' allocation, `cgroup` the pod cgroup's limits as
    last set (None: not known)."""
    requests = pod_requests_list(pod, resources)
    status: dict[str, Any] = copy_json(spec(pod).get("resources") or {})
    if not running or cgroup is None:
        amounts, _ = pod_limits(pod, resources)
        status["requests"] = dict(requests)
        status["limits"] = _listed(pod, resources, "limits", amounts, _declared(pod, resources, "limits"))
    else:
        status["requests"] = dict(status.get("requests") or {})
        status["limits"] = dict(status.get("limits") or {})
        apply_actual(status, cgroup)
        if "memory" not in status["requests"] and "memory" in requests:
            status["requests"]["memory"] = requests["memory"]
    return {k: v for k, v in status.items() if v or k not in ("requests", "limits")}, requests
