"""The pod sync's plan: what to do with one pod's sandbox and containers, before anything is done.

What lives here: `PodSnapshot` (the read-only inputs: the pod, the runtime's `PodRuntimeState`,
the allocated resources and the probes' verdicts on the running instances), `ContainerAction`
and `PodActions` (the plan), and `compute_pod_actions`, which makes the plan as the kubelet's
computePodActions does (pkg/kubelet/kuberuntime/kuberuntime_manager.go, with
computeInitContainerActions for the init containers and sidecars): a new sandbox when the
pod's is gone (stopping what ran in the old one; none for a finished pod or a Never pod that
ran), or, for a pod restarting all its containers in place (RestartAllContainers), every init
and app container reset and nothing else; the new ephemeral containers, the init containers one
at a time (sidecars started in order, each waited for until its startup probe passes), then the
app containers: start, restart per restartPolicy, replace one whose spec changed, resize one
whose allocation changed, its own or the pod level's it inherits a limit from (in place or by
a restart, by its resizePolicy), kill one whose
liveness or startup probe failed.
Must not: act, wait or read anything beyond its snapshot; the pod sync (`pods/sync.py`)
executes the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from vk_common.objects import is_sidecar, restart_policy, should_restart, spec
from vk_provider.kuberuntime.container_config import spec_hash
from vk_provider.kuberuntime.pod_resources import pod_level_limits
from vk_provider.kuberuntime.restart_all import containers_to_reset
from vk_provider.pods.ephemeral import ephemeral_target, ephemeral_to_start
from vk_provider.pods.grace import effective_grace_period
from vk_provider.pods.policy import field_path, finished, in_sandbox
from vk_provider.pods.resize import ResizeAction, allocated_container, resize_needed
from vk_provider.probes import messages as probe_messages
from vk_provider.probes.manager import ProbeFailure
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)


class Step(Enum):
    START = "start"  # create and start (a first attempt, or an init container again in a new sandbox)
    RESTART = "restart"  # start again after it exited, unless its crash-loop back-off holds it
    REPLACE = "replace"  # stop the running instance and start the new definition
    RESIZE = "resize"  # update the running instance's resources in place
    KILL = "kill"  # kill the running instance (a failed liveness or startup probe)
    BLOCKED = "blocked"  # cannot start: an ephemeral container whose target does not run
    RESET = "reset"  # kill (no grace period) and remove: the pod restarts all its containers


@dataclass(frozen=True)
class ContainerAction:
    """One container's step. `container`: its spec with its allocated resources; `instance`: the
    runtime's latest instance it acts on (none for a first start); `message`: the Killing
    Event's for REPLACE and KILL, the error for BLOCKED; `grace`: KILL's grace period;
    `target`: an ephemeral container's target (its runtime id); `gate`: a start that failed ends
    the pass's container actions (an init container or sidecar the next ones wait for)."""

    step: Step
    container: Mapping[str, Any]
    role: ContainerRole
    instance: ContainerInstance | None = None
    attempt: int = 0
    message: str = ""
    grace: int = 0
    target: str = ""
    gate: bool = False

    @property
    def name(self) -> str:
        return str(self.container["name"])

    @property
    def field_path(self) -> str:
        return field_path(self.role, self.name)


@dataclass(frozen=True)
class PodActions:
    """The plan. `sandbox`: the running sandbox the containers join; None with `create_sandbox`
    when a new one is to be made first, None without it when the pod gets none (it finished,
    or its sandbox died and a Never pod does not run again). `stop`: containers still running in
    a sandbox that is gone."""

    sandbox: PodSandboxState | None
    create_sandbox: bool = False
    stop: tuple[ContainerInstance, ...] = ()
    containers: tuple[ContainerAction, ...] = ()

    @property
    def runs(self) -> bool:
        """Whether the pod's containers are synced at all this pass."""
        return self.sandbox is not None or self.create_sandbox


