"""The pod's QoS class, as ComputePodQOS decides it (pure).

What lives here: `pod_qos_class` (`pkg/apis/core/helper/qos/qos.go`).
Must not: do I/O or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from vk_provider.quantity import parse_quantity


def _quantity(value: Any) -> Decimal:
    try:
        return parse_quantity(str(value))
    except ValueError:
        return Decimal(0)


def pod_qos_class(pod: Mapping[str, Any]) -> str:
    spec = pod.get("spec") or {}
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        container_limits = resources.get("limits") or {}
        # The apiserver defaults a missing request to its limit; do the same for undefaulted pods.
        container_requests = {**container_limits, **(resources.get("requests") or {})}
        for name, value in container_requests.items():
            amount = _quantity(value)
            if name in ("cpu", "memory") and amount > 0:
                requests[name] = requests.get(name, Decimal(0)) + amount
        found = set()
        for name, value in container_limits.items():
            amount = _quantity(value)
            if name in ("cpu", "memory") and amount > 0:
                found.add(name)
                limits[name] = limits.get(name, Decimal(0)) + amount
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    matching = all(limits.get(name) == amount for name, amount in requests.items())
    if guaranteed and matching and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
