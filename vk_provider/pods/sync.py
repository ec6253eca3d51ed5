"""PodSync: one pod's sync and termination, as the kubelet's SyncPod / SyncTerminatingPod do them.

What lives here: `PodSync`, the syncer the pod workers' state machine (`pods/workers.py`)
calls. `sync` admits a pod that never ran here (`pods/admission.py`), compares the pod's
spec with the runtime's observed `PodRuntimeState` (read once, and again only when the sync
started or stopped something) and does the next steps:
activeDeadlineSeconds (also armed as a timer, so a pod past it is killed without waiting
for a resync), the volumes (FailedMount Events while one cannot be set up: an unsupported
type, a failed hostPath type check, the API-backed volumes' files), the sandbox (with its DNS
configuration, `pods/sandbox_dns.py`), then the
containers through the `ContainerPipeline` of `pods/containers.py`; it publishes the
generated status to the StatusManager with the ProbeManager's readiness / startup results.
`terminate` kills the containers (preStop, grace period) and the sandbox, then publishes the
terminal status; `cleanup` forgets a removed pod (its containers, volumes, status and
backoff). Built from one `SyncDeps`.
Must not: decide when a pod syncs or terminates (the workers do), act on one container
itself (the pipeline does), write to the apiserver (StatusManager and EventRecorder do),
or know about Docker.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import restart_policy
from vk_common.objects import uid as uid_of
from vk_common.sysctls import POD_REJECTED
from vk_provider.pods.admission import admit
from vk_provider.pods.backoff import pod_prefix
from vk_provider.pods.containers import ContainerPipeline
from vk_provider.pods.deps import SyncDeps
from vk_provider.pods.grace import effective_grace_period
from vk_provider.pods.pod_certificates import PodCertificates
from vk_provider.pods.policy import (
    DEADLINE_EXCEEDED,
    ERROR_RETRY_SECONDS,
    SANDBOX_STOP_SECONDS,
    active_deadline_left,
    finished,
    jitter,
    now,
)
from vk_provider.pods.runtime_configs import allowed_host_paths, sandbox_config_for
from vk_provider.pods.sandbox_dns import sandbox_dns
from vk_provider.pods.volume_sources import unsupported_volumes
from vk_provider.pods.volume_writer import PodVolumes
from vk_provider.pods.volumes import failed_mount_message
from vk_provider.pods.work import MOUNT_RETRY_FIRST_SECONDS, PodWork, wake_in
from vk_provider.runtime.pod_cidrs import node_pod_cidrs
from vk_provider.runtime.types import (
    ContainerRunState,
    PodRejected,
    PodRuntimeState,
    PodSandboxState,
    PodSpecRefused,
    RuntimeFailure,
)
from vk_provider.status.fields import TERMINAL_PHASES
from vk_provider.status.generate import generate_pod_status

log = get_logger("pods.workers")


class PodSync:
    def __init__(self, deps: SyncDeps) -> None:
        self._deps = deps
        self._runtime = deps.runtime
        self._status = deps.status
        self._recorder = deps.recorder
        self._probes = deps.probes
        self._volumes = PodVolumes(
            lambda uid, name: self._runtime.volume_dir(uid, name),
            deps.getter,
            deps.request_token,
            deps.node_allocatable,
            ship=lambda pod, name, files, group: self._runtime.ship_volume(pod, name, files, group),
            trust_bundles=deps.trust_bundles,
            pod_certificates=(
                None
                if deps.pod_certificate_api is None
                else PodCertificates(deps.pod_certificate_api, deps.node_object)
            ),
        )
        self._containers = ContainerPipeline(deps)

    # ------------------------------------------------------------------ syncing

    async def sync(self, work: PodWork) -> bool:
        """Desired against observed, one pass; True when the pod reached a terminal phase.

        The deadline is checked first (nothing starts once it passed: the kubelet's SyncPod
        generates the status, with ShouldEvict, before it acts) and again once the status was
        published, which gives a pod seen for the first time its startTime and so its timer.
        A sync that fails still arms the deadline's timer: a failing sync does not hold it back.
        """
        work.waiting = {}
        work.wake_at = None
        try:
            if self._deadline_exceeded(work):
                return True
            terminal = await self._sync_pod(work)
            return terminal or self._deadline_exceeded(work)
        except Exception:
            work.wake_at = None
            wake_in(work, jitter(ERROR_RETRY_SECONDS))
            self._arm_deadline(work)
            raise

    def _publish(self, work: PodWork, state: PodRuntimeState | None, terminal: bool) -> dict[str, Any]:
        readiness, started = self._probes.pod_results(work.pod, state)
        status = generate_pod_status(
            work.pod,
            state,
            waiting=work.waiting,
            pod_is_terminal=terminal,
            old_status=self._status.cached_status(work.uid),
            readiness=readiness,
            started=started,
            host_ip=self._deps.host_ip(),
            now=now(),
            terminal_reason=work.terminal_reason,
            allocated=work.resize.allocated,
            resize_conditions=work.resize.conditions(),
        )
        self._status.set_pod_status(work.pod, status)
        return status

    async def _current(self, work: PodWork, state: PodRuntimeState | None) -> PodRuntimeState | None:
        """`state` as it is now: read again only when this pass started or stopped something."""
        if not work.runtime_changed:
            return state
        work.runtime_changed = False
        return await self._runtime.pod_state(work.uid)

    def _arm_deadline(self, work: PodWork) -> float | None:
        """Seconds left before the pod's active deadline (None: none to enforce); a sync is
        due by then at the latest."""
        left = active_deadline_left(work.pod, self._status.cached_status(work.uid), time.time())
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
        log.info("active deadline exceeded, terminating", extra=pod_fields(work.pod))
        # Normal, as activeDeadlineHandler.ShouldEvict records it.
        self._recorder.event(work.pod, "Normal", DEADLINE_EXCEEDED[0], DEADLINE_EXCEEDED[1])
        return True

    async def _sync_pod(self, work: PodWork) -> bool:
        pod = work.pod
        self._probes.add_pod(pod)
        work.runtime_changed = False
        state = await self._runtime.pod_state(work.uid)
        if not work.adopted:
            work.adopted = True
            running = [
                c.name for c in (state.containers if state else ()) if c.state == ContainerRunState.RUNNING
            ]
            if running:
                log.info("adopted running containers", extra=pod_fields(pod, containers=running))
            if state is None and self._rejected(work):
                return True
        if not await self._mount_volumes(work, state):
            self._publish(work, state, terminal=False)
            return False
        sandbox = await self._ensure_sandbox(work, state)
        if sandbox is not None:
            await self._containers.sync_ephemeral_containers(work, state, sandbox)
            await self._containers.sync_pod_containers(work, state, sandbox)
        if work.terminal_reason is not None:
            return True
        status = self._publish(work, await self._current(work, state), terminal=False)
        return status.get("phase") in TERMINAL_PHASES

    def _rejected(self, work: PodWork) -> bool:
        """The kubelet's admission (`pods/admission.py`) of a pod that never ran here: True when
        it is rejected (its terminal reason set, the kubelet's rejectPod Event recorded)."""
        others = [p for p in self._deps.active_pods() if uid_of(p) != work.uid]
        rejection = admit(work.pod, self._deps.node_object(), others)
        if rejection is None:
            return False
        reason, message = rejection
        log.warning("pod rejected", extra=pod_fields(work.pod, reason=reason, detail=message))
        self._recorder.event(work.pod, "Warning", reason, message)
        work.terminal_reason = (reason, POD_REJECTED + message)
        return True

    async def _mount_volumes(self, work: PodWork, state: PodRuntimeState | None) -> bool:
        """Set up the pod's volumes: none of a type the node cannot mount (`volume_sources`), the
        hostPath type checks (the runtime's), the configMap, secret, downwardAPI and projected
        files (again: their content follows the API). False while a volume of a pod that never
        ran cannot be set up: it stays ContainerCreating, retried soon. Running containers keep
        the volume's last content."""
        failed = unsupported_volumes(work.pod)
        failed.update(
            await self._runtime.setup_host_paths(allowed_host_paths(work.pod, self._deps.docker.allow))
        )
        failed.update(await self._volumes.setup(work.pod))
        if not failed:
            work.volumes_mounted = True
            work.mount_retry = MOUNT_RETRY_FIRST_SECONDS
            return True
        for name, error in failed.items():
            message = failed_mount_message(name, error)
            log.info(
                "volume not mounted",
                extra=pod_fields(work.pod, reason="FailedMount", volume=name, detail=message),
            )
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
        work.runtime_changed = True
        if state is not None and state.sandbox is not None:
            # The sandbox died: containers still running in its namespaces go with it, and
            # restart in the new one per restartPolicy (the kubelet's podSandboxChanged).
            stale = [c for c in state.containers if c.state == ContainerRunState.RUNNING]
            if stale:
                log.info("pod sandbox is gone; stopping containers", extra=pod_fields(pod, count=len(stale)))
            grace = effective_grace_period(None, pod)
            await asyncio.gather(*(self._runtime.stop_container(c.container_id, grace) for c in stale))
            if restart_policy(pod) == "Never" and state.containers:
                # As the kubelet's computePodActions: no new sandbox for a Never pod that ran; it
                # ends Failed. One with no container yet (a provider killed between creating its
                # sandbox and starting it) gets another sandbox and runs.
                return None
        try:
            dns = await sandbox_dns(
                pod,
                self._deps.dns,
                self._recorder,
                node_object=self._deps.node_object(),
                node_ip=self._deps.host_ip(),
            )
            deps = self._deps
            cidrs = node_pod_cidrs(deps.node_object())
            config = sandbox_config_for(deps.runtime, deps.docker, pod, dns, cidrs, deps.dns.cluster_domain)
            sandbox = await self._runtime.ensure_sandbox(config)
        except PodSpecRefused as exc:
            log.warning("pod refused", extra=pod_fields(pod, err=exc.message))
            if isinstance(exc, PodRejected):
                # kubelet.go rejectPod's Event: the reason and the message without the prefix.
                self._recorder.event(pod, "Warning", exc.reason, exc.event_message)
            else:
                self._recorder.event(pod, "Warning", "Failed", f"Error: {exc.message}")
            work.terminal_reason = (exc.reason, exc.message)
            return None
        except RuntimeFailure as exc:
            log.warning("could not create the pod sandbox", extra=pod_fields(pod, err=exc.message))
            message = exc.message
            if not message.startswith("Failed to create pod sandbox"):
                message = f"Failed to create pod sandbox: {message}"
            self._recorder.event(pod, "Warning", "FailedCreatePodSandBox", message)
            retry = jitter(ERROR_RETRY_SECONDS)
            wake_in(work, retry)
            # The failed attempt's container create and remove are engine events of this pod;
            # without this they would start the next attempt at once, ten a second.
            work.events_quiet_until = asyncio.get_running_loop().time() + retry
            return None
        return sandbox

    # ------------------------------------------------------------------ termination

    async def terminate(self, work: PodWork) -> None:
        """Kill the containers (preStop, grace period) and the sandbox; publish the terminal status."""
        pod = work.pod
        await self._probes.stop_liveness_and_startup(work.uid)
        work.grace = effective_grace_period(work.grace, pod)
        work.runtime_changed = False
        state = await self._runtime.pod_state(work.uid)
        running = [
            c
            for c in (state.containers if state is not None else ())
            if c.state in (ContainerRunState.RUNNING, ContainerRunState.CREATED)
        ]
        if running:
            log.info(
                "stopping containers",
                extra=pod_fields(pod, count=len(running), gracePeriodSeconds=work.grace),
            )
        pod_ip = state.sandbox.ip if state is not None and state.sandbox is not None else ""
        await asyncio.gather(*(self._containers.kill(work, c, work.grace, pod_ip) for c in running))
        if state is not None and state.sandbox is not None and state.sandbox.running:
            work.runtime_changed = True
            await self._runtime.stop_container(state.sandbox.container_id, SANDBOX_STOP_SECONDS)
        self._publish(work, await self._current(work, state), terminal=True)
        await self._probes.remove_pod(work.uid)
        self._containers.resizer.forget(work.uid)  # a terminated pod's resources are free
        self._status.terminate_pod(pod)
        log.info("pod terminated", extra=pod_fields(pod))

    async def cleanup(self, work: PodWork) -> None:
        """The pod left its source and is terminated: delete its containers, forget the rest."""
        await self._runtime.remove_pod(work.uid)
        self._volumes.forget(work.uid)
        self._status.remove_pod(work.uid)
        self._deps.backoff.forget_prefix(pod_prefix(work.pod))
        log.info("pod removed, containers deleted", extra=pod_fields(work.pod))