@dataclass(frozen=True)
class PodSnapshot:
    """`pod`: the pod with its allocated pod-level resources (`PodResizer.allocated_pod`);
    `allocated`: container name -> the resources allocated to it (pods/resize.py);
    `started`: the running instances (runtime ids) that have started (no startup probe, or it
    passed); `failed_probes`: runtime id -> the liveness or startup failure of that instance."""

    pod: Mapping[str, Any]
    state: PodRuntimeState | None
    allocated: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    started: frozenset[str] = frozenset()
    failed_probes: Mapping[str, ProbeFailure] = field(default_factory=dict)
    # The pod restarts all its containers in place (kuberuntime/restart_all.restarting).
    restart_all: bool = False
    # container name -> its restartCount in the API status, the attempt of a container started
    # with no instance left in the runtime (the kubelet counts the container's log files).
    restart_counts: Mapping[str, int] = field(default_factory=dict)
    # runtime id -> the memory request the instance was started or last resized with
    memory_requests: Mapping[str, int] = field(default_factory=dict)


def compute_pod_actions(snap: PodSnapshot) -> PodActions:
    state, pod = snap.state, snap.pod
    if state is not None and state.sandbox is not None and state.sandbox.running:
        if snap.restart_all:
            return PodActions(state.sandbox, containers=tuple(_reset(snap, state)))
        return PodActions(state.sandbox, containers=tuple(_containers(snap, state.sandbox)))
    if state is not None and state.containers and finished(pod, state):
        return PodActions(None)  # a pod whose containers are all done does not get a new sandbox
    stop: tuple[ContainerInstance, ...] = ()
    if state is not None and state.sandbox is not None:
        # The sandbox died: containers still running in its namespaces go with it, and restart
        # in the new one per restartPolicy (the kubelet's podSandboxChanged).
        stop = tuple(c for c in state.containers if c.state == ContainerRunState.RUNNING)
        if restart_policy(pod) == "Never" and state.containers:
            # No new sandbox for a Never pod that ran; it ends Failed. One with no container yet
            # (a provider killed between creating its sandbox and starting it) gets another.
            return PodActions(None, stop=stop)
    return PodActions(None, create_sandbox=True, stop=stop, containers=tuple(_containers(snap, None)))


def _containers(snap: PodSnapshot, sandbox: PodSandboxState | None) -> list[ContainerAction]:
    """Ephemeral, init, then app containers; `sandbox` None: a new one (nothing ran in it)."""
    actions = _ephemeral(snap)
    if _init(snap, sandbox, actions):
        _app(snap, actions)
    return actions


def _reset(snap: PodSnapshot, state: PodRuntimeState) -> list[ContainerAction]:
    """Every init and app container killed and removed, the sandbox kept (computePodActions'
    ContainersToReset); nothing else this pass."""
    return [ContainerAction(Step.RESET, c, i.role, i) for c, i in containers_to_reset(snap.pod, state)]


def _ephemeral(snap: PodSnapshot) -> list[ContainerAction]:
    """Each new ephemeral container once, whatever the init containers' progress; never restarted."""
    actions = []
    for container in ephemeral_to_start(snap.pod, snap.state):
        target, error = ephemeral_target(container, snap.state)
        step = Step.BLOCKED if error else Step.START
        actions.append(
            ContainerAction(step, container, ContainerRole.EPHEMERAL, message=error, target=target)
        )
    return actions


def _latest(snap: PodSnapshot, name: str, role: ContainerRole) -> ContainerInstance | None:
    return snap.state.latest(name, role) if snap.state is not None else None


