"""In-place pod resize (InPlacePodVerticalScaling): the kubelet's allocation and actuation.

A user changes `spec.containers[].resources`, or the pod-level `spec.resources`
(InPlacePodLevelResourcesVerticalScaling), through the pod's `resize` subresource; the pod
update reaches the pod worker like any other. Upstream: pkg/kubelet/allocation/
allocation_manager.go (handlePodResourcesResize: allocate what fits, else PodResizePending),
pkg/kubelet/kuberuntime/kuberuntime_manager.go (computePodResizeAction: per resource, the
container's resizePolicy says update in place or restart; computePodLevelResourcesResizeAction
and doPodResizeAction for the pod level: a container without its own limit runs with the pod's,
so a pod-level change resizes it too), pkg/kubelet/status/
status_manager.go (the PodResizePending / PodResizeInProgress conditions, with the pod's
generation as observedGeneration) and pkg/kubelet/events/resize.go (the Events' messages).

What lives here: the pure rules (`container_resources`, `pod_level`, `with_pod_level`,
`fit_message`, `resize_action`, `summary`; for the plan, `allocated_container`, the container as
allocated: what a (re)start uses, and `resize_needed`, what one running container needs:
nothing, an update in place or a restart), `ResizeState` (one pod's allocation: the containers'
and the pod level's, and its resize conditions) and `PodResizer`, which keeps each pod's state
and which the pod sync calls: `allocate` (admit the desired resources, containers' and pod
level's, or defer them, before the sync plans, by the pod's requests:
`kuberuntime/pod_resources.pod_requests`), `allocated_pod` (the pod with its allocated pod-level
resources: what the plan, the containers' starts and the status read), `update` (the
`Runtime.update_resources` call), `check_memory` (before those, a memory limit, the pod
cgroup's or a container's, below the current usage refused), `pod_cgroup` (the pod cgroup's
limits around the containers' resize), `finish` (clear PodResizeInProgress once every running
container and the pod cgroup run with the allocation), `release` (a terminated pod's
allocation no longer counts) and `forget`.
Must not: talk to an engine except through the Runtime, write pod status (the pod sync
generates it from the `ResizeState`) or start and stop containers (the pod sync does).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import format_time, meta, spec
from vk_common.qos import pod_qos_class
from vk_common.quantity import parse_quantity
from vk_provider.kuberuntime.pod_resources import (
    memory_request,
    pod_cgroup_resources,
    pod_level_limits,
    pod_requests,
)
from vk_provider.kuberuntime.resources import linux_resources
from vk_provider.pods.deps import SyncDeps
from vk_provider.pods.policy import field_path, now
from vk_provider.runtime.configs import PodCgroup
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRunState,
    ContainerStats,
    LinuxResources,
    RuntimeFailure,
)
from vk_provider.status.fields import POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING

log = get_logger("pods.workers")

# Condition reasons (k8s.io/api/core/v1).
DEFERRED = "Deferred"
ERROR = "Error"
# Event reasons (pkg/kubelet/events/event.go).
RESIZE_STARTED, RESIZE_COMPLETED = "ResizeStarted", "ResizeCompleted"
RESIZE_DEFERRED, RESIZE_ERROR = "ResizeDeferred", "ResizeError"
RESTART_CONTAINER = "RestartContainer"
RESIZE_RETRY_SECONDS = 5.0  # a deferred or failed resize is tried again this often


class ResizeAction(Enum):
    NONE = "none"
    UPDATE = "update"  # docker update, in place
    RESTART = "restart"  # a changed resource's resizePolicy is RestartContainer


def container_resources(pod: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The desired resources of the init containers (sidecars or not) and the app containers,
    by name: every one is resizable (allocation_manager.go IsResizableContainer, with
    InPlacePodVerticalScalingInitContainers locked on since v1.37)."""
    s = spec(pod)
    containers = [*(s.get("initContainers") or []), *(s.get("containers") or [])]
    return {str(c["name"]): dict(c.get("resources") or {}) for c in containers}


