"""PodWorkers: one serialised asyncio worker per pod UID driving its containers (reference §6.2).

What lives here: `PodWorkers`, which receives PodConfig updates and runtime events, and per
pod runs syncing -> terminating -> terminated. A sync is idempotent: it compares the pod's
spec with the runtime's observed `PodRuntimeState` and does the next steps (the API-backed
volumes' files, with FailedMount Events while they cannot be set up; sandbox, init
containers one at a time to success, app containers, restarts per restartPolicy with the
crash-loop backoff, image pulls with ImagePullBackOff), then publishes the generated status
to the StatusManager with the ProbeManager's readiness / startup results; it also owns the
pod's probe workers and kills a container whose liveness or startup probe failed.
Termination runs preStop hooks and stops containers within the grace period, then
publishes the terminal status. `adopt` makes a restart safe: containers of pods that still
exist are kept as they are, those of vanished pods are stopped and removed.
Must not: write to the apiserver (StatusManager and EventRecorder do), or know about Docker.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from vk_provider.logging import get_logger, pod_ref
from vk_provider.pods.backoff import (
    Backoff,
    container_key,
    crash_loop_message,
    format_pod,
    image_backoff_message,
    image_key,
    pod_prefix,
)
from vk_provider.pods.config import PodUpdate, UpdateKind
from vk_provider.pods.env import ObjectGetter, PodAddresses, resolve_container_env
from vk_provider.pods.grace import ORPHAN_GRACE_SECONDS, effective_grace_period, stop_timeout_after_prestop
from vk_provider.pods.hooks import HookError, run_hook
from vk_provider.pods.volume_writer import PodVolumes, TokenRequester
from vk_provider.pods.volumes import failed_mount_message
from vk_provider.probes import messages as probe_messages
from vk_provider.probes.manager import ProbeManager
from vk_provider.runtime.protocol import ContainerLaunch, Runtime
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    ImagePullError,
    PodRuntimeState,
    PodSandboxState,
    PodSpecRefused,
    RuntimeFailure,
)
from vk_provider.status.generate import ContainerWaiting, generate_pod_status, need_to_reconcile_pod_readiness

log = get_logger("pods.workers")

ERROR_RETRY_SECONDS = 10.0  # the kubelet requeues a failed sync after 10 s (0.5 jitter)
SANDBOX_STOP_SECONDS = 2.0
MOUNT_RETRY_FIRST_SECONDS = 1.0  # a failed volume set-up is retried soon, doubling up to ERROR_RETRY
HOUSEKEEPING_SECONDS = 10.0  # the kubelet's HandlePodCleanups runs every 2 s; Docker listing costs more
DEADLINE_REASON = ("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
TERMINAL_PHASES = ("Succeeded", "Failed")


class StatusSink(Protocol):
    def set_pod_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None: ...
    def get_pod_status(self, uid: str) -> dict[str, Any] | None: ...
    def terminate_pod(self, pod: Mapping[str, Any]) -> None: ...
    def remove_pod(self, uid: str) -> None: ...
    def set_container_readiness(self, uid: str, container_name: str, ready: bool) -> None: ...
    def set_container_startup(self, uid: str, container_name: str, started: bool) -> None: ...


class EventSink(Protocol):
    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, field_path: str = ""
    ) -> None: ...


class WorkerState(StrEnum):
    SYNCING = "syncing"
    TERMINATING = "terminating"
    TERMINATED = "terminated"


@dataclass
class _PodWork:
    uid: str
    pod: Mapping[str, Any]
    doorbell: asyncio.Event = field(default_factory=asyncio.Event)
    state: WorkerState = WorkerState.SYNCING
    kill: bool = False  # termination requested (deleted, removed, terminal, deadline)
    removed: bool = False  # gone from its source: clean up once terminated
    grace: int | None = None
    grace_override: int | None = None
    terminal_reason: tuple[str, str] | None = None
    waiting: dict[str, ContainerWaiting] = field(default_factory=dict)
    wake_at: float | None = None  # loop time of the next timer-driven sync
    first_seen: float = field(default_factory=time.time)
    image_failures: dict[str, float] = field(default_factory=dict)  # image -> epoch of the last failure
    adopted: bool = False  # the first sync looked at what already ran
    volumes_mounted: bool = False  # the API-backed volumes were set up once
    mount_retry: float = MOUNT_RETRY_FIRST_SECONDS
    task: asyncio.Task[None] | None = None


def _now() -> datetime:
    return datetime.now(UTC)


def _jitter(seconds: float) -> float:
    return seconds * (1.0 + 0.5 * random.random())


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("spec") or {}


def _restart_policy(pod: Mapping[str, Any]) -> str:
    return str(_spec(pod).get("restartPolicy") or "Always")


def _should_restart(pod: Mapping[str, Any], instance: ContainerInstance) -> bool:
    policy = _restart_policy(pod)
    if policy == "Never":
        return False
    if policy == "OnFailure":
        return instance.state != ContainerRunState.EXITED or (instance.exit_code or 0) != 0
    return True


def _default_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    return "Always" if ":" not in last or last.endswith(":latest") else "IfNotPresent"


def _field_path(role: ContainerRole, name: str) -> str:
    """The Event's involvedObject.fieldPath of one container, as the kubelet sets it."""
    return f"spec.{'initContainers' if role == ContainerRole.INIT else 'containers'}{{{name}}}"