def _init(snap: PodSnapshot, sandbox: PodSandboxState | None, actions: list[ContainerAction]) -> bool:
    """Plan the init containers one at a time; True once each has succeeded (sidecars: started),
    so the app containers are planned too. A running one, sidecar or not, is resized in place
    like an app container (computeInitContainerActions)."""
    pod, init = snap.pod, ContainerRole.INIT
    for desired in spec(pod).get("initContainers") or []:
        container = allocated_container(snap.allocated, desired)
        instance = _latest(snap, container["name"], init)
        sidecar = is_sidecar(container)
        if instance is None:
            attempt = snap.restart_counts.get(container["name"], 0)
            actions.append(ContainerAction(Step.START, container, init, attempt=attempt, gate=True))
            if not sidecar or container.get("startupProbe"):
                return False  # a sidecar with a startup probe is waited for until it passes
            continue
        if instance.state == ContainerRunState.RUNNING:
            actions.extend(_resize(snap, container, instance))
            if not sidecar:
                return False
            actions.extend(_kill_if_unhealthy(snap, container, instance))
            initialized = snap.state is not None and any(
                c.role == ContainerRole.APP for c in snap.state.containers
            )
            if not initialized and instance.container_id not in snap.started:
                return False  # the next init / app containers wait for the sidecar to start
            continue
        if instance.state == ContainerRunState.EXITED and instance.exit_code == 0 and not sidecar:
            if sandbox is not None and in_sandbox(instance, sandbox):
                continue
            # A new sandbox runs the init containers again, as the kubelet does.
            actions.append(ContainerAction(Step.START, container, init, instance, instance.attempt + 1))
            return False
        if not sidecar and restart_policy(pod) == "Never":
            return False  # the init container failed for good: the pod is Failed
        actions.append(ContainerAction(Step.RESTART, container, init, instance, instance.attempt + 1))
        if not sidecar:
            return False
    return True


def _app(snap: PodSnapshot, actions: list[ContainerAction]) -> None:
    app = ContainerRole.APP
    for desired in spec(snap.pod).get("containers") or []:
        container = allocated_container(snap.allocated, desired)
        instance = _latest(snap, container["name"], app)
        if instance is None:
            attempt = snap.restart_counts.get(container["name"], 0)
            actions.append(ContainerAction(Step.START, container, app, attempt=attempt))
        elif instance.state != ContainerRunState.RUNNING:
            exit_code = (instance.exit_code or 0) if instance.state == ContainerRunState.EXITED else None
            if should_restart(snap.pod, container, exit_code):
                actions.append(ContainerAction(Step.RESTART, container, app, instance, instance.attempt + 1))
        elif instance.spec_hash and instance.spec_hash != spec_hash(container):
            message = f"Container {container['name']} definition changed, will be restarted"
            actions.append(
                ContainerAction(Step.REPLACE, container, app, instance, instance.attempt + 1, message)
            )
        else:
            actions.extend(_resize(snap, container, instance))
            actions.extend(_kill_if_unhealthy(snap, container, instance))


def _resize(
    snap: PodSnapshot, container: Mapping[str, Any], instance: ContainerInstance
) -> list[ContainerAction]:
    """A running container whose resources differ from its allocation (a limit it leaves out:
    the allocated pod level's): an update in place, or a restart when its resizePolicy says
    RestartContainer (pods/resize.py)."""
    fp = field_path(instance.role, container["name"])
    action = resize_needed(
        container, instance, fp, pod_level_limits(snap.pod), snap.memory_requests.get(instance.container_id)
    )
    if action == ResizeAction.UPDATE:
        return [ContainerAction(Step.RESIZE, container, instance.role, instance)]
    if action == ResizeAction.RESTART:
        message = f"Container {container['name']} resize requires restart"
        return [
            ContainerAction(Step.REPLACE, container, instance.role, instance, instance.attempt + 1, message)
        ]
    return []


def _kill_if_unhealthy(
    snap: PodSnapshot, container: Mapping[str, Any], instance: ContainerInstance
) -> list[ContainerAction]:
    """Kill a running container whose liveness or startup probe failed; it restarts per policy,
    with the probe's terminationGracePeriodSeconds when it has one (computePodActions)."""
    failure = snap.failed_probes.get(instance.container_id)
    if failure is None:
        return []
    restart = restart_policy(snap.pod) != "Never" or instance.role == ContainerRole.INIT
    message = probe_messages.kill(instance.name, failure.probe_type, restart)
    grace = failure.termination_grace
    grace = effective_grace_period(None, snap.pod) if grace is None else grace
    return [ContainerAction(Step.KILL, container, instance.role, instance, message=message, grace=grace)]