def pod_level(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The desired pod-level resources (`spec.resources`; {} for none)."""
    return dict(spec(pod).get("resources") or {})


def with_pod_level(pod: Mapping[str, Any], resources: Mapping[str, Any]) -> Mapping[str, Any]:
    """`pod` with `resources` as its pod-level resources (the allocated pod: the kubelet's
    allocation manager hands the sync the pod with its allocated resources)."""
    if pod_level(pod) == dict(resources):
        return pod
    new_spec = {k: v for k, v in spec(pod).items() if k != "resources"}
    if resources:
        new_spec["resources"] = dict(resources)
    return {**pod, "spec": new_spec}


def fit_message(requested: tuple[int, int], used: tuple[int, int], allocatable: Mapping[str, str]) -> str:
    """ "" when the pod fits beside the others, else the predicate admit handler's message.

    Upstream: pkg/kubelet/lifecycle/predicate.go (InsufficientResourceError, cpu first).
    """
    for name, want, taken in (("cpu", requested[0], used[0]), ("memory", requested[1], used[1])):
        raw = allocatable.get(name)
        if raw is None:
            continue
        quantity = parse_quantity(str(raw))
        capacity = math.floor(quantity * 1000) if name == "cpu" else math.floor(quantity)
        if want + taken > capacity:
            return (
                f"Node didn't have enough resource: {name}, requested: {want}, used: {taken}, "
                f"capacity: {capacity}"
            )
    return ""


def _go_order(resources: Mapping[str, Any]) -> dict[str, Any]:
    """ResourceRequirements as Go marshals it: limits, then requests, names sorted, empty left out."""
    out: dict[str, Any] = {}
    for key in ("limits", "requests"):
        values = resources.get(key) or {}
        if values:
            out[key] = {name: values[name] for name in sorted(values)}
    return out


def summary(
    pod: Mapping[str, Any], resources: Mapping[str, Mapping[str, Any]], generation: int, error: str = ""
) -> str:
    """The resources part of a resize Event (pkg/kubelet/events/resize.go makeResourceSummaryFromSpec:
    the containers' alone, a pod-level resize's too)."""
    s = spec(pod)
    init = [c["name"] for c in s.get("initContainers") or [] if c["name"] in resources]
    app = [c["name"] for c in s.get("containers") or [] if c["name"] in resources]
    out: dict[str, Any] = {}
    if init:
        out["initContainers"] = [{"name": n, "resources": _go_order(resources[n])} for n in init]
    if app:
        out["containers"] = [{"name": n, "resources": _go_order(resources[n])} for n in app]
    out["generation"] = generation
    if error:
        out["error"] = error
    return json.dumps(out, separators=(",", ":"))


def resize_action(container: Mapping[str, Any], cpu_changed: bool, memory_changed: bool) -> ResizeAction:
    """What a change of the container's cpu and/or memory needs, by its resizePolicy (default
    NotRequired): computePodResizeAction's determineContainerResize."""
    if not (cpu_changed or memory_changed):
        return ResizeAction.NONE
    policies = {p.get("resourceName"): p.get("restartPolicy") for p in container.get("resizePolicy") or []}
    for resource, changed in (("cpu", cpu_changed), ("memory", memory_changed)):
        if changed and policies.get(resource) == RESTART_CONTAINER:
            return ResizeAction.RESTART
    return ResizeAction.UPDATE


def _condition(
    type_: str, old: Mapping[str, Any] | None, reason: str, message: str, gen: int
) -> dict[str, Any]:
    """updatedPodResizeCondition: the transition time moves only when the reason changes."""
    stamp = format_time(now())
    cond: dict[str, Any] = {"type": type_, "status": "True", "observedGeneration": gen}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    same = old is not None and old.get("reason", "") == reason
    cond["lastProbeTime"] = stamp
    cond["lastTransitionTime"] = old["lastTransitionTime"] if same and old is not None else stamp
    return cond


def allocated_container(
    allocated: Mapping[str, Mapping[str, Any]], container: Mapping[str, Any]
) -> Mapping[str, Any]:
    """The container with its allocated resources (`allocated`: container name -> resources): a
    deferred resize does not start with the desired ones."""
    resources = allocated.get(str(container["name"]))
    if resources is None or resources == dict(container.get("resources") or {}):
        return container
    return {**container, "resources": dict(resources)}


