"""In-place pod resize (InPlacePodVerticalScaling): the kubelet's allocation and actuation.

A user changes `spec.containers[].resources` through the pod's `resize` subresource; the pod
update reaches the pod worker like any other. Upstream: pkg/kubelet/allocation/
allocation_manager.go (handlePodResourcesResize: allocate what fits, else PodResizePending),
pkg/kubelet/kuberuntime/kuberuntime_manager.go (computePodResizeAction: per resource, the
container's resizePolicy says update in place or restart), pkg/kubelet/status/
status_manager.go (the PodResizePending / PodResizeInProgress conditions, with the pod's
generation as observedGeneration) and pkg/kubelet/events/resize.go (the Events' messages).

What lives here: the pure rules (`container_resources`, `fit_message`,
`resize_action`, `summary`; for the plan, `allocated_container`, the container as allocated:
what a (re)start uses, and `resize_needed`, what one running container needs: nothing, an
update in place or a restart), `ResizeState` (one pod's allocation and resize conditions) and
`PodResizer`, which keeps each pod's state and which the pod sync calls: `allocate` (admit the
desired resources or defer them, before the sync plans, by the pod's requests:
`kuberuntime/pod_resources.pod_requests`), `update` (the
`Runtime.update_resources` call, a memory limit below the current usage refused first),
`pod_cgroup` (the pod cgroup's limits around the containers' resize), `finish` (clear
PodResizeInProgress once every running container runs with its allocation),
`release` (a terminated pod's allocation no longer counts) and `forget`.
Must not: talk to an engine except through the Runtime, write pod status (the pod sync
generates it from the `ResizeState`) or start and stop containers (the pod sync does).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import format_time, meta, spec
from vk_common.qos import pod_qos_class
from vk_common.quantity import parse_quantity
from vk_provider.kuberuntime.pod_resources import pod_cgroup_resources, pod_requests
from vk_provider.kuberuntime.resources import linux_resources
from vk_provider.pods.deps import SyncDeps
from vk_provider.pods.policy import field_path, now
from vk_provider.runtime.configs import PodCgroup
from vk_provider.runtime.types import ContainerInstance, LinuxResources, RuntimeFailure
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
    """The resources part of a resize Event (pkg/kubelet/events/resize.go makeResourceSummaryFromSpec)."""
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


def resize_needed(container: Mapping[str, Any], instance: ContainerInstance, field_path: str) -> ResizeAction:
    """What the running instance needs to run with the (allocated) container's resources."""
    if instance.resources is None:
        return ResizeAction.NONE
    want = linux_resources(container, field_path)
    have = instance.resources
    cpu = (want.cpu_shares, want.cpu_quota, want.cpu_period) != (
        have.cpu_shares,
        have.cpu_quota,
        have.cpu_period,
    )
    return resize_action(container, cpu, want.memory_limit != have.memory_limit)


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


