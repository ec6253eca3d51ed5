"""The pods/resize subresource's rules: what a resize keeps, what it may change, what the node allows.

What lives here: `resize_update` (podResizeStrategy.PrepareForUpdate, pkg/registry/core/pod/
strategy.go dropNonResizeUpdates: every change but the containers' `resources` and
`resizePolicy` is dropped, status and metadata stay the old ones), `validate_pod_resize`
(pkg/apis/core/validation ValidatePodResize: static pods, QoS class, container order,
removed requests or limits, resources other than cpu and memory) and `allocatable_refusal`
(the PodResizeValidator admission plugin, plugin/pkg/admission/podresize/admission.go:
requests above the node's allocatable are refused with 403 and cause NodeCapacity).
Must not: touch the store or HTTP; the handlers (api/handlers/verbs.py) call these.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from vk_provider.sandbox.api.defaults import qos_class
from vk_provider.sandbox.api.quantity import parse_quantity
from vk_provider.sandbox.api.validation.field import forbidden, invalid

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
NODE_CAPACITY, UNSUPPORTED_PLATFORM = "NodeCapacity", "UnsupportedPlatform"  # the refusal causes
_RESIZED = ("resources", "resizePolicy")
_CPU_MEMORY = ("cpu", "memory")


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
    for key in ("containers", "initContainers"):
        news, olds = new_spec.get(key) or [], old_spec.get(key) or []
        if len(news) != len(olds):
            return {**result, "spec": copy.deepcopy(new_spec)}  # validation refuses it
        if olds:
            spec[key] = _merged(news, olds)
    return result


def _removed(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    return len(old) > len(new) or any(name not in new for name in old)


def _without_cpu_memory(resources: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, values in resources.items():
        if key in ("requests", "limits") and isinstance(values, dict):
            values = {k: v for k, v in values.items() if k not in _CPU_MEMORY}
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
    for i, (n, o) in enumerate(zip(news, olds, strict=True)):
        path = f"spec.containers[{i}].resources"
        new_res, old_res = n.get("resources") or {}, o.get("resources") or {}
        if _removed(new_res.get("requests") or {}, old_res.get("requests") or {}):
            out.append(forbidden(f"{path}.requests", "resource requests cannot be removed"))
        if _removed(new_res.get("limits") or {}, old_res.get("limits") or {}):
            out.append(forbidden(f"{path}.limits", "resource limits cannot be removed"))
    for n, o in zip(news, olds, strict=True):
        if _without_cpu_memory(n.get("resources") or {}) != _without_cpu_memory(o.get("resources") or {}):
            out.append(forbidden("spec", "only cpu and memory resources are mutable"))
    return out


def _requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(milli-CPU, bytes) the pod requests: resource.PodRequests, app containers summed, the
    largest init container's request when larger (a request defaults to its limit)."""

    def of(c: Mapping[str, Any]) -> tuple[int, int]:
        res = c.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        cpu, mem = requests.get("cpu", limits.get("cpu")), requests.get("memory", limits.get("memory"))
        return (
            math.ceil(parse_quantity(str(cpu)) * 1000) if cpu is not None else 0,
            math.ceil(parse_quantity(str(mem))) if mem is not None else 0,
        )

    spec = _spec(pod)
    apps = [of(c) for c in spec.get("containers") or []]
    inits = [of(c) for c in spec.get("initContainers") or []]
    cpu, mem = sum(a[0] for a in apps), sum(a[1] for a in apps)
    return max([cpu, *(i[0] for i in inits)]), max([mem, *(i[1] for i in inits)])


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
    cpu, mem = _requests(pod)
    cpu_alloc = math.floor(parse_quantity(str(allocatable.get("cpu", "0"))) * 1000)
    mem_alloc = math.floor(parse_quantity(str(allocatable.get("memory", "0"))))
    msg = []
    if cpu > cpu_alloc:
        msg.append(f"cpu, requested: {cpu}, allocatable: {cpu_alloc}")
    if mem > mem_alloc:
        msg.append(f"memory, requested: {mem}, allocatable: {mem_alloc}")
    if not msg:
        return "", ""
    return f"node didn't have enough allocatable resources: {'; '.join(msg)}", NODE_CAPACITY
