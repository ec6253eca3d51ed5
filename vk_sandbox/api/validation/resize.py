"""The pods/resize subresource's rules: what a resize keeps, what it may change, what the node allows.

What lives here: `resize_update` (podResizeStrategy.PrepareForUpdate, pkg/registry/core/pod/
strategy.go dropNonResizeUpdates: every change but the containers' `resources` and
`resizePolicy` and the pod-level `spec.resources` (defaulted: requests from limits) is dropped,
status and metadata stay the old ones), `validate_pod_resize` (pkg/apis/core/validation
ValidatePodResize: static pods, QoS class, container order, removed requests or limits,
resources other than cpu and memory, for app and init containers and, validatePodLevelResources
Resize, the pod level), `undeclared_features` (the NodeDeclaredFeatureValidator admission plugin:
a non-sidecar init container or the pod level resized on a node that does not declare the
feature) and `allocatable_refusal`
(the PodResizeValidator admission plugin, plugin/pkg/admission/podresize/admission.go:
requests above the node's allocatable are refused with 403 and cause NodeCapacity).
Must not: touch the store or HTTP; the handlers (api/handlers/verbs.py) call these.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from vk_sandbox.api.defaults import qos_class
from vk_sandbox.api.pod_requests import pod_requests
from vk_sandbox.api.quantity import parse_quantity
from vk_sandbox.api.validation.field import forbidden, invalid

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
NODE_CAPACITY, UNSUPPORTED_PLATFORM = "NodeCapacity", "UnsupportedPlatform"  # the refusal causes
INIT_CONTAINER_RESIZE = "InPlacePodVerticalScalingInitContainers"  # node declared features
POD_LEVEL_RESIZE = "InPlacePodLevelResourcesVerticalScaling"
_RESIZED = ("resources", "resizePolicy")
_CPU_MEMORY = ("cpu", "memory")
_INIT_MUTABLE = "only cpu and memory resources for init or sidecar containers are mutable"
_INIT_NO_RESTART = "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"


def _spec(pod: Mapping[str, Any]) -> dict[str, Any]:
    value = pod.get("spec")
    return value if isinstance(value, dict) else {}


def _merged(new: list[Any], old: list[Any]) -> list[Any]:
    """dropNonResizeUpdatesForContainers: old containers with the new resources and policy;
    a renamed or reordered list is returned as is for validation to refuse."""
    out = []
    for n, o in zip(new, old, strict=True):
        if not isinstance(n, dict) or not isinstance(o, dict) or n.get("name") != o.get("name"):
            return new
        merged = copy.deepcopy(o)
        for key in _RESIZED:
            if key in n:
                merged[key] = copy.deepcopy(n[key])
            else:
                merged.pop(key, None)
        out.append(merged)
    return out


def resize_update(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What a write through pods/<name>/resize stores: the old pod with the new resources."""
    old_spec, new_spec = _spec(old), _spec(new)
    result = copy.deepcopy(old)
    result["metadata"] = {
        **copy.deepcopy(old["metadata"]),
        "resourceVersion": new["metadata"].get("resourceVersion"),
    }
    if result["metadata"]["resourceVersion"] is None:
        del result["metadata"]["resourceVersion"]
    spec = result["spec"] = copy.deepcopy(old_spec)
    # PodLevelResourcesFixDefaulting: a client that leaves spec.resources out keeps the old ones
    level = new_spec.get("resources", old_spec.get("resources"))
    if isinstance(level, dict):
        spec["resources"] = _defaulted(level)
    for key in ("containers", "initContainers"):
        news, olds = new_spec.get(key) or [], old_spec.get(key) or []
        if len(news) != len(olds):
            return {**result, "spec": copy.deepcopy(new_spec)}  # validation refuses it
        if olds:
            spec[key] = _merged(news, olds)
    return result


