"""Pure computation of a pod's API status from what the runtime observed, as the kubelet does it.

What lives here: `generate_pod_status` (the kubelet's `generateAPIPodStatus` and
`convertToAPIContainerStatuses`, `pkg/kubelet/kubelet_pods.go`), `get_phase` (`getPhase`),
the condition generators of `pkg/kubelet/status/generate.go`, `pod_qos_class`
(`pkg/apis/core/helper/qos`), the condition ownership table (`pkg/kubelet/types/pod_status.go`)
and the timestamp format. Everything works on plain dicts in the API's JSON shape.
Must not: do I/O, read the clock (callers pass `now`), or keep state.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from vk_provider.quantity import parse_quantity
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
)

# Condition types (k8s.io/api/core/v1) and ownership (pkg/kubelet/types/pod_status.go).
POD_SCHEDULED = "PodScheduled"
READY = "Ready"
INITIALIZED = "Initialized"
CONTAINERS_READY = "ContainersReady"
READY_TO_START = "PodReadyToStartContainers"
DISRUPTION_TARGET = "DisruptionTarget"
KUBELET_OWNED_CONDITIONS = frozenset({POD_SCHEDULED, READY, INITIALIZED, CONTAINERS_READY, READY_TO_START})
KUBELET_SHARED_CONDITIONS = frozenset({DISRUPTION_TARGET})

# Condition reasons (pkg/kubelet/status/generate.go).
UNKNOWN_CONTAINER_STATUSES = "UnknownContainerStatuses"
POD_COMPLETED = "PodCompleted"
POD_FAILED = "PodFailed"
CONTAINERS_NOT_READY = "ContainersNotReady"
CONTAINERS_NOT_INITIALIZED = "ContainersNotInitialized"
READINESS_GATES_NOT_READY = "ReadinessGatesNotReady"

# Default waiting reasons (pkg/kubelet/kubelet_pods.go).
CONTAINER_CREATING = "ContainerCreating"
POD_INITIALIZING = "PodInitializing"
STATUS_UNKNOWN = "ContainerStatusUnknown"
UNKNOWN_TERMINATED_MESSAGE = "The container could not be located when the pod was terminated"
UNKNOWN_DELETED_MESSAGE = (
    "The container could not be located when the pod was deleted.  The container used to be Running"
)

SUCCEEDED = "Succeeded"
FAILED = "Failed"
RUNNING = "Running"
PENDING = "Pending"
TERMINAL_PHASES = frozenset({SUCCEEDED, FAILED})

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"


@dataclass(frozen=True)
class ContainerWaiting:
    """Why a container that is not running waits, as decided by the pod worker."""

    reason: str
    message: str = ""


def format_time(when: datetime) -> str:
    """RFC 3339 at whole seconds in UTC with a `Z`, as metav1.Time serialises (naive = UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_terminal_phase(phase: str | None) -> bool:
    return phase in TERMINAL_PHASES


def is_static_pod(pod: Mapping[str, Any]) -> bool:
    """A pod from a manifest file or URL (config.source is not the apiserver)."""
    source = (pod.get("metadata") or {}).get("annotations", {}).get(CONFIG_SOURCE_ANNOTATION)
    return source not in (None, "api")


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    return MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def is_restartable_init(container: Mapping[str, Any]) -> bool:
    """A sidecar: an init container with restartPolicy Always."""
    return container.get("restartPolicy") == "Always"


def _find(statuses: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    for status in statuses:
        if status.get("name") == name:
            return status
    return None


def _go_list(names: Sequence[str]) -> str:
    """Go's %s of a []string: `[a b]`."""
    return "[" + " ".join(names) + "]"


# ---------------------------------------------------------------------------------------------
# Phase: getPhase (pkg/kubelet/kubelet_pods.go)


def has_any_regular_container_started(spec: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]]) -> bool:
    names = {c["name"] for c in spec.get("containers") or []}
    for status in statuses:
        state = status.get("state") or {}
        if status.get("name") in names and ("running" in state or "terminated" in state):
            return True
    return False


