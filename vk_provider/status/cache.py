"""The status manager's cache rules as pure functions: what an accepted status update looks like.

What lives here: `VersionedStatus` (one cache entry), `update_status` (the kubelet's
`updateStatusInternal`: state-transition guard, lastTransitionTime, fixed startTime,
normalisation, dedup, version +1), `normalize_status`, `semantic` / `semantic_field` (values as
the API reads them back), `status_equal_by_kubelet`
(`isPodStatusByKubeletEqual`), `terminated_status` (`TerminatePod`) and
`with_container_flag` (`SetContainerReadiness` / `SetContainerStartup`). Upstream:
`pkg/kubelet/status/status_manager.go`. Must not: do I/O, read the clock or log; the
manager (manager.py) does that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from vk_common.objects import (
    all_containers_could_restart,
    container_should_restart,
    copy_json,
    format_time,
    is_sidecar,
    is_static,
    parse_time,
    restart_policy,
    uid,
)
from vk_common.objects import spec as pod_spec
from vk_common.quantity import parse_quantity
from vk_provider.status.conditions import containers_ready_condition, ready_condition, set_transition_times
from vk_provider.status.fields import (
    CONTAINERS_READY,
    KUBELET_OWNED_CONDITIONS,
    KUBELET_SHARED_CONDITIONS,
    POD_RESIZE_IN_PROGRESS,
    POD_RESIZE_PENDING,
    READY,
    STATUS_UNKNOWN,
    UNKNOWN_TERMINATED_MESSAGE,
    is_terminal_phase,
)

RESIZE_CONDITIONS = frozenset({POD_RESIZE_PENDING, POD_RESIZE_IN_PROGRESS})
# kubecontainer.MaxPodTerminationMessageLogLength, shared by all containers of a pod.
MAX_POD_TERMINATION_MESSAGE_BYTES = 1024 * 12

# The parts of PodStatus the kubelet writes; everything else belongs to other writers.
KUBELET_STATUS_FIELDS = (
    "phase",
    "reason",
    "message",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "qosClass",
    "initContainerStatuses",
    "containerStatuses",
    "ephemeralContainerStatuses",
    "observedGeneration",
    "resources",  # pod level (status/pod_level.py)
    "allocatedResources",
)
# The kubelet's fields that hold quantities: "500m" and "0.5" are the same value.
QUANTITY_FIELDS = frozenset({"resources", "allocatedResources"})


@dataclass
class VersionedStatus:
    """One cache entry: the status to publish for a pod UID, and for which API object."""

    version: int
    pod: Mapping[str, Any]  # the pod it belongs to (an API pod, or a static pod)
    status: dict[str, Any]
    pod_is_finished: bool = False
    at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def uid(self) -> str:
        return uid(self.pod)

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"].get("namespace") or "default")


def owned_condition(type_: str | None) -> bool:
    return type_ in KUBELET_OWNED_CONDITIONS or type_ in KUBELET_SHARED_CONDITIONS


def _normalize_time(value: Any) -> Any:
    """Truncate an RFC 3339 timestamp to whole seconds in `Z` form."""
    if not isinstance(value, str) or not value:
        return value
    parsed = parse_time(value)
    return value if parsed is None else format_time(parsed)


def _normalize_state(state: dict[str, Any], max_message: int) -> None:
    running = state.get("running")
    if isinstance(running, dict) and "startedAt" in running:
        running["startedAt"] = _normalize_time(running["startedAt"])
    terminated = state.get("terminated")
    if isinstance(terminated, dict):
        for key in ("startedAt", "finishedAt"):
            if key in terminated:
                terminated[key] = _normalize_time(terminated[key])
        message = terminated.get("message")
        if isinstance(message, str):
            raw = message.encode()
            if len(raw) > max_message:
                terminated["message"] = raw[:max_message].decode(errors="ignore")


def normalize_status(status: dict[str, Any]) -> dict[str, Any]:
    """`normalizeStatus`, in place: second-precision times, bounded messages, sorted statuses."""
    if status.get("startTime"):
        status["startTime"] = _normalize_time(status["startTime"])
    for cond in status.get("conditions") or []:
        for key in ("lastProbeTime", "lastTransitionTime"):
            if cond.get(key):
                cond[key] = _normalize_time(cond[key])
    lists = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
    count = sum(len(status.get(name) or []) for name in lists)
    max_message = MAX_POD_TERMINATION_MESSAGE_BYTES // max(count, 1)
    for name in lists:
        for cstatus in status.get(name) or []:
            _normalize_state(cstatus.setdefault("state", {}), max_message)
            _normalize_state(cstatus.setdefault("lastState", {}), max_message)
    for name in ("containerStatuses", "ephemeralContainerStatuses"):
        if status.get(name):
            status[name] = sorted(status[name], key=lambda s: s.get("name", ""))
    return status


def semantic(value: Any) -> Any:
    """Empty values (None, "", {}, []) as absent, recursively, as omitempty fields read back from the API."""
    kind = type(value)
    if kind is str:  # most of a status: no walk, no ABC check
        return value or None
    if kind is int or kind is bool or kind is float:
        return value
    if kind is dict or isinstance(value, Mapping):
        out = {k: semantic(v) for k, v in value.items()}
        value = {k: v for k, v in out.items() if v is not None}
    elif isinstance(value, list | tuple):
        value = [semantic(v) for v in value]
    return None if value in ("", {}, []) else value


def semantic_field(key: str, value: Any) -> Any:
    """`semantic`, with the quantities of a QUANTITY_FIELDS field compared by value."""
    value = semantic(value)
    return _quantities(value) if key in QUANTITY_FIELDS else value


def _quantities(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _quantities(v) for k, v in value.items()}
    try:
        return parse_quantity(str(value))
    except ValueError:
        return value


def status_equal_by_kubelet(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """`isPodStatusByKubeletEqual` restricted to the fields the kubelet writes.

    Owned and shared conditions must agree on status, reason and message (their times and
    the conditions of other writers do not count); the kubelet's other fields must be
    semantically equal.
    """
    new_conds = {c.get("type"): c for c in new.get("conditions") or [] if owned_condition(c.get("type"))}
    old_conds = {c.get("type"): c for c in old.get("conditions") or [] if owned_condition(c.get("type"))}
    if new_conds.keys() != old_conds.keys():
        return False
    for type_, cond in new_conds.items():
        before = old_conds[type_]
        for key in ("status", "reason", "message"):
            if (before.get(key) or "") != (cond.get(key) or ""):
                return False
    # Equal as they are is equal semantically (the usual answer of a resync: no rewrite).
    return all(
        (a := old.get(key)) == (b := new.get(key)) or semantic_field(key, a) == semantic_field(key, b)
        for key in KUBELET_STATUS_FIELDS
    )


def _spec_container(spec: Mapping[str, Any], key: str, name: str) -> Mapping[str, Any]:
    for container in spec.get(key) or []:
        if container.get("name") == name:
            return container  # type: ignore[no-any-return]
    return {}


def illegal_transition(old: Mapping[str, Any], new: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
    """`checkContainerStateTransition`: the name of a terminated container that came back, if any.
    None for a pod that may restart all its containers in place (a RestartAllContainers rule),
    and an app container may come back when its own restart policy and rules let it
    (ContainerRestartRules)."""
    spec = pod_spec(pod)
    policy = restart_policy(pod)
    if policy == "Always" or all_containers_could_restart(pod):
        return None
    for key in ("containerStatuses", "initContainerStatuses"):
        news = {s.get("name"): s for s in new.get(key) or []}
        for before in old.get(key) or []:
            name = before.get("name", "")
            if key == "initContainerStatuses" and is_sidecar(_spec_container(spec, "initContainers", name)):
                continue
            terminated = (before.get("state") or {}).get("terminated")
            if terminated is None:
                continue
            if terminated.get("exitCode", 0) != 0 and policy == "OnFailure":
                continue
            app = _spec_container(spec, "containers", name) if key == "containerStatuses" else {}
            if app and container_should_restart(pod, app, int(terminated.get("exitCode", 0) or 0)):
                continue
            after = news.get(name)
            if after is not None and "terminated" not in (after.get("state") or {}):
                return str(name)
    return None


def update_status(
    cached: VersionedStatus | None,
    pod: Mapping[str, Any],
    status: Mapping[str, Any],
    *,
    force: bool,
    finished: bool,
    now: datetime,
) -> tuple[VersionedStatus | None, str]:
    """`updateStatusInternal`: the new cache entry, or None and why the update was dropped."""
    old: Mapping[str, Any] = cached.status if cached is not None else (pod.get("status") or {})
    new: dict[str, Any] = copy_json(status)
    bad = illegal_transition(old, new, pod)
    if bad is not None:
        return None, f"terminated container {bad} attempted illegal transition to non-terminated state"
    if is_terminal_phase(old.get("phase")) and new.get("phase") != old.get("phase"):
        # A terminal phase is never left (generateAPIPodStatus forces it back).
        new["phase"] = old["phase"]
        for key in ("reason", "message"):
            if old.get(key):
                new[key] = old[key]
            else:
                new.pop(key, None)
    set_transition_times(
        [c for c in new.get("conditions") or [] if owned_condition(c.get("type"))],
        old.get("conditions") or [],
        now,
    )
    new["startTime"] = old.get("startTime") or new.get("startTime") or format_time(now)
    _observe_generation(new, old, pod)
    normalize_status(new)
    if cached is not None and not force and status_equal_by_kubelet(cached.status, new):
        return None, "unchanged"
    if cached is not None and cached.pod_is_finished:
        finished = True
    return (
        VersionedStatus(
            version=(cached.version if cached is not None else 0) + 1,
            pod=pod,
            status=new,
            pod_is_finished=finished,
            at=cached.at if cached is not None else now,
        ),
        "",
    )


def _observe_generation(new: dict[str, Any], old: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
    """PodObservedGenerationTracking (GA): status.observedGeneration is the pod's
    metadata.generation, never lowered (`SetPodStatus` and `updateStatusInternal`), and each
    kubelet-owned condition carries the generation it was computed for
    (`CalculatePodConditionObservedGeneration`; pkg/api/v1/pod/util.go), except the resize
    conditions, which name the generation of the resize (pods/resize.py). A pod without a
    generation (a static pod's manifest) gets none."""
    generation = int((pod.get("metadata") or {}).get("generation") or 0)
    if not generation:
        return
    new["observedGeneration"] = max(generation, int(old.get("observedGeneration") or 0))
    for cond in new.get("conditions") or []:
        if cond.get("type") in KUBELET_OWNED_CONDITIONS - RESIZE_CONDITIONS:
            cond["observedGeneration"] = generation


def _unknown_terminated() -> dict[str, Any]:
    return {"terminated": {"reason": STATUS_UNKNOWN, "message": UNKNOWN_TERMINATED_MESSAGE, "exitCode": 137}}


def has_pod_initialized(pod: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """`hasPodInitialized`: no init containers, a regular container left Waiting, or init is done."""
    init_specs = (pod.get("spec") or {}).get("initContainers") or []
    if not init_specs:
        return True
    for cstatus in status.get("containerStatuses") or []:
        if "terminated" in (cstatus.get("lastState") or {}) or "waiting" not in (cstatus.get("state") or {}):
            return True
    inits = status.get("initContainerStatuses") or []
    if inits:
        last = inits[-1]
        state = last.get("state") or {}
        last_spec = _spec_container(pod.get("spec") or {}, "initContainers", last.get("name", ""))
        if is_sidecar(last_spec):
            return "running" in state
        return "terminated" in state and state["terminated"].get("exitCode", 0) == 0
    return False


def _initialized_prefix(statuses: Sequence[Mapping[str, Any]]) -> int:
    """How many init statuses have attempted to start (`initializedContainers`), at least one."""
    for index in range(len(statuses) - 1, -1, -1):
        cstatus = statuses[index]
        if "waiting" not in (cstatus.get("state") or {}) or "terminated" in (cstatus.get("lastState") or {}):
            return index + 1
    return min(len(statuses), 1)


def terminated_status(pod: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """The status `TerminatePod` stores: unfinished containers become ContainerStatusUnknown (137).

    A non-static pod still Pending or Running becomes Failed; static pods get no terminal phase.
    """
    status: dict[str, Any] = copy_json(base)
    if has_pod_initialized(pod, status):
        for cstatus in status.get("containerStatuses") or []:
            if "terminated" not in (cstatus.get("state") or {}):
                cstatus["state"] = _unknown_terminated()
    inits = status.get("initContainerStatuses") or []
    for cstatus in inits[: _initialized_prefix(inits)]:
        if "terminated" not in (cstatus.get("state") or {}):
            cstatus["state"] = _unknown_terminated()
    if not is_static(pod) and not is_terminal_phase(status.get("phase")):
        status["phase"] = "Failed"
    return status


def with_container_flag(
    pod: Mapping[str, Any], status: Mapping[str, Any], container_name: str, flag: str, value: bool
) -> dict[str, Any] | None:
    """The status with one container's `ready` or `started` flag set, or None if nothing changes.

    Regular statuses are searched first, then init statuses; setting `ready` regenerates the
    Ready and ContainersReady conditions (init statuses included, as from v1.32).
    """
    new: dict[str, Any] = copy_json(status)
    target = None
    for key in ("containerStatuses", "initContainerStatuses"):
        for cstatus in new.get(key) or []:
            if cstatus.get("name") == container_name:
                target = cstatus
                break
        if target is not None:
            break
    if target is None or bool(target.get(flag)) == value:
        return None
    target[flag] = value
    if flag == "ready":
        spec = pod.get("spec") or {}
        statuses = list(new.get("initContainerStatuses") or []) + list(new.get("containerStatuses") or [])
        phase = new.get("phase", "")
        conditions = new.get("conditions") or []
        regenerated = {
            READY: ready_condition(spec, conditions, statuses, phase),
            CONTAINERS_READY: containers_ready_condition(spec, statuses, phase),
        }
        for index, cond in enumerate(conditions):
            if cond.get("type") in regenerated:
                conditions[index] = regenerated.pop(cond["type"])
        conditions.extend(regenerated.values())
        new["conditions"] = conditions
    return new
