"""RestartAllContainers: a pod that restarts all its containers in place (pure).

A container's restartPolicyRules may say `RestartAllContainers` for some exit codes
(RestartAllContainersOnContainerExits, beta). When such a container exits with one of them, the
kubelet kills (no grace period, no preStop) and removes every init and app container of the
pod, keeping its sandbox, volumes and IP, marks the pod with the AllContainersRestarting
condition while it does, and then starts the pod's containers again from its first init
container, as for a new pod.

What lives here: `should_restart_all` (ShouldAllContainersRestart: the condition is already
True in the API status, or a container, in the runtime or in the API status, exited with a code
whose rule says RestartAllContainers), `cleaned_up` (AllContainersRestartCleanedUp: no init or
app container left in the runtime), `containers_to_reset` (getContainersToReset: every instance
of those containers, the ones that triggered it last) and `restarting_condition`
(GenerateAllContainersRestartingCondition).
Upstream: pkg/kubelet/container/helpers.go, pkg/kubelet/kuberuntime/kuberuntime_manager.go,
pkg/kubelet/status/generate.go.
Must not: act on the runtime or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_common.objects import (
    RESTART_ALL_CONTAINERS,
    all_containers_could_restart,
    matching_restart_rule,
    spec,
)
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    spec_list,
)

ALL_CONTAINERS_RESTARTING = "AllContainersRestarting"  # the pod condition (kubelet-owned)
RESTART_STARTED = "RestartAllContainersStarted"  # its reason while True
RESTARTING_ALL_CONTAINERS = "RestartingAllContainers"  # a removed container's waiting / last reason
RESTARTING_MESSAGE = "The container is removed because RestartAllContainers in place"

_RESET_ROLES = (ContainerRole.INIT, ContainerRole.APP)  # ephemeral containers are not reset


def _triggers(container: Mapping[str, Any], exit_code: int) -> bool:
    rule = matching_restart_rule(container, exit_code)
    return rule is not None and rule.get("action") == RESTART_ALL_CONTAINERS


def _find(statuses: list[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((s for s in statuses if s.get("name") == name), None)


def should_restart_all(
    pod: Mapping[str, Any], state: PodRuntimeState | None, api_status: Mapping[str, Any] | None
) -> bool:
    api_status = api_status or {}
    for cond in api_status.get("conditions") or []:
        if cond.get("type") == ALL_CONTAINERS_RESTARTING and cond.get("status") == "True":
            return True
    api_statuses = [
        *(api_status.get("initContainerStatuses") or []),
        *(api_status.get("containerStatuses") or []),
    ]
    for role in _RESET_ROLES:
        for container in spec(pod).get(spec_list(role)) or []:
            latest = state.latest(container["name"], role) if state is not None else None
            exited = latest is not None and latest.state == ContainerRunState.EXITED
            if exited and latest is not None and _triggers(container, latest.exit_code or 0):
                return True
            old = _find(api_statuses, container["name"])
            terminated = ((old or {}).get("state") or {}).get("terminated")
            if terminated is not None and _triggers(container, int(terminated.get("exitCode") or 0)):
                return True
    return False


def cleaned_up(pod: Mapping[str, Any], state: PodRuntimeState | None) -> bool:
    """No init or app container of the pod is left in the runtime."""
    if state is None:
        return True
    names = {c["name"] for role in _RESET_ROLES for c in spec(pod).get(spec_list(role)) or []}
    return not any(c.name in names and c.role != ContainerRole.EPHEMERAL for c in state.containers)


def restarting(
    pod: Mapping[str, Any], state: PodRuntimeState | None, api_status: Mapping[str, Any] | None
) -> bool:
    """The pod is to reset its containers now (the kubelet's AllContainersRestarting=True)."""
    return (
        all_containers_could_restart(pod)
        and should_restart_all(pod, state, api_status)
        and not cleaned_up(pod, state)
    )


Reset = tuple[Mapping[str, Any], ContainerInstance]  # a container's spec and one of its instances


def containers_to_reset(pod: Mapping[str, Any], state: PodRuntimeState) -> list[Reset]:
    """Every instance of the pod's init and app containers, with its spec: those that did not
    trigger the restart first (app, then init), those that did last."""
    sources: dict[ContainerRole, list[Reset]] = {ContainerRole.INIT: [], ContainerRole.APP: []}
    targets: dict[ContainerRole, list[Reset]] = {ContainerRole.INIT: [], ContainerRole.APP: []}
    for role in _RESET_ROLES:
        for container in spec(pod).get(spec_list(role)) or []:
            for instance in state.containers:
                if instance.name != container["name"] or instance.role != role:
                    continue
                exited = instance.state == ContainerRunState.EXITED
                if exited and _triggers(container, instance.exit_code or 0):
                    sources[role].append((container, instance))
                else:
                    targets[role].append((container, instance))
    app, init = ContainerRole.APP, ContainerRole.INIT
    return [*targets[app], *targets[init], *sources[app], *sources[init]]


def restarting_condition(
    pod: Mapping[str, Any], state: PodRuntimeState | None, should_restart: bool, phase: str
) -> dict[str, Any] | None:
    """The AllContainersRestarting condition (None for a pod without a RestartAllContainers rule);
    `should_restart`: `should_restart_all` of the pod, its state and its old status."""
    if not all_containers_could_restart(pod):
        return None
    if phase in ("Succeeded", "Failed"):
        reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        return {"type": ALL_CONTAINERS_RESTARTING, "status": "False", "reason": reason}
    if not should_restart or cleaned_up(pod, state):
        return {"type": ALL_CONTAINERS_RESTARTING, "status": "False"}
    return {
        "type": ALL_CONTAINERS_RESTARTING,
        "status": "True",
        "reason": RESTART_STARTED,
        "message": "container exited with restart policy rule",
    }
