"""What a pod requests of its node, as the apiserver's admission and the scheduler count it.

What lives here: `pod_requests(pod) -> (cpu cores, memory bytes)`, exact Fractions, after
`PodRequests` (k8s.io/component-helpers/resource/helpers.go): app containers and sidecars
(restartable init containers) add up; each other init container runs beside the sidecars started
before it; the larger of the two (the pod-level `spec.resources` request in its place where
set), plus the pod's overhead. A request defaults to its limit
(pkg/apis/core/v1/defaults.go). The PodResizeValidator (api/validation/resize.py) and the
scheduler's NodeResourcesFit (controllers/scheduler_filters.py) use it.
Must not: do I/O or read the store.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from vk_common.objects import is_sidecar
from vk_sandbox.api.quantity import parse_quantity


def _container_request(container: dict[str, Any], resource: str) -> Fraction:
    resources = container.get("resources") or {}
    value = (resources.get("requests") or {}).get(resource)
    if value is None:
        value = (resources.get("limits") or {}).get(resource)
    return parse_quantity(value) if value is not None else Fraction(0)


def _request_of(spec: dict[str, Any], resource: str) -> Fraction:
    overhead = (spec.get("overhead") or {}).get(resource)
    extra = parse_quantity(overhead) if overhead else Fraction(0)
    level = _container_request({"resources": spec.get("resources")}, resource)
    if level:
        return level + extra
    running = sum((_container_request(c, resource) for c in spec.get("containers") or []), Fraction(0))
    sidecars = Fraction(0)
    init_peak = Fraction(0)
    for container in spec.get("initContainers") or []:
        request = _container_request(container, resource)
        if is_sidecar(container):
            running += request
            sidecars += request
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + request)
    return max(running, init_peak) + extra


def pod_requests(pod: dict[str, Any]) -> tuple[Fraction, Fraction]:
    """(cpu cores, memory bytes) `pod` requests."""
    spec = pod.get("spec") or {}
    return _request_of(spec, "cpu"), _request_of(spec, "memory")
