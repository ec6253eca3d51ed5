"""PodWorkers: one serialised asyncio worker per pod UID driving its pod (reference §6.2).

What lives here: `PodWorkers`, which receives PodConfig updates, runtime events, probe
changes, timers and resyncs, and per pod runs syncing -> terminating -> terminated. A sync
is idempotent: it compares the pod's spec with the runtime's observed `PodRuntimeState` and
does the next steps (activeDeadlineSeconds, also armed as a timer so a pod past it is killed
without waiting for a resync; the API-backed volumes' files, with FailedMount
Events while they cannot be set up; the sandbox; then the containers through the
`ContainerPipeline` of `pods/containers.py`), then publishes the generated status to the
StatusManager with the ProbeManager's readiness / startup results; it owns the pod's probe
workers. Termination kills the containers (preStop, grace period) and the sandbox, then
publishes the terminal status. `adopt` and the housekeeping pass make a restart safe:
containers of pods that still exist are kept as they are, those of vanished pods are
stopped and removed. The per-pod record is `pods/work.py`, the pure rules `pods/policy.py`.
Must not: act on one container itself (the pipeline does), write to the apiserver
(StatusManager and EventRecorder do), or know about Docker.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from vk_provider.logging import get_logger, pod_ref
from vk_provider.pods.backoff import Backoff, pod_prefix
from vk_provider.pods.config import PodUpdate, UpdateKind
from vk_provider.pods.containers import ContainerPipeline
from vk_provider.pods.env import ObjectGetter
from vk_provider.pods.grace import ORPHAN_GRACE_SECONDS, effective_grace_period
from vk_provider.pods.policy import (
    DEADLINE_EXCEEDED,
    ERROR_RETRY_SECONDS,
    SANDBOX_STOP_SECONDS,
    active_deadline_left,
    finished,
    jitter,
    now,
    restart_policy,
)
from vk_provider.pods.volume_writer import PodVolumes, TokenRequester
from vk_provider.pods.volumes import failed_mount_message
from vk_provider.pods.work import (
    MOUNT_RETRY_FIRST_SECONDS,
    EventSink,
    PodWork,
    StatusSink,
    WorkerState,
    wake_in,
)
from vk_provider.probes.manager import ProbeManager
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import (
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
    PodSpecRefused,
    RuntimeFailure,
)
from vk_provider.status.generate import generate_pod_status, need_to_reconcile_pod_readiness

__all__ = ["EventSink", "PodWorkers", "StatusSink", "WorkerState"]

log = get_logger("pods.workers")

HOUSEKEEPING_SECONDS = 10.0  # the kubelet's HandlePodCleanups runs every 2 s; Docker listing costs more
TERMINAL_PHASES = ("Succeeded", "Failed")


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
        self._host_ip = host_ip
        self._sem = asyncio.Semaphore(max_concurrent_syncs)
        self._resync = resync_interval
        self._backoff = backoff or Backoff()
        self._work: dict[str, PodWork] = {}
        self._volumes = PodVolumes(
            lambda uid, name: self._runtime.volume_dir(uid, name), getter, request_token, node_allocatable
        )
        self._probes = ProbeManager(runtime, status, recorder, self._probe_changed)
        self._containers = ContainerPipeline(
            runtime,
            recorder,
            self._probes,
            getter=getter,
            host_ip=host_ip,
            node_allocatable=node_allocatable,
            backoff=self._backoff,
            spec_hash=spec_hash,
        )
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
            work = PodWork(uid=uid, pod=update.pod)
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

    # ------------------------------------------------------------------ the worker

    async def _run(self, work: PodWork) -> None:
        loop = asyncio.get_running_loop()
        work.doorbell.set()
        while True:
            timeout: float | None = None
            if work.state == WorkerState.SYNCING:
                timeout = jitter(self._resync)
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
                wake_in(work, jitter(ERROR_RETRY_SECONDS))
                if work.state == WorkerState.SYNCING:
                    self._arm_deadline(work)  # a failing sync does not hold the deadline back

    async def _step(self, work: PodWork) -> bool:
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

    def _publish(self, work: PodWork, state: PodRuntimeState | None, terminal: bool) -> dict[str, Any]:
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
            now=now(),
            terminal_reason=work.terminal_reason,
        )
        self._status.set_pod_status(work.pod, status)
        return status

    def _arm_deadline(self, work: PodWork) -> float | None:
        """Seconds left before the pod's active deadline (None: none to enforce); a sync is
        due by then at the latest."""
        left = active_deadline_left(work.pod, self._status.get_pod_status(work.uid), time.time())
        if left is not None:
            wake_in(work, left)
        return left

    def _deadline_exceeded(self, work: PodWork) -> bool:
        """The kubelet's active deadline check (`policy.active_deadline_left`): True once the pod is
        past spec.activeDeadlineSeconds, with its terminal reason set and the Event recorded;
        otherwise a timer is armed for the moment it will be, so it fires without a resync."""
        left = self._arm_deadline(work)
        if left is None or left > 0:
            return False
        work.terminal_reason = DEADLINE_EXCEEDED
        log.info("active deadline exceeded, terminating", extra={"pod": pod_ref(work.pod)})
        # Normal, as activeDeadlineHandler.ShouldEvict records it.
        self._recorder.event(work.pod, "Normal", DEADLINE_EXCEEDED[0], DEADLINE_EXCEEDED[1])
        return True

    async def _sync(self, work: PodWork) -> bool:
        """Desired against observed, one pass; True when the pod reached a terminal phase.

        The deadline is checked first (nothing starts once it passed: the kubelet's SyncPod
        generates the status, with ShouldEvict, before it acts) and again once the status was
        published, which gives a pod seen for the first time its startTime and so its timer.
        """
        work.waiting = {}
        work.wake_at = None
        if self._deadline_exceeded(work):
            return True
        terminal = await self._sync_pod(work)
        return terminal or self._deadline_exceeded(work)

    async def _sync_pod(self, work: PodWork) -> bool:
        pod = work.pod
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
        if sandbox is not None and await self._containers.sync_init_containers(work, state, sandbox):
            await self._containers.sync_app_containers(work, state, sandbox)
        if work.terminal_reason is not None:
            return True
        status = self._publish(work, await self._runtime.pod_state(work.uid), terminal=False)
        return status.get("phase") in TERMINAL_PHASES

    async def _mount_volumes(self, work: PodWork, state: PodRuntimeState | None) -> bool:
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
        wake_in(work, work.mount_retry)
        work.mount_retry = min(work.mount_retry * 2, ERROR_RETRY_SECONDS)
        return work.volumes_mounted or (state is not None and bool(state.containers))

    async def _ensure_sandbox(self, work: PodWork, state: PodRuntimeState | None) -> PodSandboxState | None:
        if state is not None and state.sandbox is not None and state.sandbox.running:
            return state.sandbox
        pod = work.pod
        if state is not None and state.containers and finished(pod, state):
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
            if restart_policy(pod) == "Never":
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
            wake_in(work, jitter(ERROR_RETRY_SECONDS))
            return None
        return sandbox

    # ------------------------------------------------------------------ termination

    async def _terminate(self, work: PodWork) -> None:
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
        await asyncio.gather(*(self._containers.kill(work, c, work.grace, pod_ip) for c in running))
        if state is not None and state.sandbox is not None and state.sandbox.running:
            await self._runtime.stop_container(state.sandbox.container_id, SANDBOX_STOP_SECONDS)
        self._publish(work, await self._runtime.pod_state(work.uid), terminal=True)
        await self._probes.remove_pod(work.uid)
        self._status.terminate_pod(pod)
        log.info("pod terminated", extra={"pod": pod_ref(pod)})
