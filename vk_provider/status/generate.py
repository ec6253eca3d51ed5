"""Pure computation of a pod's API status from what the runtime observed, as the kubelet does it.

What lives here: `generate_pod_status` (the kubelet's `generateAPIPodStatus`,
`pkg/kubelet/kubelet_pods.go`) and the container statuses it is built from
(`container_statuses`: `convertToAPIContainerStatuses`). The phase is `status/phase.py`, the
conditions `status/conditions.py`, the QoS class `vk_common/qos.py`, a container's resources
`status/resources.py`, the pod-level resources `status/pod_level.py`, the shared names
`status/fields.py`. Everything works on plain dicts in the API's JSON shape.
Must not: do I/O, read the clock (callers pass `now`), or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from vk_common.objects import copy_json, format_time, is_deleting, is_sidecar, should_restart
from vk_common.qos import pod_qos_class
from vk_provider.kuberuntime.restart_all import (
    RESTARTING_ALL_CONTAINERS,
    RESTARTING_MESSAGE,
    restarting_condition,
    should_restart_all,
)
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    LinuxResources,
    PodRuntimeState,
    spec_list,
)
from vk_provider.status.conditions import (
    condition,
    containers_ready_condition,
    initialized_condition,
    ready_condition,
    ready_to_start_condition,
    set_transition_times,
)
from vk_provider.status.fields import (
    CONTAINER_CREATING,
    DISRUPTION_TARGET,
    FAILED,
    KUBELET_OWNED_CONDITIONS,
    POD_INITIALIZING,
    POD_SCHEDULED,
    STATUS_UNKNOWN,
    UNKNOWN_DELETED_MESSAGE,
    UNKNOWN_TERMINATED_MESSAGE,
    ContainerWaiting,
    find_condition,
    find_status,
    is_terminal_phase,
)
from vk_provider.status.phase import get_phase
from vk_provider.status.pod_level import pod_level_status
from vk_provider.status.resources import status_resources


def _terminated_reason(instance: ContainerInstance) -> str:
    # CRI reasons as containerd reports them; Docker's State.OOMKilled / ExitCode / Error map onto them.
    if instance.oom_killed:
        return "OOMKilled"
    if instance.error and instance.started_at is None:
        return "StartError"
    return "Completed" if (instance.exit_code or 0) == 0 else "Error"


def _instance_state(instance: ContainerInstance, old: Mapping[str, Any] | None) -> tuple[dict[str, Any], int]:
    """The API state of one runtime instance and its restart count."""
    restart_count = instance.attempt
    if instance.state == ContainerRunState.RUNNING:
        running: dict[str, Any] = {}
        if instance.started_at is not None:
            running["startedAt"] = format_time(instance.started_at)
        return {"running": running}, restart_count
    if instance.state == ContainerRunState.EXITED:
        terminated: dict[str, Any] = {
            "exitCode": instance.exit_code if instance.exit_code is not None else 0,
            "reason": _terminated_reason(instance),
        }
        start_error = instance.error if terminated["reason"] == "StartError" else ""
        message = instance.termination_message or start_error
        if message:
            terminated["message"] = message
        terminated["startedAt"] = format_time(instance.started_at) if instance.started_at else None
        terminated["finishedAt"] = format_time(instance.finished_at) if instance.finished_at else None
        terminated["containerID"] = instance.container_uri
        return {"terminated": terminated}, restart_count
    was_running = old is not None and "running" in (old.get("state") or {})
    if instance.state == ContainerRunState.UNKNOWN and old is not None and was_running:
        unknown = {"reason": STATUS_UNKNOWN, "message": UNKNOWN_TERMINATED_MESSAGE, "exitCode": 137}
        return {"terminated": unknown}, int(old.get("restartCount", 0)) + 1
    return {"waiting": {}}, restart_count


def _will_start(
    pod: Mapping[str, Any], container: Mapping[str, Any], latest: ContainerInstance | None
) -> bool:
    """Whether the next sync starts the container, so that its waiting reason shows."""
    if latest is not None and latest.state == ContainerRunState.RUNNING:
        return False
    exited = latest is not None and latest.state == ContainerRunState.EXITED
    return should_restart(pod, container, (latest.exit_code or 0) if exited and latest else None)


def _probe_flags(
    container: Mapping[str, Any],
    role: ContainerRole,
    state: Mapping[str, Any],
    readiness: Mapping[str, bool],
    started: Mapping[str, bool],
) -> tuple[bool, bool]:
    """(ready, started) as the prober manager's UpdatePodStatus sets them.

    Upstream: pkg/kubelet/prober/prober_manager.go.
    """
    name = container["name"]
    if role == ContainerRole.INIT and not is_sidecar(container):
        terminated = state.get("terminated")
        return bool(terminated is not None and terminated.get("exitCode") == 0), "running" in state
    if "running" not in state:
        return False, False
    is_started = started.get(name, "startupProbe" not in container)
    if not is_started:
        return False, False
    return readiness.get(name, "readinessProbe" not in container), True


def _carried(old: Mapping[str, Any] | None, latest: ContainerInstance) -> dict[str, Any]:
    """The lastState of an instance with no earlier one left in the runtime (a RestartAllContainers
    removed it): the old status's end when it was another container, else its lastState
    (convertToAPIContainerStatuses, RestartAllContainersOnContainerExits)."""
    if old is None:
        return {}
    ended = (old.get("state") or {}).get("terminated")
    if ended is not None and old.get("containerID") != latest.container_uri:
        return {"terminated": copy_json(ended)}
    before = (old.get("lastState") or {}).get("terminated")
    return {"terminated": copy_json(before)} if before is not None else {}


def container_statuses(
    pod: Mapping[str, Any],
    state: PodRuntimeState | None,
    role: ContainerRole,
    old_statuses: Sequence[Mapping[str, Any]],
    waiting: Mapping[str, ContainerWaiting],
    readiness: Mapping[str, bool],
    started: Mapping[str, bool],
    allocated: Mapping[str, Mapping[str, Any]] | None = None,
    pod_restarting: bool = False,
) -> list[dict[str, Any]]:
    """API statuses of the init (`role=INIT`), regular (`role=APP`) or ephemeral (`role=EPHEMERAL`:
    never ready, no `started`, as the prober manager leaves them) containers, in spec order.

    `allocated` (container name -> resources, the pod worker's allocation) gives a container
    with a runtime record its `resources` and `allocatedResources` (status/resources.py).
    `pod_restarting`: the pod restarts all its containers in place (ShouldAllContainersRestart);
    a container it removed waits with reason RestartingAllContainers, one restart more.
    """
    spec = pod.get("spec") or {}
    containers = spec.get(spec_list(role)) or []
    has_init = bool(spec.get("initContainers"))
    default_reason = POD_INITIALIZING if has_init else CONTAINER_CREATING
    deleting = is_deleting(pod)
    result: list[dict[str, Any]] = []
    for container in containers:
        name = container["name"]
        old = find_status(old_statuses, name)
        latest = state.latest(name, role) if state is not None else None
        previous = state.previous(name, role) if state is not None else None
        status: dict[str, Any]
        if (
            latest is None
            and pod_restarting
            and old is not None
            and "waiting" not in (old.get("state") or {})
        ):
            removed = {"reason": RESTARTING_ALL_CONTAINERS, "message": RESTARTING_MESSAGE}
            status = {
                "name": name,
                "state": {"waiting": dict(removed)},
                "lastState": {"terminated": {**removed, "exitCode": 137}},
                "ready": False,
                "restartCount": int(old.get("restartCount", 0)) + 1,
                "image": container.get("image", ""),
                "imageID": "",
            }
        elif latest is None:
            if old is not None and "terminated" in (old.get("state") or {}):
                status = copy_json(old)
            else:
                status = {
                    "name": name,
                    "state": {"waiting": {"reason": default_reason}},
                    "lastState": copy_json((old or {}).get("lastState") or {}),
                    "ready": False,
                    "restartCount": int((old or {}).get("restartCount", 0)),
                    "image": container.get("image", ""),
                    "imageID": "",
                }
                if old is not None and "running" in (old.get("state") or {}) and not status["lastState"]:
                    # Vanished while running, no runtime record: show it stopped, not waiting.
                    gone = {"reason": STATUS_UNKNOWN, "message": UNKNOWN_DELETED_MESSAGE, "exitCode": 137}
                    status["lastState"] = {"terminated": gone}
                    if not deleting:
                        status["restartCount"] += 1
        else:
            api_state, restart_count = _instance_state(latest, old)
            status = {
                "name": name,
                "state": api_state,
                "lastState": _instance_state(previous, None)[0]
                if previous is not None
                else _carried(old, latest),
                "ready": False,
                "restartCount": max(restart_count, int((old or {}).get("restartCount") or 0)),
                "image": latest.image or container.get("image", ""),
                "imageID": latest.image_id,
                "containerID": latest.container_uri,
            }
            if allocated is not None and name in allocated:
                status["resources"] = status_resources(allocated[name], latest)
                if allocated[name].get("requests") or {}:
                    status["allocatedResources"] = copy_json(allocated[name]["requests"])
        reason = waiting.get(name)
        ephemeral = role == ContainerRole.EPHEMERAL  # started once, never probed
        if reason is not None and (latest is None if ephemeral else _will_start(pod, container, latest)):
            if "terminated" in status["state"]:
                status["lastState"] = status["state"]
            waiting_state: dict[str, Any] = {"reason": reason.reason}
            if reason.message:
                waiting_state["message"] = reason.message
            status["state"] = {"waiting": waiting_state}
        if not ephemeral:
            ready, is_started = _probe_flags(container, role, status["state"], readiness, started)
            status["ready"] = ready
            status["started"] = is_started
        result.append(status)
    return result


# ---------------------------------------------------------------------------------------------
# The whole status: generateAPIPodStatus (pkg/kubelet/kubelet_pods.go)


def generate_pod_status(
    pod: Mapping[str, Any],
    state: PodRuntimeState | None,
    *,
    waiting: Mapping[str, ContainerWaiting],
    pod_is_terminal: bool,
    old_status: Mapping[str, Any] | None,
    readiness: Mapping[str, bool],
    started: Mapping[str, bool],
    host_ip: str,
    now: datetime,
    terminal_reason: tuple[str, str] | None = None,
    allocated: Mapping[str, Mapping[str, Any]] | None = None,
    resize_conditions: Sequence[Mapping[str, Any]] = (),
    allocated_pod: Mapping[str, Any] | None = None,
    pod_cgroup: LinuxResources | None = None,
) -> dict[str, Any]:
    """The API PodStatus the kubelet would publish for `pod` given what the runtime observed.

    `old_status` is the status manager's cached status (None: the API pod's status is used);
    `readiness`/`started` are probe results by container name (a container without the probe
    counts as ready/started once running); `terminal_reason` forces phase Failed with that
    reason and message, as the kubelet's PodSyncHandlers (ShouldEvict) do here: the pod
    workers pass `pods.policy.DEADLINE_EXCEEDED` once `past_active_deadline` holds
    (activeDeadlineSeconds), or the runtime's refusal of the spec. Only a terminal phase
    already in the API copy wins over it. `allocated` and `resize_conditions` are the pod
    worker's in-place resize state (pods/resize.py): the containers' allocated resources and
    the PodResizePending / PodResizeInProgress conditions; with them, `allocated_pod` (the pod
    with its allocated pod-level resources) and `pod_cgroup` (the pod cgroup's limits as last
    set, None: not known) give the pod-level `resources` and `allocatedResources`
    (status/pod_level.py).
    """
    spec = pod.get("spec") or {}
    api_status: Mapping[str, Any] = pod.get("status") or {}
    old: Mapping[str, Any] = old_status if old_status is not None else api_status

    restarting = should_restart_all(pod, state, old)

    def statuses(
        role: ContainerRole, key: str, alloc: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        olds = old.get(key) or []
        return container_statuses(pod, state, role, olds, waiting, readiness, started, alloc, restarting)

    init_statuses = statuses(ContainerRole.INIT, "initContainerStatuses", allocated)
    app_statuses = statuses(ContainerRole.APP, "containerStatuses", allocated)
    all_statuses = init_statuses + app_statuses  # the phase and conditions ignore ephemeral ones
    ephemeral_statuses = statuses(ContainerRole.EPHEMERAL, "ephemeralContainerStatuses")

    phase = get_phase(pod, all_statuses, pod_is_terminal)
    if not is_terminal_phase(phase):
        if is_terminal_phase(old.get("phase")):
            phase = old["phase"]
        elif is_terminal_phase(api_status.get("phase")):
            phase = api_status["phase"]
    reason = message = ""
    if phase == old.get("phase"):
        reason = old.get("reason") or api_status.get("reason") or ""
        message = old.get("message") or api_status.get("message") or ""
    if terminal_reason is not None:
        phase, (reason, message) = FAILED, terminal_reason
    if is_terminal_phase(api_status.get("phase")) and phase != api_status.get("phase"):
        phase = api_status["phase"]

    conditions: list[dict[str, Any]] = [
        copy_json(c)
        for c in api_status.get("conditions") or []
        if c.get("type") not in KUBELET_OWNED_CONDITIONS
    ]
    disruption = find_condition(old.get("conditions") or [], DISRUPTION_TARGET)
    if disruption is not None:
        conditions = [c for c in conditions if c.get("type") != DISRUPTION_TARGET]
        conditions.append(copy_json(disruption))
    conditions.append(ready_to_start_condition(pod, state))
    conditions.append(initialized_condition(spec, all_statuses, phase))
    conditions.append(ready_condition(spec, conditions, all_statuses, phase))
    conditions.append(containers_ready_condition(spec, all_statuses, phase))
    conditions.append(condition(POD_SCHEDULED, "True"))
    conditions.extend(copy_json(c) for c in resize_conditions)
    restart_all = restarting_condition(pod, state, restarting, phase)
    if restart_all is not None:
        conditions.append(restart_all)
    set_transition_times(conditions, old.get("conditions") or [], now)

    status: dict[str, Any] = {"phase": phase, "conditions": conditions}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    if host_ip:
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}]
    pod_ip = state.sandbox.ip if state is not None and state.sandbox is not None else ""
    if spec.get("hostNetwork") and not pod_ip:
        pod_ip = host_ip
    if pod_ip:
        status["podIP"] = pod_ip
        sandbox_ips = state.sandbox.ips if state is not None and state.sandbox is not None else ()
        status["podIPs"] = [{"ip": ip} for ip in sandbox_ips or (pod_ip,)]
    elif old.get("podIP"):
        # The sandbox is gone (pod finished): the last known IP stays, as on a kubelet node.
        status["podIP"] = old["podIP"]
        status["podIPs"] = copy_json(old.get("podIPs") or [{"ip": old["podIP"]}])
    status["startTime"] = old.get("startTime") or api_status.get("startTime") or format_time(now)
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    status["containerStatuses"] = sorted(app_statuses, key=lambda s: s["name"])
    if ephemeral_statuses:
        status["ephemeralContainerStatuses"] = sorted(ephemeral_statuses, key=lambda s: s["name"])
    status["qosClass"] = api_status.get("qosClass") or pod_qos_class(pod)
    if allocated is not None and allocated_pod is not None:
        resources, requests = pod_level_status(allocated_pod, allocated, pod_cgroup, phase == "Running")
        status["resources"] = resources
        if requests:
            status["allocatedResources"] = requests
    return status