def get_phase(pod: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]], pod_is_terminal: bool) -> str:
    """The pod phase from its container statuses (init and regular together)."""
    spec = pod.get("spec") or {}
    policy = spec.get("restartPolicy") or "Always"
    init_containers = spec.get("initContainers") or []
    pending_regular_init = pending_sidecar = failed_init = 0
    for container in init_containers:
        if is_restartable_init(container):
            continue
        status = _find(statuses, container["name"])
        state = (status or {}).get("state") or {}
        last = (status or {}).get("lastState") or {}
        if status is None or "running" in state:
            pending_regular_init += 1
        elif "terminated" in state:
            if state["terminated"].get("exitCode", 0) != 0:
                failed_init += 1
        elif "waiting" in state:
            if "terminated" in last:
                if last["terminated"].get("exitCode", 0) != 0:
                    failed_init += 1
            else:
                pending_regular_init += 1
        else:
            pending_regular_init += 1

    unknown = running = waiting = stopped = succeeded = 0
    for container in init_containers:
        if not is_restartable_init(container):
            continue
        status = _find(statuses, container["name"])
        if status is None:
            unknown += 1
            continue
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

    for container in spec.get("containers") or []:
        status = _find(statuses, container["name"])
        if status is None:
            unknown += 1
            continue
        state = status.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            if state["terminated"].get("exitCode", 0) == 0:
                succeeded += 1
        elif "waiting" in state:
            if "terminated" in (status.get("lastState") or {}):
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1

    if failed_init > 0 and policy == "Never":
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
        if pod_is_terminal and not is_static_pod(pod):
            return SUCCEEDED if stopped == succeeded else FAILED
        if policy == "Always":
            return RUNNING
        if stopped == succeeded:
            return SUCCEEDED
        if policy == "Never":
            return FAILED
        return RUNNING
    return PENDING


# ---------------------------------------------------------------------------------------------
# Conditions (pkg/kubelet/status/generate.go)


def _condition(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    cond: dict[str, Any] = {"type": type_, "status": status}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def containers_ready_condition(
    spec: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]] | None, phase: str
) -> dict[str, Any]:
    if statuses is None:
        return _condition(CONTAINERS_READY, "False", UNKNOWN_CONTAINER_STATUSES)
    unknown: list[str] = []
    unready: list[str] = []
    considered = [c for c in spec.get("initContainers") or [] if is_restartable_init(c)]
    considered += list(spec.get("containers") or [])
    for container in considered:
        status = _find(statuses, container["name"])
        if status is None:
            unknown.append(container["name"])
        elif not status.get("ready"):
            unready.append(container["name"])
    if phase == SUCCEEDED and not unknown:
        return _condition(CONTAINERS_READY, "False", POD_COMPLETED)
    if phase == FAILED:
        return _condition(CONTAINERS_READY, "False", POD_FAILED)
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_go_list(unknown)}")
    if unready:
        messages.append(f"containers with unready status: {_go_list(unready)}")
    if messages:
        return _condition(CONTAINERS_READY, "False", CONTAINERS_NOT_READY, ", ".join(messages))
    return _condition(CONTAINERS_READY, "True")


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
        found = _find_condition(conditions, gate_type)
        if found is None:
            messages.append(f'corresponding condition of pod readiness gate "{gate_type}" does not exist.')
        elif found.get("status") != "True":
            messages.append(
                f'the status of pod readiness gate "{gate_type}" is not "True", but {found.get("status")}'
            )
    if messages:
        return _condition(READY, "False", READINESS_GATES_NOT_READY, ", ".join(messages))
    return _condition(READY, "True")


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
    current = _find_condition(conditions, READY)
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
        return _condition(INITIALIZED, "False", UNKNOWN_CONTAINER_STATUSES)
    statuses = statuses or []
    unknown: list[str] = []
    incomplete: list[str] = []
    for container in init_containers:
        status = _find(statuses, container["name"])
        if status is None:
            unknown.append(container["name"])
        elif is_restartable_init(container):
            if not status.get("started"):
                incomplete.append(container["name"])
        elif not status.get("ready"):
            incomplete.append(container["name"])
    if phase == SUCCEEDED and not unknown:
        return _condition(INITIALIZED, "True", POD_COMPLETED)
    if has_any_regular_container_started(spec, statuses):
        return _condition(INITIALIZED, "True")
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_go_list(unknown)}")
    if incomplete:
        messages.append(f"containers with incomplete status: {_go_list(incomplete)}")
    if messages:
        return _condition(INITIALIZED, "False", CONTAINERS_NOT_INITIALIZED, ", ".join(messages))
    return _condition(INITIALIZED, "True")