def resize_needed(
    container: Mapping[str, Any],
    instance: ContainerInstance,
    field_path: str,
    pod_limits: Mapping[str, Any] | None = None,
    actuated_memory_request: int | None = None,
) -> ResizeAction:
    """What the running instance needs to run with the (allocated) container's resources, the
    limits it leaves out being the allocated pod level's (`pod_limits`). No cgroup v1 file
    holds a memory request: one that changed from the request the instance was started or last
    resized with (`actuated_memory_request`, None: not known) is a memory change too, as the
    kubelet compares against its actuated resources (determineContainerResize)."""
    if instance.resources is None:
        return ResizeAction.NONE
    want = linux_resources(container, field_path, pod_limits)
    have = instance.resources
    cpu = (want.cpu_shares, want.cpu_quota, want.cpu_period) != (
        have.cpu_shares,
        have.cpu_quota,
        have.cpu_period,
    )
    memory = want.memory_limit != have.memory_limit or (
        actuated_memory_request is not None and actuated_memory_request != memory_request(container)
    )
    return resize_action(container, cpu, memory)


def widened(old: LinuxResources | None, new: LinuxResources) -> LinuxResources:
    """Per limit the larger of `old` and `new` (0, no limit, being the largest; `old` None: not
    known, so none); the shares are the new ones (they weigh, they do not cap)."""
    if old is None:
        return LinuxResources(cpu_shares=new.cpu_shares)

    def larger(a: int, b: int) -> int:
        return 0 if 0 in (a, b) else max(a, b)

    quota = larger(old.cpu_quota, new.cpu_quota)
    return LinuxResources(
        cpu_shares=new.cpu_shares,
        cpu_quota=quota,
        cpu_period=new.cpu_period or old.cpu_period if quota else 0,
        memory_limit=larger(old.memory_limit, new.memory_limit),
    )


def _decreasing(have: int, want: int) -> bool:
    """A memory limit set where there was none (0), or lowered."""
    return want != 0 and (have == 0 or want < have)


def _memory_errors(
    pod_want: int, lowered: Mapping[str, tuple[str, int]], usage: Mapping[str, ContainerStats | None]
) -> list[str]:
    """validateMemoryResizeAction's errors: the pod's new memory limit (`pod_want`, 0: none)
    against its running containers' usage, each lowered container's (id -> (name, limit))
    against its own."""
    errors = []
    if pod_want:
        known = [s.memory_usage_bytes for s in usage.values() if s is not None]
        if not known:
            errors.append("missing pod memory usage")
        elif sum(known) >= pod_want:
            errors.append(
                f"attempting to set pod memory limit ({pod_want}) below current usage ({sum(known)})"
            )
    for container_id, (name, want) in lowered.items():
        stats = usage.get(container_id)
        if stats is None:
            errors.append(f'missing container "{name}" memory usage')
        elif stats.memory_usage_bytes >= want:
            errors.append(
                f'attempting to set container "{name}" memory limit ({want}) '
                f"below current usage ({stats.memory_usage_bytes})"
            )
    return errors


@dataclass
class ResizeState:
    """One pod's allocation (container name -> resources, None until admitted; `pod_level`: the
    pod-level resources, {} for none) and its conditions."""

    allocated: dict[str, dict[str, Any]] | None = None
    pod_level: dict[str, Any] | None = None
    pending: dict[str, Any] | None = None
    in_progress: dict[str, Any] | None = None
    cgroup: LinuxResources | None = None  # the pod cgroup's limits last set (None: not known)
    # runtime id -> the memory request its container was started or last resized with
    memory_requests: dict[str, int] = field(default_factory=dict)

    def conditions(self) -> list[dict[str, Any]]:
        return [c for c in (self.pending, self.in_progress) if c is not None]


