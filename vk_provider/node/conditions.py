"""Node conditions with the kubelet's reasons and messages, their timestamps, and "did anything change".

What lives here: `desired_conditions(runtime_error, network_error)` (pkg/kubelet/nodestatus/setters.go
reasons; the network's error, CNI mode's NetworkPluginNotReady, makes Ready False with the
kubelet's KubeletNotReady reason as setters.go ReadyCondition joins networkErrorsFunc's;
NetworkUnavailable as the route controller reports it), `stamp_conditions`
(lastHeartbeatTime on every write, lastTransitionTime only when a status flips) and
`status_differs(api_status, desired)`, which compares only what we own, without the
heartbeat times. Must not: read the clock or do I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vk_common.quantity import parse_quantity

READY_MESSAGE = "kubelet is posting ready status"
CONDITION_TYPES = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready", "NetworkUnavailable")
_TIMES = ("lastHeartbeatTime", "lastTransitionTime")


def desired_conditions(runtime_error: str | None, network_error: str | None = None) -> list[dict[str, str]]:
    """The five conditions, without times. `runtime_error` is None when the runtime answers,
    `network_error` when pods can get a network (`Runtime.network_status`)."""
    error = runtime_error or network_error
    if error is None:
        ready = {"status": "True", "reason": "KubeletReady", "message": READY_MESSAGE}
    else:
        ready = {"status": "False", "reason": "KubeletNotReady", "message": error}
    return [
        {
            "type": "MemoryPressure",
            "status": "False",
            "reason": "KubeletHasSufficientMemory",
            "message": "kubelet has sufficient memory available",
        },
        {
            "type": "DiskPressure",
            "status": "False",
            "reason": "KubeletHasNoDiskPressure",
            "message": "kubelet has no disk pressure",
        },
        {
            "type": "PIDPressure",
            "status": "False",
            "reason": "KubeletHasSufficientPID",
            "message": "kubelet has sufficient PID available",
        },
        {"type": "Ready", **ready},
        {
            "type": "NetworkUnavailable",
            "status": "False",
            "reason": "RouteCreated",
            "message": "RouteController created a route",
        },
    ]


def stamp_conditions(
    previous: Sequence[Mapping[str, Any]], desired: Sequence[Mapping[str, str]], now: str
) -> list[dict[str, str]]:
    """Desired conditions with times: heartbeat = now; transition kept unless the status flipped."""
    by_type = {c.get("type"): c for c in previous}
    stamped = []
    for condition in desired:
        old = by_type.get(condition["type"])
        if old is not None and old.get("status") == condition["status"] and old.get("lastTransitionTime"):
            transition = str(old["lastTransitionTime"])
        else:
            transition = now
        stamped.append({**condition, "lastHeartbeatTime": now, "lastTransitionTime": transition})
    return stamped


def ready_status(conditions: Sequence[Mapping[str, Any]]) -> str:
    """The Ready condition's status ("True", "False", "Unknown"), "" when there is none."""
    for condition in conditions:
        if condition.get("type") == "Ready":
            return str(condition.get("status", ""))
    return ""


def _without_times(condition: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in condition.items() if k not in _TIMES}


def status_differs(api_status: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """True when the API's NodeStatus lacks something of `desired` (heartbeat times aside).

    Maps (capacity, allocatable, nodeInfo, daemonEndpoints) are compared on our keys only,
    since a strategic merge patch never removes the others; conditions by type; addresses
    per address type we publish.
    """
    for key, want in desired.items():
        have = api_status.get(key)
        if key == "conditions":
            api_conditions = {c.get("type"): _without_times(c) for c in have or []}
            if any(api_conditions.get(c["type"]) != _without_times(c) for c in want):
                return True
        elif key == "addresses":
            types = {a["type"] for a in want}
            if [a for a in have or [] if a.get("type") in types] != list(want):
                return True
        elif key in ("capacity", "allocatable"):
            if not isinstance(have, Mapping) or any(
                not _same_quantity(have.get(k), v) for k, v in want.items()
            ):
                return True
        elif isinstance(want, Mapping):
            if not isinstance(have, Mapping) or _differs_map(have, want):
                return True
        elif have != want:
            return True
    return False


def _differs_map(have: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    for key, value in want.items():
        if isinstance(value, Mapping):
            sub = have.get(key)
            if not isinstance(sub, Mapping) or _differs_map(sub, value):
                return True
        elif (have.get(key) or "") != (value or ""):  # the API may drop empty strings
            return True
    return False


def _same_quantity(have: Any, want: str) -> bool:
    """Quantities by value: the apiserver stores them in canonical form (`16384Ki` comes back `16Mi`)."""
    if have is None:
        return False
    try:
        return parse_quantity(str(have)) == parse_quantity(want)
    except ValueError:
        return str(have) == want