def ready_to_start_condition(pod: Mapping[str, Any], state: PodRuntimeState | None) -> dict[str, Any]:
    """True while the pod's sandbox runs with its network (the kubelet: no new sandbox needed)."""
    sandbox = state.sandbox if state is not None else None
    host_network = bool((pod.get("spec") or {}).get("hostNetwork"))
    ok = sandbox is not None and sandbox.running and (bool(sandbox.ip) or host_network)
    return _condition(READY_TO_START, "True" if ok else "False")


def _find_condition(conditions: Iterable[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    for cond in conditions:
        if cond.get("type") == type_:
            return cond
    return None


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
        old = _find_condition(olds, cond["type"])
        if old is not None and old.get("status") == cond.get("status") and old.get("lastTransitionTime"):
            cond["lastTransitionTime"] = old["lastTransitionTime"]
        else:
            cond["lastTransitionTime"] = format_time(now)
        cond.setdefault("lastProbeTime", None)


# ---------------------------------------------------------------------------------------------
# Container statuses: convertToAPIContainerStatuses (pkg/kubelet/kubelet_pods.go)


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


def _should_restart(
    pod: Mapping[str, Any], instance: ContainerInstance | None, role: ContainerRole, sidecar: bool
) -> bool:
    """kubecontainer.ShouldContainerBeRestarted for a container that is not running."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if instance is None:
        return True
    if instance.state == ContainerRunState.RUNNING:
        return False
    if instance.state != ContainerRunState.EXITED:
        return True
    if role == ContainerRole.INIT and not sidecar and (instance.exit_code or 0) == 0:
        return False
    if sidecar:
        return True
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    if policy == "Never":
        return False
    if policy == "OnFailure":
        return (instance.exit_code or 0) != 0
    return True


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
    if role == ContainerRole.INIT and not is_restartable_init(container):
        terminated = state.get("terminated")
        return bool(terminated is not None and terminated.get("exitCode") == 0), "running" in state
    if "running" not in state:
        return False, False
    is_started = started.get(name, "startupProbe" not in container)
    if not is_started:
        return False, False
    return readiness.get(name, "readinessProbe" not in container), True


def container_statuses(
    pod: Mapping[str, Any],
    state: PodRuntimeState | None,
    role: ContainerRole,
    old_statuses: Sequence[Mapping[str, Any]],
    waiting: Mapping[str, ContainerWaiting],
    readiness: Mapping[str, bool],
    started: Mapping[str, bool],
) -> list[dict[str, Any]]:
    """API statuses of the init (`role=INIT`) or regular (`role=APP`) containers, in spec order."""
    spec = pod.get("spec") or {}
    containers = spec.get("initContainers" if role == ContainerRole.INIT else "containers") or []
    has_init = bool(spec.get("initContainers"))
    default_reason = POD_INITIALIZING if has_init else CONTAINER_CREATING
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    result: list[dict[str, Any]] = []
    for container in containers:
        name = container["name"]
        old = _find(old_statuses, name)
        latest = state.latest(name, role) if state is not None else None
        previous = state.previous(name, role) if state is not None else None
        sidecar = role == ContainerRole.INIT and is_restartable_init(container)
        status: dict[str, Any]
        if latest is None:
            if old is not None and "terminated" in (old.get("state") or {}):
                status = copy.deepcopy(dict(old))
            else:
                status = {
                    "name": name,
                    "state": {"waiting": {"reason": default_reason}},
                    "lastState": copy.deepcopy((old or {}).get("lastState") or {}),
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
                "lastState": _instance_state(previous, None)[0] if previous is not None else {},
                "ready": False,
                "restartCount": restart_count,
                "image": latest.image or container.get("image", ""),
                "imageID": latest.image_id,
                "containerID": latest.container_uri,
            }
        reason = waiting.get(name)
        if reason is not None and _should_restart(pod, latest, role, sidecar):
            if "terminated" in status["state"]:
                status["lastState"] = status["state"]
            waiting_state: dict[str, Any] = {"reason": reason.reason}
            if reason.message:
                waiting_state["message"] = reason.message
            status["state"] = {"waiting": waiting_state}
        ready, is_started = _probe_flags(container, role, status["state"], readiness, started)
        status["ready"] = ready
        status["started"] = is_started
        result.append(status)
    return result


# ---------------------------------------------------------------------------------------------
# QoS class: ComputePodQOS (pkg/apis/core/helper/qos/qos.go)


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
) -> dict[str, Any]:
    """The API PodStatus the kubelet would publish for `pod` given what the runtime observed.

    `old_status` is the status manager's cached status (None: the API pod's status is used);
    `readiness`/`started` are probe results by container name (a container without the probe
    counts as ready/started once running); `terminal_reason` forces phase Failed with that
    reason and message, as the kubelet's PodSyncHandlers (ShouldEvict) do here: the pod
    workers pass `pods.policy.DEADLINE_EXCEEDED` once `past_active_deadline` holds
    (activeDeadlineSeconds), or the runtime's refusal of the spec. Only a terminal phase
    already in the API copy wins over it.
    """
    spec = pod.get("spec") or {}
    api_status: Mapping[str, Any] = pod.get("status") or {}
    old: Mapping[str, Any] = old_status if old_status is not None else api_status

    init_statuses = container_statuses(
        pod, state, ContainerRole.INIT, old.get("initContainerStatuses") or [], waiting, readiness, started
    )
    app_statuses = container_statuses(
        pod, state, ContainerRole.APP, old.get("containerStatuses") or [], waiting, readiness, started
    )
    all_statuses = init_statuses + app_statuses

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
        copy.deepcopy(dict(c))
        for c in api_status.get("conditions") or []
        if c.get("type") not in KUBELET_OWNED_CONDITIONS
    ]
    disruption = _find_condition(old.get("conditions") or [], DISRUPTION_TARGET)
    if disruption is not None:
        conditions = [c for c in conditions if c.get("type") != DISRUPTION_TARGET]
        conditions.append(copy.deepcopy(dict(disruption)))
    conditions.append(ready_to_start_condition(pod, state))
    conditions.append(initialized_condition(spec, all_statuses, phase))
    conditions.append(ready_condition(spec, conditions, all_statuses, phase))
    conditions.append(containers_ready_condition(spec, all_statuses, phase))
    conditions.append(_condition(POD_SCHEDULED, "True"))
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
        status["podIPs"] = [{"ip": pod_ip}]
    elif old.get("podIP"):
        # The sandbox is gone (pod finished): the last known IP stays, as on a kubelet node.
        status["podIP"] = old["podIP"]
        status["podIPs"] = copy.deepcopy(old.get("podIPs") or [{"ip": old["podIP"]}])
    status["startTime"] = old.get("startTime") or api_status.get("startTime") or format_time(now)
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    status["containerStatuses"] = sorted(app_statuses, key=lambda s: s["name"])
    status["qosClass"] = api_status.get("qosClass") or pod_qos_class(pod)
    return status
