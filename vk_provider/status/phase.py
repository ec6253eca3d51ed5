"""The pod phase from its container statuses, as the kubelet's getPhase computes it (pure).

What lives here: `get_phase` and `has_any_regular_container_started`
(`pkg/kubelet/kubelet_pods.go`). Must not: do I/O, read the clock or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vk_common.objects import container_should_restart, is_sidecar, is_static
from vk_common.objects import spec as pod_spec
from vk_provider.kuberuntime.restart_all import RESTARTING_ALL_CONTAINERS
from vk_provider.status.fields import FAILED, PENDING, RUNNING, SUCCEEDED, find_status


def has_any_regular_container_started(spec: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]]) -> bool:
    names = {c["name"] for c in spec.get("containers") or []}
    for status in statuses:
        state = status.get("state") or {}
        if status.get("name") in names and ("running" in state or "terminated" in state):
            return True
    return False


def _found(
    containers: Sequence[Mapping[str, Any]], statuses: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], int]:
    """The statuses `containers` have, in order, and how many of them have none."""
    found = [s for c in containers if (s := find_status(statuses, c["name"])) is not None]
    return found, len(containers) - len(found)


def _restartable(pod: Mapping[str, Any], container: Mapping[str, Any], ended: Mapping[str, Any]) -> bool:
    """Whether a container that ended so runs again: by its restart policy and rules, or because
    it was removed to restart all the pod's containers in place (reason RestartingAllContainers)."""
    exit_code = int(ended.get("exitCode", 0) or 0)
    return (
        container_should_restart(pod, container, exit_code)
        or ended.get("reason") == RESTARTING_ALL_CONTAINERS
    )


def get_phase(pod: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]], pod_is_terminal: bool) -> str:
    """The pod phase from its container statuses (init and regular together)."""
    spec = pod_spec(pod)
    init_containers = spec.get("initContainers") or []
    pending_regular_init = pending_sidecar = failed_init = 0
    for container in init_containers:
        if is_sidecar(container):
            continue
        status = find_status(statuses, container["name"])
        state = (status or {}).get("state") or {}
        last = (status or {}).get("lastState") or {}
        if status is None or "running" in state:
            pending_regular_init += 1
        elif "terminated" in state or ("waiting" in state and "terminated" in last):
            ended = state.get("terminated") or last["terminated"]
            if ended.get("exitCode", 0) != 0 and not _restartable(pod, container, ended):
                failed_init += 1  # ContainerRestartRules: only one that will not run again fails the pod
        else:
            pending_regular_init += 1

    sidecars, missing_sidecars = _found([c for c in init_containers if is_sidecar(c)], statuses)
    regular, missing_regular = _found(spec.get("containers") or [], statuses)
    unknown = missing_sidecars + missing_regular
    running = waiting = stopped = succeeded = not_restartable = 0
    for status in sidecars:
        state = status.get("state") or {}
        if "running" in state:
            if not status.get("started"):
                pending_sidecar += 1
            running += 1
        elif "terminated" in state:
            pass
        elif "waiting" in state:
            if "terminated" not in (status.get("lastState") or {}):
                pending_sidecar += 1
                waiting += 1
        else:
            pending_sidecar += 1
            unknown += 1

    by_name = {c["name"]: c for c in spec.get("containers") or []}
    for status in regular:
        state = status.get("state") or {}
        last = status.get("lastState") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            exit_code = state["terminated"].get("exitCode", 0)
            if exit_code == 0:
                succeeded += 1
            if not _restartable(pod, by_name[status["name"]], state["terminated"]):
                not_restartable += 1
        elif "waiting" in state:
            if "terminated" in last:
                stopped += 1
                if not _restartable(pod, by_name[status["name"]], last["terminated"]):
                    not_restartable += 1
            else:
                waiting += 1
        else:
            unknown += 1

    if failed_init > 0:
        return FAILED
    if (
        pending_regular_init > 0
        or (pending_sidecar > 0 and not has_any_regular_container_started(spec, statuses))
        or waiting > 0
    ):
        return PENDING
    if running > 0 and unknown == 0:
        return RUNNING
    if running == 0 and stopped > 0 and unknown == 0:
        if pod_is_terminal and not is_static(pod):
            return SUCCEEDED if stopped == succeeded else FAILED
        # ContainerRestartRules (on by default since 1.35): a container that restarts by its
        # own policy, its rules or the pod's keeps the pod Running.
        if stopped != not_restartable:
            return RUNNING
        return SUCCEEDED if stopped == succeeded else FAILED
    return PENDING