class PodResizer:
    """Allocation across the node's pods and actuation of one pod's resize; it keeps each pod's
    `ResizeState` until the pod is forgotten."""

    def __init__(self, deps: SyncDeps) -> None:
        self._deps = deps
        self._states: dict[str, ResizeState] = {}
        self._requests: dict[str, tuple[int, int]] = {}  # uid -> allocated (milli-CPU, bytes)

    def state(self, uid: str) -> ResizeState:
        return self._states.setdefault(uid, ResizeState())

    def release(self, uid: str) -> None:
        """The pod terminated: its allocation no longer counts against the node."""
        self._requests.pop(uid, None)

    def forget(self, uid: str) -> None:
        """The pod is gone: drop its allocation and conditions."""
        self.release(uid)
        self._states.pop(uid, None)

    def _used_by_others(self, uid: str) -> tuple[int, int]:
        others = [r for u, r in self._requests.items() if u != uid]
        return sum(r[0] for r in others), sum(r[1] for r in others)

    def allocated_pod(self, uid: str, pod: Mapping[str, Any]) -> Mapping[str, Any]:
        """`pod` with its allocated pod-level resources (the spec's until allocated)."""
        level = self.state(uid).pod_level
        return pod if level is None else with_pod_level(pod, level)

    def allocate(self, uid: str, pod: Mapping[str, Any]) -> float | None:
        """Admit the pod's desired resources (the containers' and the pod level's) when the pod's
        requests with them fit beside the other pods' allocations, else keep the old allocation
        and set PodResizePending (handlePodResourcesResize). Returns in how many seconds to try
        a deferred resize again (None: nothing pending)."""
        state = self.state(uid)
        desired, level = container_resources(pod), pod_level(pod)
        generation = int(meta(pod).get("generation") or 0)
        if state.allocated is None or state.pod_level is None:
            # admission (or the provider restarted): the spec is allocated
            state.allocated, state.pod_level = desired, level
        elif desired == state.allocated and level == state.pod_level:
            state.pending = None  # nothing (left) to resize: a pending resize was reverted
        else:
            message = fit_message(
                pod_requests(with_pod_level(pod, level), desired),
                self._used_by_others(uid),
                self._deps.node_allocatable(),
            )
            if message:
                self._defer(state, pod, message, generation)
            else:
                state.allocated, state.pod_level, state.pending = desired, level, None
                state.in_progress = _condition(POD_RESIZE_IN_PROGRESS, None, "", "", generation)
                self._deps.recorder.event(
                    pod, "Normal", RESIZE_STARTED, f"Pod resize started: {summary(pod, desired, generation)}"
                )
                log.info("resize started", extra=pod_fields(pod, generation=generation))
        self._requests[uid] = pod_requests(self.allocated_pod(uid, pod), state.allocated)
        return RESIZE_RETRY_SECONDS if state.pending is not None else None

    def _defer(self, state: ResizeState, pod: Mapping[str, Any], message: str, generation: int) -> None:
        old = state.pending
        if old is not None and old.get("observedGeneration") == generation and old.get("message") == message:
            return
        state.pending = _condition(POD_RESIZE_PENDING, old, DEFERRED, message, generation)
        text = f"Pod resize {DEFERRED}: {summary(pod, container_resources(pod), generation, message)}"
        self._deps.recorder.event(pod, "Warning", RESIZE_DEFERRED, text)
        log.info("resize deferred", extra=pod_fields(pod, detail=message))

    async def update(
        self, uid: str, pod: Mapping[str, Any], container: Mapping[str, Any], instance: ContainerInstance
    ) -> bool:
        """Apply the resources in place (the limits the container leaves out: the allocated pod
        level's); a failure is PodResizeInProgress with reason Error."""
        fp = field_path(instance.role, str(container["name"]))
        try:
            want = linux_resources(container, fp, pod_level_limits(self.allocated_pod(uid, pod)))
            await self._deps.runtime.update_resources(instance.container_id, want)
        except RuntimeFailure as exc:
            self._failed(uid, pod, exc.message)
            log.info(
                "resize of container failed",
                extra=pod_fields(pod, container=container["name"], err=exc.message),
            )
            return False
        self.actuated(uid, instance.container_id, container)
        log.info("resized container in place", extra=pod_fields(pod, container=container["name"]))
        return True

    def actuated(self, uid: str, container_id: str, container: Mapping[str, Any]) -> None:
        """The runtime's `container_id` runs with `container`'s (allocated) resources."""
        self.state(uid).memory_requests[container_id] = memory_request(container)

    def _failed(self, uid: str, pod: Mapping[str, Any], message: str) -> None:
        """PodResizeInProgress with reason Error and `message`, and a ResizeError Event when the
        message is new."""
        state = self.state(uid)
        generation = int(meta(pod).get("generation") or 0)
        old = state.in_progress
        if old is None or old.get("message") != message:
            state.in_progress = _condition(POD_RESIZE_IN_PROGRESS, old, ERROR, message, generation)
            text = f"Pod resize error: {summary(pod, state.allocated or {}, generation, message)}"
            self._deps.recorder.event(pod, "Warning", RESIZE_ERROR, text)

    async def check_memory(
        self, uid: str, pod: Mapping[str, Any], resizes: Sequence[tuple[Mapping[str, Any], ContainerInstance]]
    ) -> bool:
        """validateMemoryResizeAction (kuberuntime_manager.go), before anything is written: no
        memory limit may be set (where none was) or lowered to what it holds now, the pod
        cgroup's (against its running containers' usage) or a container's of `resizes` (the
        in-place updates). False, with PodResizeInProgress reason Error and the kubelet's
        message (its errors aggregated), when one would be: the resize stays in progress and is
        tried again."""
        state, allocated = self.state(uid), self.allocated_pod(uid, pod)
        pod_want = 0
        if self._deps.runtime.host_security().pod_cgroups:
            want = pod_cgroup_resources(allocated, state.allocated).memory_limit
            pod_want = want if _decreasing(state.cgroup.memory_limit if state.cgroup else 0, want) else 0
        lowered: dict[str, tuple[str, int]] = {}  # container id -> (name, new limit)
        for container, instance in resizes:
            fp = field_path(instance.role, str(container["name"]))
            want = linux_resources(container, fp, pod_level_limits(allocated)).memory_limit
            if _decreasing(instance.resources.memory_limit if instance.resources else 0, want):
                lowered[instance.container_id] = (str(container["name"]), want)
        if not pod_want and not lowered:
            return True
        running = await self._deps.runtime.pod_state(uid)
        ids = (
            [c.container_id for c in running.containers if c.state == ContainerRunState.RUNNING]
            if running
            else []
        )
        ids += [i for i in lowered if i not in ids]
        usage = dict(zip(ids, await self._deps.runtime.container_stats(ids), strict=True))
        errors = _memory_errors(pod_want, lowered, usage)
        if not errors:
            return True
        message = "cannot decrease memory limits: " + (
            errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
        )
        self._failed(uid, pod, message)
        log.info("resize refused", extra=pod_fields(pod, err=message))
        return False

    def pod_cgroup_set(self, uid: str, resources: LinuxResources) -> None:
        """The pod cgroup was made with `resources` (with its sandbox)."""
        self.state(uid).cgroup = resources

    async def pod_cgroup(self, uid: str, pod: Mapping[str, Any], *, lift: bool) -> bool:
        """The pod cgroup's limits where the runtime keeps one, set when they differ from those
        last set: before the containers are resized (`lift`) to the larger of the old and the new
        ones (`widened`), so that no container's new limit is refused under the old ones; once
        they are, to the allocation's (ResourceConfigForPod of the allocated pod), as
        doPodResizeAction orders its writes (a resize that failed keeps the widened ones).
        False, with PodResizeInProgress reason Error, when the limits could not be set: the
        containers are not resized this pass."""
        if not self._deps.runtime.host_security().pod_cgroups:
            return True
        state = self.state(uid)
        wanted = pod_cgroup_resources(self.allocated_pod(uid, pod), state.allocated)
        if state.cgroup == wanted:
            return True
        try:
            if lift:
                wanted = widened(state.cgroup, wanted)
            if state.cgroup != wanted:
                await self._deps.runtime.update_pod_resources(uid, PodCgroup(pod_qos_class(pod), wanted))
        except RuntimeFailure as exc:
            self._failed(uid, pod, exc.message)
            log.info("resize of the pod cgroup failed", extra=pod_fields(pod, err=exc.message))
            return False
        state.cgroup = wanted
        return True

    def finish(self, uid: str, pod: Mapping[str, Any], actuated: bool) -> None:
        """Every running container and the pod cgroup run with the allocation: the resize is
        complete."""
        state = self.state(uid)
        if not actuated or state.in_progress is None:
            return
        generation = int(state.in_progress.get("observedGeneration") or 0)
        state.in_progress = None
        text = f"Pod resize completed: {summary(pod, state.allocated or {}, generation)}"
        self._deps.recorder.event(pod, "Normal", RESIZE_COMPLETED, text)
        log.info("resize completed", extra=pod_fields(pod, generation=generation))
