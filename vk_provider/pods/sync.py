"""PodSync: one pod's sync and termination, as the kubelet's SyncPod / SyncTerminatingPod do them.

What lives here: `PodSync`, the syncer the pod workers' state machine (`pods/workers.py`) calls
with a read-only `PodTask`; each call hands back a `SyncResult` the worker records
(`pods/work.py`). `sync` checks activeDeadlineSeconds (also armed as a timer, so a pod past it
is killed without waiting for a resync), admits a pod that never ran here (`pods/admission.py`),
sets up its volumes (FailedMount Events while one cannot be: an unsupported type, a failed
hostPath type check, the API-backed volumes' files), allocates its resources, the containers'
and the pod level's (`pods/resize.py`), reads the runtime's `PodRuntimeState` once, has
`pods/plan.compute_pod_actions` plan from that snapshot what to do, then executes the plan: the
sandbox (with its DNS configuration, `pods/sandbox_dns.py`), then each container action in order
(pull through `pods/images.py`, resolve the environment, compile with the kuberuntime layer,
start; postStart; restart after the crash-loop back-off; replace; resize in place; kill with
preStop and the grace period). It publishes the generated status to the StatusManager with the
ProbeManager's readiness / startup results, reading the runtime's state again only when the pass
started or stopped something. `terminate` kills the containers and the sandbox, then publishes
the terminal status; `cleanup` forgets a removed pod (its containers, volumes, status, back-off
and what this syncer kept of it).
Must not: decide when a pod syncs or terminates (the workers do), decide what to do with a
container (the plan does), write to the apiserver (StatusManager and EventRecorder do), or know
about Docker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import format_pod, spec
from vk_common.objects import uid as uid_of
from vk_common.sysctls import POD_REJECTED
from vk_provider.kube.runtime_classes import RuntimeClassNotFound
from vk_provider.kuberuntime.container_config import ContainerLaunch, spec_hash
from vk_provider.kuberuntime.oom import node_memory_capacity
from vk_provider.kuberuntime.restart_all import restarting
from vk_provider.kuberuntime.sandbox_config import sandbox_config
from vk_provider.pods.admission import admit, needs_other_pods
from vk_provider.pods.backoff import container_key, crash_loop_message, pod_prefix
from vk_provider.pods.deps import SyncDeps
from vk_provider.pods.env import PodAddresses, resolve_container_env
from vk_provider.pods.grace import effective_grace_period
from vk_provider.pods.images import ImageManager
from vk_provider.pods.lifecycle import ContainerLifecycle
from vk_provider.pods.plan import ContainerAction, PodActions, PodSnapshot, Step, compute_pod_actions
from vk_provider.pods.pod_certificates import PodCertificates
from vk_provider.pods.policy import (
    DEADLINE_EXCEEDED,
    ERROR_RETRY_SECONDS,
    SANDBOX_STOP_SECONDS,
    active_deadline_left,
    jitter,
    now,
)
from vk_provider.pods.resize import RESIZE_RETRY_SECONDS, PodResizer
from vk_provider.pods.runtime_configs import admit_sandbox, allowed_host_paths, container_config_for
from vk_provider.pods.sandbox_dns import HostResolvConf, sandbox_dns
from vk_provider.pods.service_env import pod_service_env
from vk_provider.pods.volume_sources import unsupported_volumes
from vk_provider.pods.volume_writer import PodVolumes
from vk_provider.pods.volumes import failed_mount_message
from vk_provider.pods.work import PodTask, SyncPass, SyncResult
from vk_provider.runtime.pod_cidrs import node_pod_cidrs
from vk_provider.runtime.types import (
    ContainerRunState,
    PodRejected,
    PodRuntimeState,
    PodSandboxState,
    PodSpecRefused,
    RuntimeFailure,
)
from vk_provider.status.fields import TERMINAL_PHASES, ContainerWaiting
from vk_provider.status.generate import generate_pod_status

log = get_logger("pods.workers")

MOUNT_RETRY_FIRST_SECONDS = 1.0  # a failed volume set-up is retried soon, doubling up to ERROR_RETRY


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
        self._images = ImageManager(deps)
        self._lifecycle = ContainerLifecycle(deps.runtime, deps.recorder)
        self._resizer = PodResizer(deps)
        self._host_resolv_conf = HostResolvConf()
        # What this syncer keeps of each pod between its syncs, by UID: whether it was seen (its
        # first sync adopted what already ran) and admitted, whether its API-backed volumes were
        # set up once, the next volume retry, the last pass's waiting reasons (for the terminal
        # status).
        self._seen: set[str] = set()
        self._admitted: set[str] = set()
        self._volumes_ready: set[str] = set()
        self._mount_retry: dict[str, float] = {}
        self._waiting: dict[str, dict[str, ContainerWaiting]] = {}

    def admitted(self, uid: str) -> bool:
        """Whether the pod passed admission here (at its first sync; one at a time, so the next
        pod's admission sees it)."""
        return uid in self._admitted

    # ------------------------------------------------------------------ syncing

    async def sync(self, task: PodTask) -> SyncResult:
        """Desired against observed, one pass; terminal when the pod reached a terminal phase.

        The deadline is checked first (nothing starts once it passed: the kubelet's SyncPod
        generates the status, with ShouldEvict, before it acts) and again once the status was
        published, which gives a pod seen for the first time its startTime and so its timer.
        A sync that fails still arms the deadline's timer: a failing sync does not hold it back.
        """
        run = SyncPass()
        try:
            terminal = self._deadline_exceeded(task, run) or await self._sync_pod(task, run)
            terminal = terminal or self._deadline_exceeded(task, run)
        except Exception as exc:
            failed = SyncPass()
            failed.wake_in(jitter(ERROR_RETRY_SECONDS))
            self._arm_deadline(task, failed)
            return SyncResult(wake_in=failed.wake, error=exc)
        finally:
            self._waiting[task.uid] = run.waiting
            run.drop_lookups()
        started = frozenset(run.started_ids)
        return SyncResult(terminal, run.terminal_reason, run.wake, run.quiet_for, started=started)

    def _publish(
        self, task: PodTask, run: SyncPass, state: PodRuntimeState | None, terminal: bool
    ) -> dict[str, Any]:
        readiness, started = self._probes.pod_results(task.pod, state)
        resize = self._resizer.state(task.uid)
        status = generate_pod_status(
            task.pod,
            state,
            waiting=run.waiting,
            pod_is_terminal=terminal,
            old_status=self._status.cached_status(task.uid),
            readiness=readiness,
            started=started,
            host_ip=self._deps.host_ip(),
            now=now(),
            terminal_reason=run.terminal_reason or task.terminal_reason,
            allocated=resize.allocated,
            resize_conditions=resize.conditions(),
            allocated_pod=self._resizer.allocated_pod(task.uid, task.pod),
            pod_cgroup=resize.cgroup,
        )
        self._status.set_pod_status(task.pod, status)
        return status

    async def _current(
        self, pod: Mapping[str, Any], run: SyncPass, state: PodRuntimeState | None
    ) -> PodRuntimeState | None:
        """`state` as it is now: read again when this pass stopped or changed something
        (`SyncPass.runtime_changed`); when it only made the sandbox and started containers,
        `state` with them, from their inspects just after their start (a list of the pod
        would tell nothing more, and cost one Docker call of every new pod)."""
        made, started = run.made_sandbox, tuple(run.started)
        run.made_sandbox, run.started = None, []
        if run.runtime_changed:
            run.runtime_changed = False
            return await self._runtime.pod_state(uid_of(pod))
        if made is None and not started:
            return state
        meta = pod.get("metadata") or {}
        base = state or PodRuntimeState(uid_of(pod), str(meta.get("namespace", "")), str(meta.get("name")))
        return dataclasses.replace(
            base,
            sandbox=made or base.sandbox,
            containers=tuple(sorted((*base.containers, *started), key=lambda c: (c.name, c.attempt))),
        )

    def _arm_deadline(self, task: PodTask, run: SyncPass) -> float | None:
        """Seconds left before the pod's active deadline (None: none to enforce); a sync is
        due by then at the latest."""
        left = active_deadline_left(task.pod, self._status.cached_status(task.uid), time.time())
        if left is not None:
            run.wake_in(left)
        return left

    def _deadline_exceeded(self, task: PodTask, run: SyncPass) -> bool:
        """The kubelet's active deadline check (`policy.active_deadline_left`): True once the pod is
        past spec.activeDeadlineSeconds, with its terminal reason set and the Event recorded;
        otherwise a timer is armed for the moment it will be, so it fires without a resync."""
        left = self._arm_deadline(task, run)
        if left is None or left > 0:
            return False
        run.terminal_reason = DEADLINE_EXCEEDED
        log.info("active deadline exceeded, terminating", extra=pod_fields(task.pod))
        # Normal, as activeDeadlineHandler.ShouldEvict records it.
        self._recorder.event(task.pod, "Normal", DEADLINE_EXCEEDED[0], DEADLINE_EXCEEDED[1])
        return True

    async def _sync_pod(self, task: PodTask, run: SyncPass) -> bool:
        pod, uid = task.pod, task.uid
        self._probes.add_pod(pod)
        state = await self._runtime.pod_state(uid)
        if uid not in self._seen:
            self._seen.add(uid)
            running = [
                c.name for c in (state.containers if state else ()) if c.state == ContainerRunState.RUNNING
            ]
            if running:
                log.info("adopted running containers", extra=pod_fields(pod, containers=running))
            if state is None and self._rejected(task, run):
                return True
            self._admitted.add(uid)
        if not await self._mount_volumes(task, run, state):
            self._publish(task, run, state, terminal=False)
            return False
        retry = self._resizer.allocate(uid, pod)
        if retry is not None:
            run.wake_in(retry)
        actions = compute_pod_actions(self._snapshot(task, state))
        if any(a.step == Step.RESET for a in actions.containers):
            # The status first, with the exit that triggers it (AllContainersRestarting True), as
            # the kubelet's SyncPod generates it before it acts: the removed containers then
            # wait with RestartingAllContainers, one restart more, and the pod is not Failed.
            self._publish(task, run, state, terminal=False)
        sandbox = await self._sandbox(task, run, actions)
        if sandbox is not None:
            # The pod cgroup widened before the containers' resize, set after (pods/resize.py).
            resizes = [
                (a.container, a.instance) for a in actions.containers if a.step == Step.RESIZE and a.instance
            ]
            lifted = True
            if resizes or self._resizer.state(uid).in_progress is not None:
                lifted = await self._resizer.check_memory(uid, pod, resizes)
                lifted = lifted and await self._resizer.pod_cgroup(uid, pod, lift=True)
            actuated = await self._act(task, run, actions, sandbox, resize=lifted)
            actuated = actuated and await self._resizer.pod_cgroup(uid, pod, lift=False)
            self._resizer.finish(uid, pod, actuated)
        if run.terminal_reason is not None:
            return True
        status = self._publish(task, run, await self._current(pod, run, state), terminal=False)
        return status.get("phase") in TERMINAL_PHASES

    def _snapshot(self, task: PodTask, state: PodRuntimeState | None) -> PodSnapshot:
        """What the plan reads: the pod, its runtime state, its allocation and the probes' verdicts
        on its running instances."""
        uid = task.uid
        running = [c for c in (state.containers if state else ()) if c.state == ContainerRunState.RUNNING]
        failed = {c.container_id: self._probes.failed_probe(uid, c.name, c.container_id) for c in running}
        cached = self._status.cached_status(uid) or task.pod.get("status") or {}
        counts = {
            str(s.get("name")): int(s.get("restartCount") or 0)
            for key in ("initContainerStatuses", "containerStatuses")
            for s in cached.get(key) or []
        }
        return PodSnapshot(
            self._resizer.allocated_pod(uid, task.pod),
            state,
            allocated=self._resizer.state(uid).allocated or {},
            started=frozenset(
                c.container_id for c in running if self._probes.started(uid, c.name, c.container_id)
            ),
            failed_probes={cid: failure for cid, failure in failed.items() if failure is not None},
            restart_all=restarting(task.pod, state, cached),
            restart_counts=counts,
            memory_requests=self._resizer.state(uid).memory_requests,
        )

    def _rejected(self, task: PodTask, run: SyncPass) -> bool:
        """The kubelet's admission (`pods/admission.py`) of a pod that never ran here: True when
        it is rejected (its terminal reason set, the kubelet's rejectPod Event recorded)."""
        others = []
        if needs_other_pods(task.pod):
            others = [p for p in self._deps.active_pods() if uid_of(p) != task.uid]
        rejection = admit(task.pod, self._deps.node_object(), others)
        if rejection is None:
            return False
        reason, message = rejection
        log.warning("pod rejected", extra=pod_fields(task.pod, reason=reason, detail=message))
        self._recorder.event(task.pod, "Warning", reason, message)
        run.terminal_reason = (reason, POD_REJECTED + message)
        return True

    async def _mount_volumes(self, task: PodTask, run: SyncPass, state: PodRuntimeState | None) -> bool:
        """Set up the pod's volumes: none of a type the node cannot mount (`volume_sources`), the
        hostPath type checks (the runtime's), the configMap, secret, downwardAPI and projected
        files (again: their content follows the API). False while a volume of a pod that never
        ran cannot be set up: it stays ContainerCreating, retried soon. Running containers keep
        the volume's last content."""
        pod, uid = task.pod, task.uid
        failed = unsupported_volumes(pod)
        failed.update(await self._runtime.setup_host_paths(allowed_host_paths(pod, self._deps.docker.allow)))
        failed.update(await self._volumes.setup(pod))
        if not failed:
            self._volumes_ready.add(uid)
            self._mount_retry.pop(uid, None)
            return True
        for name, error in failed.items():
            message = failed_mount_message(name, error)
            log.info(
                "volume not mounted",
                extra=pod_fields(pod, reason="FailedMount", volume=name, detail=message),
            )
            self._recorder.event(pod, "Warning", "FailedMount", message)
        retry = self._mount_retry.get(uid, MOUNT_RETRY_FIRST_SECONDS)
        run.wake_in(retry)
        self._mount_retry[uid] = min(retry * 2, ERROR_RETRY_SECONDS)
        return uid in self._volumes_ready or (state is not None and bool(state.containers))

    # ------------------------------------------------------------------ executing the plan

    async def _sandbox(self, task: PodTask, run: SyncPass, actions: PodActions) -> PodSandboxState | None:
        """The sandbox the containers join: the running one, or a new one (after the containers
        of a dead one are stopped); None when there is none (a refusal, a failure, or none is due)."""
        pod = task.pod
        if actions.stop:
            log.info(
                "pod sandbox is gone; stopping containers", extra=pod_fields(pod, count=len(actions.stop))
            )
            grace = effective_grace_period(None, pod)
            await asyncio.gather(*(self._runtime.stop_container(c.container_id, grace) for c in actions.stop))
        if actions.stop:
            run.runtime_changed = True
        if not actions.create_sandbox:
            return actions.sandbox
        first = next((a for a in actions.containers if a.step == Step.START), None)
        if first is not None:  # its image is looked up while the sandbox is made
            self._images.look_ahead(run, str(first.container.get("image", "")))
        try:
            dns = await sandbox_dns(
                pod,
                self._deps.dns,
                self._recorder,
                node_object=self._deps.node_object(),
                node_ip=self._deps.host_ip(),
                host_resolv_conf=self._host_resolv_conf,
            )
            deps = self._deps
            admit_sandbox(deps.runtime, deps.docker, pod)
            config = sandbox_config(
                self._resizer.allocated_pod(task.uid, pod),
                dns,
                node_pod_cidrs(deps.node_object()),
                deps.dns.cluster_domain,
                runtime_handler=self._runtime_handler(pod),
                allocated=self._resizer.state(task.uid).allocated,
            )
            sandbox = await self._runtime.ensure_sandbox(config)
            run.made_sandbox = sandbox
            run.started_ids.add(sandbox.container_id)
            if config.cgroup is not None:  # made with these limits: not written again after the pass
                self._resizer.pod_cgroup_set(task.uid, config.cgroup.resources)
            return sandbox
        except PodSpecRefused as exc:
            log.warning("pod refused", extra=pod_fields(pod, err=exc.message))
            if isinstance(exc, PodRejected):
                # kubelet.go rejectPod's Event: the reason and the message without the prefix.
                self._recorder.event(pod, "Warning", exc.reason, exc.event_message)
            else:
                self._recorder.event(pod, "Warning", "Failed", f"Error: {exc.message}")
            run.terminal_reason = (exc.reason, exc.message)
        except RuntimeFailure as exc:
            run.runtime_changed = True  # a failed attempt may leave a container behind
            log.warning("could not create the pod sandbox", extra=pod_fields(pod, err=exc.message))
            message = exc.message
            if not message.startswith("Failed to create pod sandbox"):
                message = f"Failed to create pod sandbox: {message}"
            self._recorder.event(pod, "Warning", "FailedCreatePodSandBox", message)
            retry = jitter(ERROR_RETRY_SECONDS)
            run.wake_in(retry)
            # The failed attempt's container create and remove are engine events of this pod;
            # without this they would start the next attempt at once, ten a second.
            run.quiet_for = retry
        return None

    def _runtime_handler(self, pod: Mapping[str, Any]) -> str:
        """The handler of the pod's RuntimeClass (the kubelet's LookupRuntimeHandler); a
        RuntimeClass that cannot be found fails the sandbox's creation, retried."""
        name = str(spec(pod).get("runtimeClassName") or "")
        lookup = self._deps.runtime_classes
        if lookup is None or not name:
            return ""
        try:
            return lookup(name)
        except RuntimeClassNotFound as exc:
            raise RuntimeFailure(str(exc)) from exc

    async def _act(
        self, task: PodTask, run: SyncPass, actions: PodActions, sandbox: PodSandboxState, *, resize: bool
    ) -> bool:
        """Execute the container actions in order (the in-place resizes only with `resize`;
        without it the memory check or the pod cgroup's widening failed); a failed gate ends
        them. True when every container the plan looked at runs with its allocated resources
        (the resize is done)."""
        actuated = True
        for action in actions.containers:
            if action.step == Step.RESIZE and not resize:
                actuated = False
                continue
            done = await self._execute(task, run, action, sandbox)
            if action.step == Step.RESIZE:
                actuated = actuated and done
            if action.gate and not done:
                break
        return actuated

    async def _execute(
        self, task: PodTask, run: SyncPass, action: ContainerAction, sandbox: PodSandboxState
    ) -> bool:
        """One action; False when it did not happen (a start failed, a back-off holds it, ...)."""
        pod, instance = task.pod, action.instance
        if action.step == Step.START:
            return await self._start(task, run, action, sandbox)
        if action.step == Step.BLOCKED:
            reason = "CreateContainerConfigError"
            log.info(
                "ephemeral container not started",
                extra=pod_fields(pod, container=action.name, reason=reason, detail=action.message),
            )
            run.wait(action.name, reason, action.message, jitter(ERROR_RETRY_SECONDS))
            self._recorder.event(
                pod, "Warning", "Failed", f"Error: {action.message}", field_path=action.field_path
            )
            return False
        assert instance is not None, action
        if action.step == Step.RESET:  # the sandbox stays; the pod starts anew at once (kubelet.go)
            run.runtime_changed = True
            await self._lifecycle.reset(pod, instance)
            run.wake_in(0)
            return True
        if action.step == Step.RESTART:
            return await self._restart(task, run, action, sandbox)
        if action.step == Step.REPLACE:
            return await self._replace(task, run, action, sandbox)
        if action.step == Step.RESIZE:
            if await self._resizer.update(task.uid, pod, action.container, instance):
                run.runtime_changed = True
                return True
            run.wake_in(RESIZE_RETRY_SECONDS)
            return False
        log.info(
            "container unhealthy",
            extra=pod_fields(pod, container=action.name, reason="Unhealthy", detail=action.message),
        )
        run.runtime_changed = True
        await self._lifecycle.kill(pod, instance, action.grace, sandbox.ip, action.message)
        return True

    async def _replace(
        self, task: PodTask, run: SyncPass, action: ContainerAction, sandbox: PodSandboxState
    ) -> bool:
        """The container's spec changed (e.g. its image), or a resize needs a restart: stop it
        and start the new definition, one restart more."""
        pod, instance = task.pod, action.instance
        assert instance is not None
        log.info("restarting container", extra=pod_fields(pod, container=action.name, detail=action.message))
        self._recorder.event(pod, "Normal", "Killing", action.message, field_path=action.field_path)
        run.runtime_changed = True
        await self._runtime.stop_container(instance.container_id, effective_grace_period(None, pod))
        return await self._start_again(task, run, action, sandbox)

    async def _restart(
        self, task: PodTask, run: SyncPass, action: ContainerAction, sandbox: PodSandboxState
    ) -> bool:
        pod, name, instance = task.pod, action.name, action.instance
        assert instance is not None
        # The kubelet's key holds the container's hash (GetStableKey with HashContainer): a new
        # image starts a fresh back-off instead of waiting out the old one.
        key = container_key(pod, name, spec_hash(action.container))
        finished = (instance.finished_at or instance.created_at or now()).timestamp()
        left = self._deps.backoff.remaining(key, finished)
        if left > 0:
            message = crash_loop_message(self._deps.backoff.current(key), name, pod)
            run.wait(name, "CrashLoopBackOff", message, left)
            self._recorder.event(
                pod,
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {name} in pod {format_pod(pod)}",
                field_path=action.field_path,
            )
            log.info(
                "container in back-off",
                extra=pod_fields(pod, container=name, reason="CrashLoopBackOff", detail=message),
            )
            return False
        self._deps.backoff.next(key, finished)
        log.info(
            "restarting container",
            extra=pod_fields(pod, container=name, exitCode=instance.exit_code, attempt=action.attempt),
        )
        return await self._start_again(task, run, action, sandbox)

    async def _start_again(
        self, task: PodTask, run: SyncPass, action: ContainerAction, sandbox: PodSandboxState
    ) -> bool:
        """Start the container's next instance; once it started, the pod's older ones are pruned."""
        if not await self._start(task, run, action, sandbox):
            return False
        run.runtime_changed = True
        await self._runtime.prune_pod(task.uid)
        return True

    async def _start(
        self, task: PodTask, run: SyncPass, action: ContainerAction, sandbox: PodSandboxState
    ) -> bool:
        """Pull, resolve, create and start one container; failures become its waiting reason.

        True when the container was started (it may have exited already)."""
        # The pod with its allocated pod-level resources: a container without its own limit
        # starts with the allocated pod level's.
        pod = self._resizer.allocated_pod(task.uid, task.pod)
        container, name, fp = action.container, action.name, action.field_path
        if not await self._images.ensure(run, pod, container, action.role):
            return False
        deps = self._deps
        host_ip = deps.host_ip()
        # A host-network pod's IPs are the node's (generateAPIPodStatus), for status.podIP
        # in the downward API as in the status.
        pod_ip = sandbox.ip or (host_ip if spec(pod).get("hostNetwork") else "")
        try:
            resolved = await resolve_container_env(
                pod,
                container,
                getter=deps.getter,
                addresses=PodAddresses(
                    pod_ips=(pod_ip,) if pod_ip else (), host_ips=(host_ip,) if host_ip else ()
                ),
                node_allocatable=deps.node_allocatable(),
                service_env=pod_service_env(pod, deps.services),
            )
            launch = ContainerLaunch(
                pod=pod,
                container=container,
                role=action.role,
                attempt=action.attempt,
                env=resolved.env,
                command=resolved.command,
                args=resolved.args,
                sandbox=sandbox,
                target_container_id=action.target,
                memory_capacity=node_memory_capacity(deps.node_object()),
            )
            config = await container_config_for(deps.runtime, deps.docker, launch, deps.dns.cluster_domain)
            instance = await self._runtime.start_container(config)
            run.started_ids.add(instance.container_id)
            self._resizer.actuated(task.uid, instance.container_id, container)
        except RuntimeFailure as exc:
            run.runtime_changed = True  # it may have been created, or left a container behind
            log.info(
                "container not started",
                extra=pod_fields(pod, container=name, reason=exc.reason, detail=exc.message),
            )
            run.wait(name, exc.reason, exc.message, jitter(ERROR_RETRY_SECONDS))
            self._recorder.event(pod, "Warning", "Failed", f"Error: {exc.message}", field_path=fp)
            return False
        role = action.role.value
        log.info(
            "started container", extra=pod_fields(pod, container=name, role=role, attempt=action.attempt)
        )
        self._recorder.event(pod, "Normal", "Created", f"Created container: {name}", field_path=fp)
        self._recorder.event(pod, "Normal", "Started", f"Started container {name}", field_path=fp)
        post_start = (container.get("lifecycle") or {}).get("postStart")
        if post_start and instance.state == ContainerRunState.RUNNING:
            run.runtime_changed = True  # the hook takes its time, and a failed one kills it
            return await self._lifecycle.post_start(pod, container, instance, post_start, sandbox.ip)
        run.started.append(instance)
        return True

    # ------------------------------------------------------------------ termination

    async def terminate(self, task: PodTask) -> None:
        """Kill the containers (preStop, grace period) and the sandbox; publish the terminal status."""
        pod, uid = task.pod, task.uid
        run = SyncPass(waiting=self._waiting.get(uid, {}))
        await self._probes.stop_liveness_and_startup(uid)
        grace = effective_grace_period(task.grace, pod)
        state = await self._runtime.pod_state(uid)
        running = [
            c
            for c in (state.containers if state is not None else ())
            if c.state in (ContainerRunState.RUNNING, ContainerRunState.CREATED)
        ]
        if running:
            log.info(
                "stopping containers", extra=pod_fields(pod, count=len(running), gracePeriodSeconds=grace)
            )
        pod_ip = state.sandbox.ip if state is not None and state.sandbox is not None else ""
        await asyncio.gather(*(self._lifecycle.kill(pod, c, grace, pod_ip) for c in running))
        run.runtime_changed = bool(running)
        if state is not None and state.sandbox is not None and state.sandbox.running:
            run.runtime_changed = True
            await self._runtime.stop_container(state.sandbox.container_id, SANDBOX_STOP_SECONDS)
        self._publish(task, run, await self._current(pod, run, state), terminal=True)
        await self._probes.remove_pod(uid)
        self._resizer.release(uid)  # a terminated pod's resources are free
        self._status.terminate_pod(pod)
        log.info("pod terminated", extra=pod_fields(pod))

    async def cleanup(self, task: PodTask) -> None:
        """The pod left its source and is terminated: delete its containers, forget the rest."""
        uid = task.uid
        await self._runtime.remove_pod(uid)
        self._volumes.forget(uid)
        self._status.remove_pod(uid)
        self._deps.backoff.forget_prefix(pod_prefix(task.pod))
        self._images.forget(uid)
        self._resizer.forget(uid)
        for kept in (self._seen, self._admitted, self._volumes_ready):
            kept.discard(uid)
        self._mount_retry.pop(uid, None)
        self._waiting.pop(uid, None)
        log.info("pod removed, containers deleted", extra=pod_fields(task.pod))
