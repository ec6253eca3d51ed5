"""The pod conditions the kubelet owns, computed from the container statuses (pure).

What lives here: the condition generators of `pkg/kubelet/status/generate.go`
(PodReadyToStartContainers, Initialized, Ready with its readiness gates, ContainersReady),
`need_to_reconcile_pod_readiness`, and `set_transition_times` (the status manager's
updateLastTransitionTime). Must not: do I/O, read the clock (callers pass `now`) or keep state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from vk_common.objects import format_time, is_sidecar
from vk_provider.runtime.types import PodRuntimeState
from vk_provider.status.fields import (
    CONTAINERS_NOT_INITIALIZED,
    CONTAINERS_NOT_READY,
    CONTAINERS_READY,
    FAILED,
    INITIALIZED,
    KUBELET_OWNED_CONDITIONS,
    KUBELET_SHARED_CONDITIONS,
    POD_COMPLETED,
    POD_FAILED,
    READINESS_GATES_NOT_READY,
    READY,
    READY_TO_START,
    SUCCEEDED,
    UNKNOWN_CONTAINER_STATUSES,
    find_condition,
    find_status,
    go_list,
)
from vk_provider.status.phase import has_any_regular_container_started


def condition(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    """A pod condition with its reason and message when they are set."""
    cond: dict[str, Any] = {"type": type_, "status": status}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def _status_message(unknown: Sequence[str], kind: str, others: Sequence[str]) -> str:
    """`containers with unknown status: [a], containers with <kind> status: [b]` ("" for none)."""
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {go_list(unknown)}")
    if others:
        messages.append(f"containers with {kind} status: {go_list(others)}")
    return ", ".join(messages)


def containers_ready_condition(
    spec: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]] | None, phase: str
) -> dict[str, Any]:
    if statuses is None:
        return condition(CONTAINERS_READY, "False", UNKNOWN_CONTAINER_STATUSES)
    unknown: list[str] = []
    unready: list[str] = []
    considered = [c for c in spec.get("initContainers") or [] if is_sidecar(c)]
    considered += list(spec.get("containers") or [])
    for container in considered:
        status = find_status(statuses, container["name"])
        if status is None:
            unknown.append(container["name"])
        elif not status.get("ready"):
            unready.append(container["name"])
    if phase == SUCCEEDED and not unknown:
        return condition(CONTAINERS_READY, "False", POD_COMPLETED)
    if phase == FAILED:
        return condition(CONTAINERS_READY, "False", POD_FAILED)
    message = _status_message(unknown, "unready", unready)
    if message:
        return condition(CONTAINERS_READY, "False", CONTAINERS_NOT_READY, message)
    return condition(CONTAINERS_READY, "True")


def ready_condition(
    spec: Mapping[str, Any],
    conditions: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]] | None,
    phase: str,
) -> dict[str, Any]:
    """Ready follows ContainersReady, then the readiness gates against `conditions`."""
    containers_ready = containers_ready_condition(spec, statuses, phase)
    if containers_ready["status"] != "True":
        return {**containers_ready, "type": READY}
    messages = []
    for gate in spec.get("readinessGates") or []:
        gate_type = gate.get("conditionType", "")
        found = find_condition(conditions, gate_type)
        if found is None:
            messages.append(f'corresponding condition of pod readiness gate "{gate_type}" does not exist.')
        elif found.get("status") != "True":
            messages.append(
                f'the status of pod readiness gate "{gate_type}" is not "True", but {found.get("status")}'
            )
    if messages:
        return condition(READY, "False", READINESS_GATES_NOT_READY, ", ".join(messages))
    return condition(READY, "True")


def need_to_reconcile_pod_readiness(pod: Mapping[str, Any]) -> bool:
    """The API pod's Ready condition disagrees with its readiness gates (`NeedToReconcilePodReadiness`).

    Upstream: pkg/kubelet/status/generate.go. Pod workers resync such a pod on a status-only
    (RECONCILE) update, so a readiness gate set by someone else reaches Ready.
    """
    spec = pod.get("spec") or {}
    if not spec.get("readinessGates"):
        return False
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    current = find_condition(conditions, READY)
    if current is None:
        return False
    statuses = list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or [])
    expected = ready_condition(spec, conditions, statuses, status.get("phase", ""))
    same_message = (current.get("message") or "") == expected.get("message", "")
    return bool(current.get("status") != expected["status"] or not same_message)


def initialized_condition(
    spec: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]] | None, phase: str
) -> dict[str, Any]:
    init_containers = spec.get("initContainers") or []
    if statuses is None and init_containers:
        return condition(INITIALIZED, "False", UNKNOWN_CONTAINER_STATUSES)
    statuses = statuses or []
    unknown: list[str] = []
    incomplete: list[str] = []
    for container in init_containers:
        status = find_status(statuses, container["name"])
        if status is None:
            unknown.append(container["name"])
        elif is_sidecar(container):
            if not status.get("started"):
                incomplete.append(container["name"])
        elif not status.get("ready"):
            incomplete.append(container["name"])
    if phase == SUCCEEDED and not unknown:
        return condition(INITIALIZED, "True", POD_COMPLETED)
    if has_any_regular_container_started(spec, statuses):
        return condition(INITIALIZED, "True")
    message = _status_message(unknown, "incomplete", incomplete)
    if message:
        return condition(INITIALIZED, "False", CONTAINERS_NOT_INITIALIZED, message)
    return condition(INITIALIZED, "True")


def ready_to_start_condition(pod: Mapping[str, Any], state: PodRuntimeState | None) -> dict[str, Any]:
    """True while the pod's sandbox runs with its network (the kubelet: no new sandbox needed)."""
    sandbox = state.sandbox if state is not None else None
    host_network = bool((pod.get("spec") or {}).get("hostNetwork"))
    ok = sandbox is not None and sandbox.running and (bool(sandbox.ip) or host_network)
    return condition(READY_TO_START, "True" if ok else "False")


def set_transition_times(
    conditions: list[dict[str, Any]], old_conditions: Iterable[Mapping[str, Any]], now: datetime
) -> None:
    """Keep the old lastTransitionTime of an owned or shared condition whose status is unchanged.

    The status manager's `updateLastTransitionTime` (pkg/kubelet/status/status_manager.go).
    """
    olds = list(old_conditions)
    for cond in conditions:
        if cond.get("type") not in KUBELET_OWNED_CONDITIONS | KUBELET_SHARED_CONDITIONS:
            continue
        old = find_condition(olds, cond["type"])
        if old is not None and old.get("status") == cond.get("status") and old.get("lastTransitionTime"):
            cond["lastTransitionTime"] = old["lastTransitionTime"]
        else:
            cond["lastTransitionTime"] = format_time(now)
        cond.setdefault("lastProbeTime", None)