def _defaulted(resources: Mapping[str, Any]) -> dict[str, Any]:
    """DefaultPodLevelResources: a cpu or memory limit without a request requests the limit."""
    out = copy.deepcopy(dict(resources))
    limits = out.get("limits") or {}
    defaults = {k: v for k, v in limits.items() if k in _CPU_MEMORY and k not in (out.get("requests") or {})}
    if defaults:
        out["requests"] = {**(out.get("requests") or {}), **defaults}
    return out


def _removed(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    return len(old) > len(new) or any(name not in new for name in old)


def _without_cpu_memory(resources: Mapping[str, Any]) -> dict[str, Any]:
    """The resources but cpu and memory (a requests or limits map left empty counts as none: the
    removal of cpu or memory is refused on its own, not as another resource's change)."""
    out: dict[str, Any] = {}
    for key, values in resources.items():
        if key in ("requests", "limits") and isinstance(values, dict):
            values = {k: v for k, v in values.items() if k not in _CPU_MEMORY}
            if not values:
                continue
        out[key] = values
    return out


def _ordering(new: list[Any], old: list[Any], path: str, what: str) -> list[dict[str, str]]:
    if len(new) != len(old):
        return [forbidden(path, f"{what} may not be added or removed on resize")]
    return [
        forbidden(f"{path}[{i}].name", f"{what} may not be renamed or reordered on resize")
        for i, (n, o) in enumerate(zip(new, old, strict=True))
        if (n or {}).get("name") != (o or {}).get("name")
    ]


def validate_pod_resize(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, str]]:
    """Causes for resizing pod old into new (ValidatePodResize, in upstream's order)."""
    annotations = (old.get("metadata") or {}).get("annotations") or {}
    if MIRROR_ANNOTATION in annotations:
        return [forbidden("", "static pods cannot be resized")]
    out: list[dict[str, str]] = []
    if ((old.get("status") or {}).get("qosClass") or qos_class(_spec(old))) != qos_class(_spec(new)):
        # the value shown is newPod.Status.QOSClass: the old status, which a resize keeps
        shown = (new.get("status") or {}).get("qosClass", "")
        out.append(invalid("spec", shown, "Pod QOS Class may not change as a result of resizing"))
    old_spec, new_spec = _spec(old), _spec(new)
    olds, news = old_spec.get("containers") or [], new_spec.get("containers") or []
    order = _ordering(news, olds, "spec.containers", "containers")
    order += _ordering(
        new_spec.get("initContainers") or [],
        old_spec.get("initContainers") or [],
        "spec.initContainers",
        "initContainers",
    )
    if order:
        return out + order
    inits = list(zip(new_spec.get("initContainers") or [], old_spec.get("initContainers") or [], strict=True))
    apps = list(zip(news, olds, strict=True))
    for kind, pairs in (("initContainers", inits), ("containers", apps)):
        for i, (n, o) in enumerate(pairs):
            out += _removals(
                n.get("resources") or {}, o.get("resources") or {}, f"spec.{kind}[{i}].resources"
            )
    for n, o in apps:
        if _without_cpu_memory(n.get("resources") or {}) != _without_cpu_memory(o.get("resources") or {}):
            out.append(forbidden("spec", "only cpu and memory resources are mutable"))
    # Every init container, sidecar or not, is resizable (InPlacePodVerticalScalingInitContainers,
    # locked on in v1.37), in cpu and memory only; a non-sidecar one with a RestartContainer
    # policy is not (it cannot be restarted).
    for i, (n, o) in enumerate(inits):
        if _without_cpu_memory(n.get("resources") or {}) != _without_cpu_memory(o.get("resources") or {}):
            out.append(forbidden(f"spec.initContainers[{i}]", _INIT_MUTABLE))
        restarts = any(p.get("restartPolicy") == "RestartContainer" for p in n.get("resizePolicy") or [])
        if n != o and restarts and n.get("restartPolicy") != "Always":
            out.append(forbidden(f"spec.initContainers[{i}]", _INIT_NO_RESTART))
    return out + _pod_level_causes(new_spec.get("resources"), old_spec.get("resources"))


