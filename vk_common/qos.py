"""The pod's QoS class, as ComputePodQOS decides it (pure).

What lives here: `pod_qos_class` (`pkg/apis/core/v1/helper/qos/qos.go` at v1.37): pod-level
`spec.resources` decide when they set cpu or memory (PodLevelResources, beta and on since
1.34, with PodLevelResourcesFixKubeletQOSClass, on since 1.37); otherwise each init and app
container's requirements give a class (BestEffort, Guaranteed or Burstable, from its cpu and
memory requests against its limits) and the pod is that class when all agree, else Burstable.
A missing request counts as its limit, as the apiserver defaults it (for undefaulted static pods).
Must not: do I/O or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_common.quantity import quantity_or_zero

_QOS_RESOURCES = ("cpu", "memory")  # supportedQoSComputeResources (and the pod-level ones)


def _requirements_qos(resources: Mapping[str, Any]) -> str:
    """requirementsQOS: the class of one set of requests and limits."""
    limits: Mapping[str, Any] = resources.get("limits") or {}
    requests: Mapping[str, Any] = {**limits, **(resources.get("requests") or {})}
    if not requests and not limits:
        return "BestEffort"
    classes = set()
    for name in _QOS_RESOURCES:
        request, limit = quantity_or_zero(requests.get(name, 0)), quantity_or_zero(limits.get(name, 0))
        if request != limit:
            return "Burstable"
        classes.add("BestEffort" if request == 0 else "Guaranteed")
    return classes.pop() if len(classes) == 1 else "Burstable"


def _pod_level_set(resources: Mapping[str, Any]) -> bool:
    """IsPodLevelResourcesSet: cpu, memory or a hugepages size among the pod's requests or limits."""
    names = [*(resources.get("requests") or {}), *(resources.get("limits") or {})]
    return any(n in _QOS_RESOURCES or str(n).startswith("hugepages-") for n in names)


def pod_qos_class(pod: Mapping[str, Any]) -> str:
    spec = pod.get("spec") or {}
    pod_resources = spec.get("resources") or {}
    if _pod_level_set(pod_resources):
        return _requirements_qos(pod_resources)
    qos = ""
    for container in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        container_qos = _requirements_qos(container.get("resources") or {})
        if container_qos == "Burstable" or (qos and qos != container_qos):
            return "Burstable"
        qos = container_qos
    return qos or "BestEffort"
