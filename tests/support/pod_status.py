"""Readers of what the provider wrote back: a Pod's phase, conditions and container statuses.

On a Pod as the API returns it: `phase`, `condition` (`{}` if absent), `container_status`
(app or init container, `{}` if absent), `waiting_reason`, and `running_ip` (the podIP of a
Running pod, "" otherwise) with its predicate `has_ip`; on a bare PodStatus (what the
status generator returns): `cond`, which fails if the condition is absent. Must not: build
manifests (tests/support/manifests.py) or wait (tests/support/polling.py).
"""

from __future__ import annotations

from typing import Any


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def condition(pod: dict[str, Any], type_: str) -> dict[str, Any]:
    for item in (pod.get("status") or {}).get("conditions") or []:
        if item.get("type") == type_:
            return dict(item)
    return {}


def container_status(pod: dict[str, Any], name: str) -> dict[str, Any]:
    status = pod.get("status") or {}
    for item in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if item.get("name") == name:
            return dict(item)
    return {}


def waiting_reason(pod: dict[str, Any], name: str) -> str:
    return str(((container_status(pod, name).get("state") or {}).get("waiting") or {}).get("reason") or "")


def running_ip(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    return str(status.get("podIP") or "") if status.get("phase") == "Running" else ""


def has_ip(pod: dict[str, Any]) -> bool:
    return bool(running_ip(pod))


def cond(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)
