"""A container's oom_score_adj, as the kubelet gives it by its pod's QoS class (pure).

What lives here: `node_memory_capacity(node)` and `oom_score_adjust(pod, container,
memory_capacity)`, pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust with qos/helpers.go:
-997 for a Guaranteed pod (or a system-node-critical one), 1000 for a BestEffort one; a
Burstable container's from its memory request against the node's memory capacity (with the pod-
level memory request's share the containers leave over, and a sidecar never above the pod's
smallest app container), between 3 and 999. None when the capacity is not known, and for the
kubelet's negative values (Guaranteed): lowering a process's oom_score_adj needs
CAP_SYS_RESOURCE, which an engine in a container (this project's CI host) lacks, and the
container's creation would fail; the engine's default (0) stays, a deviation in
docs/runtime.md.
Must not: call an engine or read the Node (the caller brings its memory capacity).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vk_common.objects import is_sidecar, spec
from vk_common.qos import pod_qos_class
from vk_common.quantity import quantity_or_zero
from vk_provider.kuberuntime.pod_resources import memory_request

GUARANTEED = -997  # the kubelet's; the floor of a Burstable container is 1000 + GUARANTEED
BEST_EFFORT = 1000
NODE_CRITICAL = "system-node-critical"


def _left_per_container(pod: Mapping[str, Any]) -> int:
    """remainingPodMemReqPerContainer: the pod-level memory request the containers' requests
    leave over, shared by all of them."""
    s = spec(pod)
    level = math.ceil(quantity_or_zero(((s.get("resources") or {}).get("requests") or {}).get("memory")))
    containers = [*(s.get("initContainers") or []), *(s.get("containers") or [])]
    if not level or not containers:
        return 0
    apps = sum(memory_request(c) for c in s.get("containers") or [])
    sidecars, init_peak = 0, 0
    for c in s.get("initContainers") or []:
        if is_sidecar(c):
            sidecars += memory_request(c)
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + memory_request(c))
    return max(level - max(apps + sidecars, init_peak), 0) // len(containers)


def node_memory_capacity(node: Mapping[str, Any]) -> int:
    """The Node's `status.capacity.memory` in bytes (0: not known)."""
    capacity = ((node.get("status") or {}).get("capacity") or {}).get("memory")
    return math.floor(quantity_or_zero(capacity))


def _score(request: int, capacity: int) -> int:
    return 1000 - (1000 * request) // capacity


def oom_score_adjust(
    pod: Mapping[str, Any], container: Mapping[str, Any], memory_capacity: int
) -> int | None:
    """The container's oom_score_adj (None: the engine's default: the node's memory capacity is
    not known, or the kubelet's value is negative)."""
    if memory_capacity <= 0:
        return None
    qos = pod_qos_class(pod)
    if qos == "Guaranteed" or spec(pod).get("priorityClassName") == NODE_CRITICAL:
        return None  # GUARANTEED: not settable without CAP_SYS_RESOURCE (above)
    if qos == "BestEffort":
        return BEST_EFFORT
    left = _left_per_container(pod)
    score = _score(memory_request(container) + left, memory_capacity)
    names = {c.get("name") for c in spec(pod).get("initContainers") or []}
    apps = spec(pod).get("containers") or []
    if is_sidecar(container) and container.get("name") in names and apps:
        smallest = min(memory_request(c) for c in apps) + left
        score = min(score, _score(smallest, memory_capacity))
    return min(max(score, 1000 + GUARANTEED), BEST_EFFORT - 1)