@dataclass
class ResizeState:
    """One pod's allocation (container name -> resources, None until admitted) and its conditions."""

    allocated: dict[str, dict[str, Any]] | None = None
    pending: dict[str, Any] | None = None
    in_progress: dict[str, Any] | None = None
    cgroup: LinuxResources | None = None  # the pod cgroup's limits last set (None: not known)

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

    def allocate(self, uid: str, pod: Mapping[str, Any]) -> float | None:
        """Admit the pod's desired resources when they fit beside the other pods' allocations,
        else keep the old allocation and set PodResizePending (handlePodResourcesResize).
        Returns in how many seconds to try a deferred resize again (None: nothing pending)."""
        state = self.state(uid)
        desired = container_resources(pod)
        generation = int(meta(pod).get("generation") or 0)
        if state.allocated is None:  # admission (or the provider restarted): the spec is allocated
            state.allocated = desired
        elif desired == state.allocated:
            state.pending = None  # nothing (left) to resize: a pending resize was reverted
        else:
            message = fit_message(
                pod_requests(pod, desired), self._used_by_others(uid), self._deps.node_allocatable()
            )
            if message:
                self._defer(state, pod, message, generation)
            else:
                state.allocated, state.pending = desired, None
                state.in_progress = _condition(POD_RESIZE_IN_PROGRESS, None, "", "", generation)
                self._deps.recorder.event(
                    pod, "Normal", RESIZE_STARTED, f"Pod resize started: {summary(pod, desired, generation)}"
                )
                log.info("resize started", extra=pod_fields(pod, generation=generation))
        self._requests[uid] = pod_requests(pod, state.allocated)
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
        """Apply the resources in place; a failure is PodResizeInProgress with reason Error."""
        fp = field_path(instance.role, str(container["name"]))
        try:
            await self._check_memory_decrease(container, instance, fp)
            await self._deps.runtime.update_resources(instance.container_id, linux_resources(container, fp))
        except RuntimeFailure as exc:
            state = self.state(uid)
            generation = int(meta(pod).get("generation") or 0)
            old = state.in_progress
            message = exc.message
            if old is None or old.get("message") != message:
                state.in_progress = _condition(POD_RESIZE_IN_PROGRESS, old, ERROR, message, generation)
                text = f"Pod resize error: {summary(pod, state.allocated or {}, generation, message)}"
                self._deps.recorder.event(pod, "Warning", RESIZE_ERROR, text)
            log.info(
                "resize of container failed",
                extra=pod_fields(pod, container=container["name"], err=exc.message),
            )
            return False
        log.info("resized container in place", extra=pod_fields(pod, container=container["name"]))
        return True

    async def _check_memory_decrease(
        self, container: Mapping[str, Any], instance: ContainerInstance, fp: str
    ) -> None:
        """A memory limit may not go below what the container uses now (validateMemoryResizes
        in kuberuntime_manager.go); the resize stays in progress with the error and is retried."""
        want = linux_resources(container, fp).memory_limit
        have = instance.resources.memory_limit if instance.resources is not None else 0
        if want == 0 or (have != 0 and want >= have):
            return
        name = container["name"]
        (stats,) = await self._deps.runtime.container_stats([instance.container_id])
        if stats is None:
            raise RuntimeFailure(f'cannot decrease memory limits: missing container "{name}" memory usage')
        if stats.memory_usage_bytes >= want:
            raise RuntimeFailure(
                f'cannot decrease memory limits: attempting to set container "{name}" memory limit ({want}) '
                f"below current usage ({stats.memory_usage_bytes})"
            )

    def pod_cgroup_set(self, uid: str, resources: LinuxResources) -> None:
        """The pod cgroup was made with `resources` (with its sandbox)."""
        self.state(uid).cgroup = resources

    async def pod_cgroup(self, uid: str, pod: Mapping[str, Any], *, lift: bool) -> None:
        """The pod cgroup's limits where the runtime keeps one, set when they differ from those
        last set: before the containers are resized (`lift`) to the larger of the old and the new
        ones (`widened`), so that no container's new limit is refused under the old ones; once
        they are, to the allocation's (ResourceConfigForPod), as doPodResizeAction orders its
        writes (a resize that failed keeps the widened ones)."""
        if not self._deps.runtime.host_security().pod_cgroups:
            return
        state = self.state(uid)
        wanted = pod_cgroup_resources(pod, state.allocated)
        if state.cgroup == wanted:
            return
        if lift:
            wanted = widened(state.cgroup, wanted)
        await self._deps.runtime.update_pod_resources(uid, PodCgroup(pod_qos_class(pod), wanted))
        state.cgroup = wanted

    def finish(self, uid: str, pod: Mapping[str, Any], actuated: bool) -> None:
        """Every running container runs with its allocation: the resize is complete."""
        state = self.state(uid)
        if not actuated or state.in_progress is None:
            return
        generation = int(state.in_progress.get("observedGeneration") or 0)
        state.in_progress = None
        text = f"Pod resize completed: {summary(pod, state.allocated or {}, generation)}"
        self._deps.recorder.event(pod, "Normal", RESIZE_COMPLETED, text)
        log.info("resize completed", extra=pod_fields(pod, generation=generation))
