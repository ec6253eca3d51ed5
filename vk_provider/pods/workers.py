"""PodWorkers: one serialised asyncio worker per pod UID driving its pod (upstream
pkg/kubelet/pod_workers.go).

What lives here: `PodWorkers`, the per-UID state machine (the kubelet's podWorkers), which
receives PodConfig updates, runtime events (after a gap in them, every pod syncs), probe
changes, timers and resyncs, and per pod runs syncing -> terminating -> terminated, calling its
`PodSyncer` (`sync`, `terminate`, `cleanup`: `pods/sync.py`, as pkg/kubelet/pod_workers.go calls
its podSyncer) for the work of each state with a read-only `PodTask`, and recording the
`SyncResult` a sync hands back: the per-pod record (`pods/work.PodWork`) is written here alone.
A failed step records FailedSync and is retried.
`adopt` and the housekeeping pass make a restart safe: containers of pods that still exist are
kept as they are, those of vanished pods are stopped and removed, as are the volumes and files a
vanished pod left without containers (`Runtime.list_pod_storage`: listed, as the engine's
containers, when something happened since the last pass that listed them, else once a minute);
housekeeping also drops the backoff entries that expired (the kubelet's HandlePodCleanups).
Each step is timed in `kubelet_pod_worker_duration_seconds{operation_type}`. `evict` is the eviction
manager's kill (`pods/eviction.py` runs the emptyDir sizeLimit check over the running pods). The
pure rules are `pods/policy.py`.
Must not: sync or terminate a pod itself (the syncer does), write to the apiserver
(StatusManager and EventRecorder do), or know about Docker.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from vk_common.logging import get_logger, pod_fields, pod_ref
from vk_common.objects import meta
from vk_common.objects import uid as uid_of
from vk_common.tasks import cancel_and_wait
from vk_provider.config import DockerConfig
from vk_provider.kuberuntime.dns import NO_CLUSTER_DNS, NodeDNS
from vk_provider.metrics import ProviderMetrics
from vk_provider.pods.backoff import Backoff
from vk_provider.pods.config import PodUpdate, UpdateKind
from vk_provider.pods.deps import SyncDeps
from vk_provider.pods.env import ObjectGetter
from vk_provider.pods.eviction import EVICTED, EVICTION_GRACE_SECONDS, EmptyDirEviction
from vk_provider.pods.grace import ORPHAN_GRACE_SECONDS
from vk_provider.pods.pod_certificates import PodCertificateApi
from vk_provider.pods.policy import ERROR_RETRY_SECONDS, jitter
from vk_provider.pods.service_env import ServiceSource
from vk_provider.pods.sync import PodSync
from vk_provider.pods.volume_writer import TokenRequester, TrustBundleLister
from vk_provider.pods.work import EventSink, PodTask, PodWork, StatusSink, SyncResult, WorkerState
from vk_provider.probes.manager import ProbeManager
from vk_provider.runtime.call_order import PriorityGate, call_priority
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerRunState, EventsResumed, PodRuntimeState
from vk_provider.status.conditions import need_to_reconcile_pod_readiness
from vk_provider.status.fields import TERMINAL_PHASES

__all__ = ["EventSink", "PodSyncer", "PodWorkers", "StatusSink", "WorkerState"]

log = get_logger("pods.workers")

HOUSEKEEPING_SECONDS = 10.0  # the kubelet's HandlePodCleanups runs every 2 s; Docker listing costs more
# At rest (no runtime event since the last pass that listed the engine), the engine and the disk
# are still listed this often (the kubelet's evented PLEG relists every 300 s while events flow).
FULL_HOUSEKEEPING_SECONDS = 60.0


class PodSyncer(Protocol):
    """The work of each state, as pod_workers.go's podSyncer (SyncPod, SyncTerminatingPod,
    SyncTerminatedPod); each gets the pod read-only, the worker records what comes back."""

    async def sync(self, task: PodTask) -> SyncResult:
        """One sync of a running pod."""
        ...

    async def terminate(self, task: PodTask) -> None:
        """Stop the pod's containers and publish its terminal status."""
        ...

    async def cleanup(self, task: PodTask) -> None:
        """Forget a terminated pod that left its source."""
        ...

    def admitted(self, uid: str) -> bool:
        """Whether the pod passed admission (its first sync)."""
        ...


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
        request_token: TokenRequester | None = None,
        trust_bundles: TrustBundleLister | None = None,
        pod_certificate_api: PodCertificateApi | None = None,
        services: ServiceSource | None = None,
        runtime_classes: Callable[[str], str] | None = None,
        node_object: Callable[[], Mapping[str, Any]] = dict,
        dns: NodeDNS = NO_CLUSTER_DNS,
        docker: DockerConfig | None = None,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        """The keyword parts other than the sync limits and `metrics` become the syncer's `SyncDeps`."""
        self._runtime = runtime
        self._metrics = metrics or ProviderMetrics()
        # Sync slots and the runtime's calls both go to the oldest pod first (`call_order`): in a
        # burst the first pods run at the speed of a lone pod instead of all near the end.
        self._syncs = PriorityGate(max_concurrent_syncs)
        self._arrivals = itertools.count(1)
        self._resync = resync_interval
        self._backoff = backoff or Backoff()
        self._work: dict[str, PodWork] = {}
        self._probes = ProbeManager(runtime, status, recorder, self._probe_changed, self._metrics)
        self._recorder = recorder
        self._syncer: PodSyncer = PodSync(
            SyncDeps(
                runtime=runtime,
                status=status,
                recorder=recorder,
                probes=self._probes,
                backoff=self._backoff,
                getter=getter,
                host_ip=host_ip,
                node_allocatable=node_allocatable,
                request_token=request_token,
                trust_bundles=trust_bundles,
                pod_certificate_api=pod_certificate_api,
                services=services,
                runtime_classes=runtime_classes,
                node_object=node_object,
                active_pods=self._admitted_pods,
                dns=dns,
                docker=docker or DockerConfig(),
                metrics=self._metrics,
            )
        )
        self._eviction = EmptyDirEviction(runtime, self._running_pods, self.evict)
        self._events_task: asyncio.Task[None] | None = None
        self._eviction_task: asyncio.Task[None] | None = None
        self._housekeeping: asyncio.Task[None] | None = None
        # Whether the next housekeeping pass lists the engine and the disk whatever the time: at
        # first, after a runtime event of a pod no worker knows (a container someone else made
        # with the node's labels) or a gap in the events, and after a worker's end (what its
        # removal left, a busy cgroup, is looked for). Not after the events of the pods with a
        # worker: their workers read them, and a node-wide list on every pass of a burst grows
        # with the pods (a 500-pod burst listed its 1,000 containers about a dozen times;
        # docs/performance.md, 2026-12-07, late night); a pod's first sync reads no list of its
        # own (it had no container), and the list of every 60 s serves its resync.
        self._look_everywhere = True
        self._closing = False

    # ------------------------------------------------------------------ lifecycle

    async def adopt(self, known_uids: Iterable[str]) -> None:
        """Before acting on API pods: remove the containers of pods that no longer exist.

        Pods in `known_uids` (every UID some source still has) keep their containers as they
        are; their workers adopt them on their first (idempotent) sync.
        """
        known = set(known_uids)
        await self._remove_orphans(lambda uid: uid in known)

    async def _remove_orphans(self, keep: Callable[[str], bool]) -> None:
        """Remove the pods the runtime holds, by their containers or by what they left on disk
        (the kubelet's HandlePodCleanups and cleanupOrphanedPodDirs), for which `keep` is False;
        `keep` is asked after the listing, so a pod added meanwhile is kept."""
        listed = await self._runtime.list_pods()
        stored = await self._runtime.list_pod_storage()
        left = [PodRuntimeState(uid=uid, namespace="", name="") for uid in stored - listed.keys()]
        orphans = [state for state in (*listed.values(), *left) if not keep(state.uid)]
        await asyncio.gather(*(self._remove_orphan(state) for state in orphans))

    async def _remove_orphan(self, state: PodRuntimeState) -> None:
        ref = f"{state.namespace}/{state.name}"
        log.info(
            "removing what a pod that no longer exists left in the engine",
            extra={"pod": ref, "uid": state.uid},
        )
        try:
            running = [c for c in state.containers if c.state == ContainerRunState.RUNNING]
            await asyncio.gather(
                *(self._runtime.stop_container(c.container_id, ORPHAN_GRACE_SECONDS) for c in running)
            )
            await self._runtime.remove_pod(state.uid)
        except Exception:
            log.exception("could not remove the containers of a pod", extra={"pod": ref, "uid": state.uid})

    async def start(self) -> None:
        self._events_task = asyncio.create_task(self._pump_events(), name="pod workers: runtime events")
        self._eviction_task = asyncio.create_task(self._eviction.run(), name="pod workers: emptyDir eviction")

    def start_housekeeping(self, interval: float = HOUSEKEEPING_SECONDS) -> None:
        """Periodically remove containers of pods no worker knows (call once the sources synced)."""
        if self._housekeeping is None:
            self._housekeeping = asyncio.create_task(self._housekeep(interval), name="pod housekeeping")

    async def _housekeep(self, interval: float) -> None:
        """Every `interval`: the expired backoff entries dropped, and the orphans removed when
        the engine changed since the last such pass (`_look_everywhere`) or
        `FULL_HOUSEKEEPING_SECONDS` passed: while the runtime's events flow, a container of a pod
        without a worker shows itself by them, and a node at rest does not list its containers
        every pass (docs/pods.md)."""
        loop = asyncio.get_running_loop()
        next_full = loop.time()
        while True:
            await asyncio.sleep(interval)
            try:
                if self._look_everywhere or loop.time() >= next_full:
                    self._look_everywhere = False  # what comes during the pass is for the next
                    next_full = loop.time() + FULL_HOUSEKEEPING_SECONDS
                    try:
                        await self._remove_orphans(lambda uid: uid in self._work)
                    except Exception:
                        self._look_everywhere = True
                        raise
                self._backoff.gc()
            except Exception:
                log.exception("pod housekeeping failed")

    async def stop(self) -> None:
        """Stop every worker; the pods' containers keep running."""
        self._closing = True
        tasks = [w.task for w in self._work.values() if w.task is not None]
        tasks.extend(t for t in (self._events_task, self._eviction_task, self._housekeeping) if t is not None)
        await cancel_and_wait(*tasks)
        await self._probes.stop()

    def states(self) -> dict[str, WorkerState]:
        return {uid: w.state for uid, w in self._work.items()}

    # ------------------------------------------------------------------ triggers

    def update(self, update: PodUpdate) -> None:
        """PodConfig's handler: route one classified update to the pod's worker."""
        uid = uid_of(update.pod)
        work = self._work.get(uid)
        if update.kind == UpdateKind.REMOVE:
            if work is not None:
                work.removed = True
                work.kill = True
                work.ring()
            return
        if work is None:
            if self._closing:
                return
            work = PodWork(uid=uid, pod=update.pod, arrival=next(self._arrivals))
            self._work[uid] = work
            work.task = asyncio.create_task(self._run(work), name=f"pod worker {pod_ref(update.pod)}")
        if work.state == WorkerState.TERMINATED:
            return  # a finished UID ignores updates until it is removed
        work.pod = update.pod
        phase = (update.pod.get("status") or {}).get("phase")
        if meta(update.pod).get("deletionTimestamp") or phase in TERMINAL_PHASES:
            work.kill = True
        if update.kind != UpdateKind.RECONCILE or work.kill or need_to_reconcile_pod_readiness(update.pod):
            work.ring()

    def _admitted_pods(self) -> list[Mapping[str, Any]]:
        """The pods that passed admission here and are not terminating (the kubelet's activePods
        for the next admission): a pod is admitted once, at its first sync, one at a time."""
        return [
            w.pod
            for w in self._work.values()
            if w.state == WorkerState.SYNCING
            and not w.kill
            and w.terminal_reason is None
            and self._syncer.admitted(w.uid)
        ]

    def _running_pods(self) -> list[Mapping[str, Any]]:
        return [w.pod for w in self._work.values() if w.state == WorkerState.SYNCING and not w.kill]

    def evict(self, uid: str, message: str) -> None:
        """The eviction manager's evictPod: the Event, then the pod is killed with a 1s grace
        period and ends Failed with reason Evicted and `message`."""
        work = self._work.get(uid)
        if work is None or work.kill or work.state != WorkerState.SYNCING:
            return
        self._recorder.event(work.pod, "Warning", EVICTED, message)
        work.terminal_reason = (EVICTED, message)
        work.grace = EVICTION_GRACE_SECONDS
        work.kill = True
        work.ring()

    async def _pump_events(self) -> None:
        while True:
            try:
                async for event in self._runtime.events():
                    if isinstance(event, EventsResumed):
                        self._look_everywhere = True
                        # What the gap hid (containers that died with a restarted engine) is
                        # only seen by reading every pod again: the kubelet's PLEG relist.
                        for each in self._work.values():
                            each.ring()
                        continue
                    work = self._work.get(event.pod_uid)
                    if work is None:
                        self._look_everywhere = True  # an orphan's, maybe
                        continue
                    if asyncio.get_running_loop().time() < work.events_quiet_until:
                        continue
                    if event.action != "start" or not self._own_start(work, event.container_id):
                        work.ring()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("runtime event stream failed; resubscribing")
                await asyncio.sleep(1.0)

    @staticmethod
    def _own_start(work: PodWork, container_id: str) -> bool:
        """Whether a container's "start" event is of a start the pod's sync made (True: it needs
        no sync; the status that sync published came after the start, from its inspect). During
        a sync the event is kept (and rings) until the sync says what it started
        (`_after_sync`); after it, a start it named is one still to come."""
        if container_id in work.own_starts:
            work.own_starts.discard(container_id)
            return True
        if work.starts_during_sync is None:
            return False
        work.starts_during_sync.add(container_id)
        work.doorbell.set()
        return True

    @staticmethod
    def _after_sync(work: PodWork, started: frozenset[str]) -> None:
        """The sync ended: when what rang during it was only the "start" events of containers it
        started itself, it needs no second sync (the kubelet's PLEG would report them and the
        pod would sync again to find nothing new: a list of the pod and a pass for nothing)."""
        during, work.starts_during_sync = work.starts_during_sync or set(), None
        if during and during <= started and not work.rung_during_sync:
            work.doorbell.clear()
        work.own_starts = set(started - during)

    def _probe_changed(self, uid: str) -> None:
        """A probe result changed: sync the pod (the kubelet's handleProbeSync)."""
        work = self._work.get(uid)
        if work is not None:
            work.ring()

    # ------------------------------------------------------------------ the worker

    async def _run(self, work: PodWork) -> None:
        loop = asyncio.get_running_loop()
        call_priority.set(work.arrival)  # this task's context: its runtime calls, its syncs
        work.ring()
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
                log.exception("error syncing pod", extra=pod_fields(work.pod))
                self._recorder.event(work.pod, "Warning", "FailedSync", f"error syncing pod: {exc}")
                if work.state != WorkerState.SYNCING:  # a failed sync set its own retry and deadline
                    work.wake_at = loop.time() + jitter(ERROR_RETRY_SECONDS)

    @staticmethod
    def _record(work: PodWork, result: SyncResult) -> None:
        """What one sync handed back: its terminal reason, its next timer, its quiet time."""
        loop = asyncio.get_running_loop()
        if result.terminal_reason is not None:
            work.terminal_reason = result.terminal_reason
        work.wake_at = None if result.wake_in is None else loop.time() + result.wake_in
        if result.quiet_for:
            work.events_quiet_until = loop.time() + result.quiet_for

    async def _step(self, work: PodWork) -> bool:
        """One turn of the state machine; True when the worker is done for good."""
        if work.state == WorkerState.SYNCING and not work.kill:
            await self._syncs.acquire(work.arrival)
            work.starts_during_sync, work.rung_during_sync = set(), False
            result = SyncResult()
            try:
                with self._metrics.pod_worker_duration.labels("sync").time():
                    result = await self._syncer.sync(work.as_task())
            finally:
                self._syncs.release()
                self._after_sync(work, result.started)
            self._record(work, result)
            if result.error is not None:
                raise result.error
            if result.terminal:
                work.kill = True
        if work.state == WorkerState.SYNCING and work.kill:
            work.state = WorkerState.TERMINATING
        if work.state == WorkerState.TERMINATING:
            with self._metrics.pod_worker_duration.labels("terminate").time():
                await self._syncer.terminate(work.as_task())
            work.state = WorkerState.TERMINATED
        if work.state == WorkerState.TERMINATED and work.removed:
            with self._metrics.pod_worker_duration.labels("cleanup").time():
                await self._syncer.cleanup(work.as_task())
            self._work.pop(work.uid, None)
            self._look_everywhere = True
            return True
        return False