def _in_sandbox(instance: ContainerInstance, sandbox: PodSandboxState) -> bool:
    """Whether `instance` ran in `sandbox` (it was created after it), not in an earlier one."""
    if instance.created_at is None or sandbox.created_at is None:
        return True
    return instance.created_at >= sandbox.created_at


def _finished(pod: Mapping[str, Any], state: PodRuntimeState) -> bool:
    """Every app container ran and none is to run again, or an init container failed for good."""
    if _restart_policy(pod) == "Never":
        for container in _spec(pod).get("initContainers") or []:
            init = state.latest(container["name"], ContainerRole.INIT)
            if init is not None and init.state == ContainerRunState.EXITED and init.exit_code != 0:
                return True
    for container in _spec(pod).get("containers") or []:
        latest = state.latest(container["name"], ContainerRole.APP)
        if latest is None or latest.state != ContainerRunState.EXITED or _should_restart(pod, latest):
            return False
    return True


def _parse_time(value: Any) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class PodWorkers:
    def __init__(
        self,
        runtime: Runtime,
        status: StatusSink,
        recorder: EventSink,
        *,
        getter: ObjectGetter,
        host_ip: Callable[[], str],
        node_allocatable: Callable[[], Mapping[str, str]] = dict,
        max_concurrent_syncs: int = 16,
        resync_interval: float = 60.0,
        backoff: Backoff | None = None,
        spec_hash: Callable[[Mapping[str, Any]], str] | None = None,
        request_token: TokenRequester | None = None,
    ) -> None:
        """`spec_hash(container)` is the runtime's hash of a container spec (the one it records as
        `ContainerInstance.spec_hash`); with it, a running container whose spec changed is replaced.
        `request_token` posts a TokenRequest, for projected service account token volumes."""
        self._runtime = runtime
        self._status = status
        self._recorder = recorder
        self._getter = getter
        self._host_ip = host_ip
        self._node_allocatable = node_allocatable
        self._sem = asyncio.Semaphore(max_concurrent_syncs)
        self._resync = resync_interval
        self._backoff = backoff or Backoff()
        self._spec_hash = spec_hash
        self._work: dict[str, _PodWork] = {}
        self._volumes = PodVolumes(
            lambda uid, name: self._runtime.volume_dir(uid, name), getter, request_token, node_allocatable
        )
        self._probes = ProbeManager(runtime, status, recorder, self._probe_changed)
        self._events_task: asyncio.Task[None] | None = None
        self._housekeeping: asyncio.Task[None] | None = None
        self._closing = False

    # ------------------------------------------------------------------ lifecycle

    async def adopt(self, known_uids: Iterable[str]) -> None:
        """Before acting on API pods: remove the containers of pods that no longer exist.

        Pods in `known_uids` (every UID some source still has) keep their containers as they
        are; their workers adopt them on their first (idempotent) sync.
        """
        known = set(known_uids)
        orphans = [state for uid, state in (await self._runtime.list_pods()).items() if uid not in known]
        await asyncio.gather(*(self._remove_orphan(state) for state in orphans))

    async def _remove_orphan(self, state: PodRuntimeState) -> None:
        ref = f"{state.namespace}/{state.name}"
        log.info("removing the containers of pod uid %s: it no longer exists", state.uid, extra={"pod": ref})
        try:
            running = [c for c in state.containers if c.state == ContainerRunState.RUNNING]
            await asyncio.gather(
                *(self._runtime.stop_container(c.container_id, ORPHAN_GRACE_SECONDS) for c in running)
            )
            await self._runtime.remove_pod(state.uid)
        except Exception:
            log.exception("could not remove the containers of pod uid %s", state.uid, extra={"pod": ref})

    async def start(self) -> None:
        self._events_task = asyncio.create_task(self._pump_events(), name="pod workers: runtime events")

    def start_housekeeping(self, interval: float = HOUSEKEEPING_SECONDS) -> None:
        """Periodically remove containers of pods no worker knows (call once the sources synced)."""
        if self._housekeeping is None:
            self._housekeeping = asyncio.create_task(self._housekeep(interval), name="pod housekeeping")

    async def _housekeep(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                listed = await self._runtime.list_pods()
                orphans = [state for uid, state in listed.items() if uid not in self._work]
                await asyncio.gather(*(self._remove_orphan(state) for state in orphans))
            except Exception:
                log.exception("pod housekeeping failed")

    async def stop(self) -> None:
        """Stop every worker; the pods' containers keep running."""
        self._closing = True
        tasks = [w.task for w in self._work.values() if w.task is not None]
        tasks.extend(t for t in (self._events_task, self._housekeeping) if t is not None)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._probes.stop()

    def states(self) -> dict[str, WorkerState]:
        return {uid: w.state for uid, w in self._work.items()}

    # ------------------------------------------------------------------ triggers

    def update(self, update: PodUpdate) -> None:
        """PodConfig's handler: route one classified update to the pod's worker."""
        uid = str((update.pod.get("metadata") or {}).get("uid", ""))
        work = self._work.get(uid)
        if update.kind == UpdateKind.REMOVE:
            if work is not None:
                work.removed = True
                work.kill = True
                work.doorbell.set()
            return
        if work is None:
            if self._closing:
                return
            work = _PodWork(uid=uid, pod=update.pod)
            self._work[uid] = work
            work.task = asyncio.create_task(self._run(work), name=f"pod worker {pod_ref(update.pod)}")
        if work.state == WorkerState.TERMINATED:
            return  # a finished UID ignores updates until it is removed
        work.pod = update.pod
        phase = (update.pod.get("status") or {}).get("phase")
        if (update.pod.get("metadata") or {}).get("deletionTimestamp") or phase in TERMINAL_PHASES:
            work.kill = True
        if update.kind != UpdateKind.RECONCILE or work.kill or need_to_reconcile_pod_readiness(update.pod):
            work.doorbell.set()

    async def _pump_events(self) -> None:
        while True:
            try:
                async for event in self._runtime.events():
                    work = self._work.get(event.pod_uid)
                    if work is not None:
                        work.doorbell.set()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("runtime event stream failed; resubscribing")
                await asyncio.sleep(1.0)

    def _probe_changed(self, uid: str) -> None:
        """A probe result changed: sync the pod (the kubelet's handleProbeSync)."""
        work = self._work.get(uid)
        if work is not None:
            work.doorbell.set()

    def _wake_in(self, work: _PodWork, seconds: float) -> None:
        at = asyncio.get_running_loop().time() + max(seconds, 0.0)
        work.wake_at = at if work.wake_at is None else min(work.wake_at, at)

    # ------------------------------------------------------------------ the worker

    async def _run(self, work: _PodWork) -> None:
        loop = asyncio.get_running_loop()
        work.doorbell.set()
        while True:
            timeout: float | None = None
            if work.state == WorkerState.SYNCING:
                timeout = _jitter(self._resync)
                if work.wake_at is not None:
                    timeout = min(timeout, max(work.wake_at - loop.time(), 0.0))
            with contextlib.suppress(TimeoutError):
                # Not wait_for: on 3.11 it can swallow a cancellation arriving as the doorbell rings.
                async with asyncio.timeout(timeout):
                    await work.doorbell.wait()
            work.doorbell.clear()
            try:
                if await self._step(work):
                    return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("error syncing pod", extra={"pod": pod_ref(work.pod)})
                self._recorder.event(work.pod, "Warning", "FailedSync", f"error syncing pod: {exc}")
                work.wake_at = None
                self._wake_in(work, _jitter(ERROR_RETRY_SECONDS))

    async def _step(self, work: _PodWork) -> bool:
        """One turn of the state machine; True when the worker is done for good."""
        if work.state == WorkerState.SYNCING and not work.kill:
            async with self._sem:
                terminal = await self._sync(work)
            if terminal:
                work.kill = True
        if work.state == WorkerState.SYNCING and work.kill:
            work.state = WorkerState.TERMINATING
        if work.state == WorkerState.TERMINATING:
            await self._terminate(work)
            work.state = WorkerState.TERMINATED
        if work.state == WorkerState.TERMINATED and work.removed:
            await self._runtime.remove_pod(work.uid)
            self._volumes.forget(work.uid)
            self._status.remove_pod(work.uid)
            self._backoff.forget_prefix(pod_prefix(work.pod))
            self._work.pop(work.uid, None)
            log.info("pod removed, containers deleted", extra={"pod": pod_ref(work.pod)})
            return True
        return False

    # ------------------------------------------------------------------ syncing

    def _publish(self, work: _PodWork, state: PodRuntimeState | None, terminal: bool) -> dict[str, Any]:
        cached = self._status.get_pod_status(work.uid)
        readiness, started = self._probes.pod_results(work.pod, state)
        status = generate_pod_status(
            work.pod,
            state,
            waiting=work.waiting,
            pod_is_terminal=terminal,
            old_status=cached,
            readiness=readiness,
            started=started,
            host_ip=self._host_ip(),
            now=_now(),
            terminal_reason=work.terminal_reason,
        )
        self._status.set_pod_status(work.pod, status)
        return status

    def _deadline_exceeded(self, work: _PodWork) -> bool:
        deadline = _spec(work.pod).get("activeDeadlineSeconds")
        if deadline is None:
            return False
        cached = self._status.get_pod_status(work.uid) or work.pod.get("status") or {}
        start = _parse_time(cached.get("startTime")) or work.first_seen
        left = start + float(deadline) - time.time()
        if left > 0:
            self._wake_in(work, left)
            return False
        return True

    async def _sync(self, work: _PodWork) -> bool:
        """Desired against observed, one pass; True when the pod reached a terminal phase."""
        pod = work.pod
        work.waiting = {}
        work.wake_at = None
        if self._deadline_exceeded(work):
            work.terminal_reason = DEADLINE_REASON
            log.info("active deadline exceeded, terminating", extra={"pod": pod_ref(pod)})
            self._recorder.event(pod, "Warning", DEADLINE_REASON[0], DEADLINE_REASON[1])
            return True
        self._probes.add_pod(pod)
        state = await self._runtime.pod_state(work.uid)
        if not work.adopted:
            work.adopted = True
            running = [
                c.name for c in (state.containers if state else ()) if c.state == ContainerRunState.RUNNING
            ]
            if running:
                log.info("adopted running container(s) %s", ", ".join(running), extra={"pod": pod_ref(pod)})
        if not await self._mount_volumes(work, state):
            self._publish(work, state, terminal=False)
            return False
        sandbox = await self._ensure_sandbox(work, state)
        if sandbox is not None and await self._sync_init_containers(work, state, sandbox):
            await self._sync_app_containers(work, state, sandbox)
        if work.terminal_reason is not None:
            return True
        status = self._publish(work, await self._runtime.pod_state(work.uid), terminal=False)
        return status.get("phase") in TERMINAL_PHASES

    async def _mount_volumes(self, work: _PodWork, state: PodRuntimeState | None) -> bool:
        """Write the pod's configMap, secret, downwardAPI and projected volumes (again: their content
        follows the API). False while a volume of a pod that never ran cannot be set up: it stays
        ContainerCreating, retried soon. Running containers keep the volume's last content."""
        failed = await self._volumes.setup(work.pod)
        if not failed:
            work.volumes_mounted = True
            work.mount_retry = MOUNT_RETRY_FIRST_SECONDS
            return True
        for name, error in failed.items():
            message = failed_mount_message(name, error)
            log.info("%s", message, extra={"pod": pod_ref(work.pod)})
            self._recorder.event(work.pod, "Warning", "FailedMount", message)
        self._wake_in(work, work.mount_retry)
        work.mount_retry = min(work.mount_retry * 2, ERROR_RETRY_SECONDS)
        return work.volumes_mounted or (state is not None and bool(state.containers))

    async def _ensure_sandbox(self, work: _PodWork, state: PodRuntimeState | None) -> PodSandboxState | None:
        if state is not None and state.sandbox is not None and state.sandbox.running:
            return state.sandbox
        pod = work.pod
        if state is not None and state.containers and _finished(pod, state):
            return None  # a pod whose containers are all done does not get a new sandbox
        if state is not None and state.sandbox is not None:
            # The sandbox died: containers still running in its namespaces go with it, and
            # restart in the new one per restartPolicy (the kubelet's podSandboxChanged).
            stale = [c for c in state.containers if c.state == ContainerRunState.RUNNING]
            if stale:
                log.info(
                    "pod sandbox is gone; stopping %d container(s)", len(stale), extra={"pod": pod_ref(pod)}
                )
            grace = effective_grace_period(None, pod)
            await asyncio.gather(*(self._runtime.stop_container(c.container_id, grace) for c in stale))
            if _restart_policy(pod) == "Never":
                return None  # as the kubelet: no new sandbox for a Never pod that ran; it ends Failed
        try:
            sandbox = await self._runtime.ensure_sandbox(pod)
        except PodSpecRefused as exc:
            log.warning("pod refused: %s", exc.message, extra={"pod": pod_ref(pod)})
            self._recorder.event(pod, "Warning", "Failed", f"Error: {exc.message}")
            work.terminal_reason = (exc.reason, exc.message)
            return None
        except RuntimeFailure as exc:
            log.warning("could not create the pod sandbox: %s", exc.message, extra={"pod": pod_ref(pod)})
            message = exc.message
            if not message.startswith("Failed to create pod sandbox"):
                message = f"Failed to create pod sandbox: {message}"
            self._recorder.event(pod, "Warning", "FailedCreatePodSandBox", message)
            self._wake_in(work, _jitter(ERROR_RETRY_SECONDS))
            return None
        return sandbox

    async def _sync_init_containers(
        self, work: _PodWork, state: PodRuntimeState | None, sandbox: PodSandboxState
    ) -> bool:
        """Run init containers one at a time; True once every one has succeeded (sidecars: started)."""
        for container in _spec(work.pod).get("initContainers") or []:
            name = container["name"]
            instance = state.latest(name, ContainerRole.INIT) if state is not None else None
            sidecar = container.get("restartPolicy") == "Always"
            if instance is None:
                started = await self._start(work, container, ContainerRole.INIT, 0, sandbox)
                if not (sidecar and started) or container.get("startupProbe"):
                    return False  # a sidecar with a startup probe is waited for until it passes
                continue
            if instance.state == ContainerRunState.RUNNING:
                if not sidecar:
                    return False
                await self._kill_if_unhealthy(work, instance, sandbox.ip)
                initialized = state is not None and any(c.role == ContainerRole.APP for c in state.containers)
                if not initialized and not self._probes.started(work.uid, name, instance.container_id):
                    return False  # the next init / app containers wait for the sidecar to start
                continue
            if instance.state == ContainerRunState.EXITED and instance.exit_code == 0 and not sidecar:
                if _in_sandbox(instance, sandbox):
                    continue
                # A new sandbox runs the init containers again, as the kubelet does.
                await self._start(work, container, ContainerRole.INIT, instance.attempt + 1, sandbox)
                return False
            if not sidecar and _restart_policy(work.pod) == "Never":
                return False  # the init container failed for good: the pod is Failed
            await self._restart(work, container, ContainerRole.INIT, instance, sandbox)
            if not sidecar:
                return False
        return True

    async def _sync_app_containers(
        self, work: _PodWork, state: PodRuntimeState | None, sandbox: PodSandboxState
    ) -> None:
        for container in _spec(work.pod).get("containers") or []:
            instance = state.latest(container["name"], ContainerRole.APP) if state is not None else None
            if instance is None:
                await self._start(work, container, ContainerRole.APP, 0, sandbox)
            elif instance.state != ContainerRunState.RUNNING and _should_restart(work.pod, instance):
                await self._restart(work, container, ContainerRole.APP, instance, sandbox)
            elif instance.state == ContainerRunState.RUNNING and self._changed(container, instance):
                await self._replace(work, container, instance, sandbox)
            elif instance.state == ContainerRunState.RUNNING:
                await self._kill_if_unhealthy(work, instance, sandbox.ip)

    async def _kill_if_unhealthy(self, work: _PodWork, instance: ContainerInstance, pod_ip: str) -> None:
        """Kill a running container whose liveness or startup probe failed; it restarts per policy.

        Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go (computePodActions), which
        also uses the probe's terminationGracePeriodSeconds when it has one.
        """
        failure = self._probes.failed_probe(work.uid, instance.name, instance.container_id)
        if failure is None:
            return
        pod = work.pod
        restart = _restart_policy(pod) != "Never" or instance.role == ContainerRole.INIT
        message = probe_messages.kill(instance.name, failure.probe_type, restart)
        log.info("%s", message, extra={"pod": pod_ref(pod)})
        grace = failure.termination_grace
        await self._kill(
            work, instance, effective_grace_period(None, pod) if grace is None else grace, pod_ip, message
        )

    def _changed(self, container: Mapping[str, Any], instance: ContainerInstance) -> bool:
        if self._spec_hash is None or not instance.spec_hash:
            return False
        return instance.spec_hash != self._spec_hash(container)

    async def _replace(
        self,
        work: _PodWork,
        container: Mapping[str, Any],
        instance: ContainerInstance,
        sandbox: PodSandboxState,
    ) -> None:
        """The container's spec changed (e.g. its image): stop it and start the new definition."""
        pod, name = work.pod, container["name"]
        log.info("container %s definition changed, restarting it", name, extra={"pod": pod_ref(pod)})
        message = f"Container {name} definition changed, will be restarted"
        self._recorder.event(
            pod, "Normal", "Killing", message, field_path=_field_path(ContainerRole.APP, name)
        )
        await self._runtime.stop_container(instance.container_id, effective_grace_period(None, pod))
        if await self._start(work, container, ContainerRole.APP, instance.attempt + 1, sandbox):
            await self._runtime.prune_pod(work.uid)

    async def _restart(
        self,
        work: _PodWork,
        container: Mapping[str, Any],
        role: ContainerRole,
        instance: ContainerInstance,
        sandbox: PodSandboxState,
    ) -> None:
        pod, name = work.pod, container["name"]
        fp = _field_path(role, name)
        key = container_key(pod, name)
        finished = (instance.finished_at or instance.created_at or _now()).timestamp()
        left = self._backoff.remaining(key, finished)
        if left > 0:
            message = crash_loop_message(self._backoff.current(key), name, pod)
            work.waiting[name] = ContainerWaiting("CrashLoopBackOff", message)
            self._recorder.event(
                pod,
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {name} in pod {format_pod(pod)}",
                field_path=fp,
            )
            log.info("container %s: %s", name, message, extra={"pod": pod_ref(pod)})
            self._wake_in(work, left)
            return
        self._backoff.next(key, finished)
        log.info(
            "restarting container %s (exit code %s, attempt %d)",
            name,
            instance.exit_code,
            instance.attempt + 1,
            extra={"pod": pod_ref(pod)},
        )
        if await self._start(work, container, role, instance.attempt + 1, sandbox):
            await self._runtime.prune_pod(work.uid)

    async def _pull(self, work: _PodWork, container: Mapping[str, Any], role: ContainerRole) -> bool:
        pod, name = work.pod, container["name"]
        fp = _field_path(role, name)
        image = str(container.get("image", ""))
        policy = str(container.get("imagePullPolicy") or _default_pull_policy(image))
        key = image_key(pod, image)
        failed_at = work.image_failures.get(image)
        if failed_at is not None:
            left = self._backoff.remaining(key, failed_at)
            if left > 0:
                message = image_backoff_message(image)
                work.waiting[name] = ContainerWaiting("ImagePullBackOff", message)
                self._recorder.event(pod, "Normal", "BackOff", message, field_path=fp)
                self._wake_in(work, left)
                return False
        if policy == "Always":
            self._recorder.event(pod, "Normal", "Pulling", f'Pulling image "{image}"', field_path=fp)
        began = time.monotonic()
        try:
            await self._runtime.ensure_image(image, policy, pod)
        except ImagePullError as exc:
            now = time.time()
            log.info("image %s: %s: %s", image, exc.reason, exc.message, extra={"pod": pod_ref(pod)})
            work.waiting[name] = ContainerWaiting(exc.reason, exc.message)
            if exc.reason == "ErrImageNeverPull":
                self._recorder.event(pod, "Warning", "ErrImageNeverPull", exc.message, field_path=fp)
            else:
                self._recorder.event(
                    pod, "Warning", "Failed", f'Failed to pull image "{image}": {exc.message}', field_path=fp
                )
                self._recorder.event(pod, "Warning", "Failed", f"Error: {exc.reason}", field_path=fp)
            if exc.reason == "ErrImagePull":
                work.image_failures[image] = now
                # The next sync, within the backoff window, shows ImagePullBackOff.
                self._wake_in(work, min(1.0, self._backoff.next(key, now) / 2))
            else:
                self._wake_in(work, _jitter(ERROR_RETRY_SECONDS))
            return False
        if failed_at is not None:
            del work.image_failures[image]
            self._backoff.reset(key)
        if policy == "Always":
            took = time.monotonic() - began
            self._recorder.event(
                pod, "Normal", "Pulled", f'Successfully pulled image "{image}" in {took:.3f}s', field_path=fp
            )
        else:
            self._recorder.event(
                pod,
                "Normal",
                "Pulled",
                f'Container image "{image}" already present on machine',
                field_path=fp,
            )
        return True

    async def _start(
        self,
        work: _PodWork,
        container: Mapping[str, Any],
        role: ContainerRole,
        attempt: int,
        sandbox: PodSandboxState,
    ) -> bool:
        """Pull, resolve, create and start one container; failures become its waiting reason.

        True when the container was started (it may have exited already).
        """
        pod, name = work.pod, container["name"]
        fp = _field_path(role, name)
        if not await self._pull(work, container, role):
            return False
        host_ip = self._host_ip()
        try:
            resolved = await resolve_container_env(
                pod,
                container,
                getter=self._getter,
                addresses=PodAddresses(
                    pod_ips=(sandbox.ip,) if sandbox.ip else (), host_ips=(host_ip,) if host_ip else ()
                ),
                node_allocatable=self._node_allocatable(),
            )
            for reason, message in resolved.warnings:
                self._recorder.event(pod, "Warning", reason, message, field_path=fp)
            launch = ContainerLaunch(
                pod=pod,
                container=container,
                role=role,
                attempt=attempt,
                env=resolved.env,
                command=resolved.command,
                args=resolved.args,
                sandbox=sandbox,
            )
            instance = await self._runtime.start_container(launch)
        except RuntimeFailure as exc:
            log.info("container %s: %s: %s", name, exc.reason, exc.message, extra={"pod": pod_ref(pod)})
            work.waiting[name] = ContainerWaiting(exc.reason, exc.message)
            self._recorder.event(pod, "Warning", "Failed", f"Error: {exc.message}", field_path=fp)
            self._wake_in(work, _jitter(ERROR_RETRY_SECONDS))
            return False
        log.info(
            "started container %s (%s, attempt %d)", name, role.value, attempt, extra={"pod": pod_ref(pod)}
        )
        self._recorder.event(pod, "Normal", "Created", f"Created container: {name}", field_path=fp)
        self._recorder.event(pod, "Normal", "Started", f"Started container {name}", field_path=fp)
        post_start = (container.get("lifecycle") or {}).get("postStart")
        if post_start and instance.state == ContainerRunState.RUNNING:
            return await self._post_start(work, container, instance, post_start, sandbox.ip)
        return True

    async def _post_start(
        self,
        work: _PodWork,
        container: Mapping[str, Any],
        instance: ContainerInstance,
        hook: Mapping[str, Any],
        pod_ip: str,
    ) -> bool:
        """Run the postStart hook; when it fails the container is killed (and restarted per policy)."""
        pod, name = work.pod, container["name"]
        grace = effective_grace_period(None, pod)
        try:
            await asyncio.wait_for(
                run_hook(self._runtime, container, instance.container_id, hook, grace, pod_ip), grace
            )
            return True
        except (HookError, RuntimeFailure, TimeoutError) as exc:
            log.info("postStart hook of %s failed: %s", name, exc, extra={"pod": pod_ref(pod)})
        fp = _field_path(instance.role, name)
        # The message stays generic so that secrets in the hook's output never reach an Event.
        self._recorder.event(pod, "Warning", "FailedPostStartHook", "PostStartHook failed", field_path=fp)
        await self._runtime.stop_container(instance.container_id, grace)
        return False

    # ------------------------------------------------------------------ termination

    async def _terminate(self, work: _PodWork) -> None:
        pod = work.pod
        await self._probes.stop_liveness_and_startup(work.uid)
        work.grace = effective_grace_period(work.grace, pod)
        state = await self._runtime.pod_state(work.uid)
        running = [
            c
            for c in (state.containers if state is not None else ())
            if c.state in (ContainerRunState.RUNNING, ContainerRunState.CREATED)
        ]
        if running:
            log.info(
                "stopping %d container(s) with a %ds grace period",
                len(running),
                work.grace,
                extra={"pod": pod_ref(pod)},
            )
        pod_ip = state.sandbox.ip if state is not None and state.sandbox is not None else ""
        await asyncio.gather(*(self._kill(work, c, work.grace, pod_ip) for c in running))
        if state is not None and state.sandbox is not None and state.sandbox.running:
            await self._runtime.stop_container(state.sandbox.container_id, SANDBOX_STOP_SECONDS)
        self._publish(work, await self._runtime.pod_state(work.uid), terminal=True)
        await self._probes.remove_pod(work.uid)
        self._status.terminate_pod(pod)
        log.info("pod terminated", extra={"pod": pod_ref(pod)})

    def _container_spec(self, pod: Mapping[str, Any], instance: ContainerInstance) -> Mapping[str, Any]:
        key = "initContainers" if instance.role == ContainerRole.INIT else "containers"
        for container in _spec(pod).get(key) or []:
            if container.get("name") == instance.name:
                return dict(container)
        return {"name": instance.name}

    async def _kill(
        self, work: _PodWork, instance: ContainerInstance, grace: int, pod_ip: str, message: str = ""
    ) -> None:
        """Run the preStop hook, then stop the container; `message` is the Killing Event's."""
        pod = work.pod
        container = self._container_spec(pod, instance)
        fp = _field_path(instance.role, instance.name)
        message = message or f"Stopping container {instance.name}"
        self._recorder.event(pod, "Normal", probe_messages.KILLING, message, field_path=fp)
        began = time.monotonic()
        pre_stop = (container.get("lifecycle") or {}).get("preStop")
        if pre_stop and instance.state == ContainerRunState.RUNNING:
            try:
                await asyncio.wait_for(
                    run_hook(self._runtime, container, instance.container_id, pre_stop, grace, pod_ip), grace
                )
            except (HookError, RuntimeFailure, TimeoutError) as exc:
                log.info("preStop hook of %s failed: %s", instance.name, exc, extra={"pod": pod_ref(pod)})
                self._recorder.event(pod, "Warning", "FailedPreStopHook", "PreStopHook failed", field_path=fp)
        timeout = stop_timeout_after_prestop(grace, time.monotonic() - began) if pre_stop else float(grace)
        await self._runtime.stop_container(instance.container_id, timeout)
        if time.monotonic() - began > grace + SANDBOX_STOP_SECONDS:
            self._recorder.event(
                pod,
                "Warning",
                "ExceededGracePeriod",
                "Container runtime did not kill the pod within specified grace period.",
                field_path=fp,
            )