def _pod_level_causes(new: Any, old: Any) -> list[dict[str, str]]:
    """validatePodLevelResourcesResize: pod-level requests and limits may change in cpu and
    memory, not go away."""
    if not old:
        new_other = _without_cpu_memory(new or {})
        return (
            [forbidden("spec", "only cpu and memory resources are mutable at pod-level")] if new_other else []
        )
    if not new:
        return [forbidden("spec.resources", "pod-level resources cannot be removed")]
    out = []
    if _removed(new.get("requests") or {}, old.get("requests") or {}):
        out.append(forbidden("spec.resources.requests", "pod-level resource requests cannot be removed"))
    if _removed(new.get("limits") or {}, old.get("limits") or {}):
        out.append(forbidden("spec.resources.limits", "pod-level resource limits cannot be removed"))
    if _without_cpu_memory(new) != _without_cpu_memory(old):
        out.append(forbidden("spec", "only cpu and memory resources are mutable at pod-level"))
    return out


def _removals(new: Mapping[str, Any], old: Mapping[str, Any], path: str) -> list[dict[str, str]]:
    """validateContainerResize: requests and limits may change, not go away."""
    out = []
    if _removed(new.get("requests") or {}, old.get("requests") or {}):
        out.append(forbidden(f"{path}.requests", "resource requests cannot be removed"))
    if _removed(new.get("limits") or {}, old.get("limits") or {}):
        out.append(forbidden(f"{path}.limits", "resource limits cannot be removed"))
    return out


def undeclared_features(old: Mapping[str, Any], new: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    """The NodeDeclaredFeatureValidator (plugin/pkg/admission/nodedeclaredfeatures/admission.go):
    the features a bound pod's update needs that its node does not list in
    `status.declaredFeatures`. The one a resize can need: a changed non-sidecar init container
    needs `InPlacePodVerticalScalingInitContainers` (k8s.io/component-helpers/nodedeclaredfeatures/
    features/inplacepodresize, InferForUpdate), and a changed pod-level `spec.resources` needs
    `InPlacePodLevelResourcesVerticalScaling` (pod_level_resource_resize.go)."""
    olds, news = _spec(old).get("initContainers") or [], _spec(new).get("initContainers") or []
    init_resized = any(
        o.get("restartPolicy") != "Always" and (o.get("resources") or {}) != (n.get("resources") or {})
        for o, n in zip(olds, news, strict=False)
    )
    level_resized = (_spec(old).get("resources") or {}) != (_spec(new).get("resources") or {})
    declared = (node.get("status") or {}).get("declaredFeatures") or []
    needed = [
        name
        for name, used in ((POD_LEVEL_RESIZE, level_resized), (INIT_CONTAINER_RESIZE, init_resized))
        if used
    ]
    return [name for name in needed if name not in declared]


def allocatable_refusal(pod: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[str, str]:
    """The PodResizeValidator's (message, cause type) for a pod the node cannot take, else ("", "")."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    os_name = labels.get("kubernetes.io/os")
    if os_name is not None and os_name != "linux":
        name = (node.get("metadata") or {}).get("name", "")
        return (
            f'pod resize is only supported on linux nodes, node "{name}" is "{os_name}"',
            UNSUPPORTED_PLATFORM,
        )
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    cpu, mem = pod_requests(dict(pod))
    cpu_alloc = parse_quantity(str(allocatable.get("cpu", "0")))
    mem_alloc = parse_quantity(str(allocatable.get("memory", "0")))
    msg = []  # the figures as Quantity.MilliValue / Value print them: rounded up
    if cpu > cpu_alloc:
        msg.append(f"cpu, requested: {math.ceil(cpu * 1000)}, allocatable: {math.ceil(cpu_alloc * 1000)}")
    if mem > mem_alloc:
        msg.append(f"memory, requested: {math.ceil(mem)}, allocatable: {math.ceil(mem_alloc)}")
    if not msg:
        return "", ""
    return f"node didn't have enough allocatable resources: {'; '.join(msg)}", NODE_CAPACITY
