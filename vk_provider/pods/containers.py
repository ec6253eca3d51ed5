"""The container pipeline of the pod workers: what to do with each container of one pod.

What lives here: `ContainerPipeline`, which runs a pod's init containers one at a time, its
app containers and its new ephemeral containers (once each), and for one container: has its
image made present (`pods/images.py`), resolves its environment and starts it (Created /
Started Events), runs postStart, restarts it per restartPolicy with the crash-loop backoff,
replaces it when its spec changed, resizes it in place or restarts it when its allocated
resources changed (`pods/resize.PodResizer`), kills it with preStop and the grace period, and
kills it when its liveness or startup probe failed.
Failures become the container's waiting reason in the pod's `PodWork` and arm its timer;
every start or stop marks `PodWork.runtime_changed`, so the sync reads the pod's state again.
Its log lines keep the pod workers' component (`pods.workers`).
Must not: decide the pod's lifecycle (sandbox, volumes, termination, status: `pods/sync.py` does),
write to the apiserver, or know about Docker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import format_pod, is_sidecar, restart_policy, should_restart, spec
from vk_provider.kuberuntime.container_config import ContainerLaunch, spec_hash
from vk_provider.pods.backoff import container_key, crash_loop_message
from vk_provider.pods.deps import SyncDeps
from vk_provider.pods.env import PodAddresses, resolve_container_env
from vk_provider.pods.ephemeral import ephemeral_target, ephemeral_to_start
from vk_provider.pods.grace import effective_grace_period, stop_timeout_after_prestop
from vk_provider.pods.hooks import HookError, run_hook
from vk_provider.pods.images import ImageManager
from vk_provider.pods.policy import (
    ERROR_RETRY_SECONDS,
    SANDBOX_STOP_SECONDS,
    field_path,
    in_sandbox,
    jitter,
    now,
)
from vk_provider.pods.resize import RESIZE_RETRY_SECONDS, PodResizer, ResizeAction
from vk_provider.pods.runtime_configs import container_config_for
from vk_provider.pods.service_env import pod_service_env
from vk_provider.pods.work import PodWork, wake_in
from vk_provider.probes import messages as probe_messages
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
    RuntimeFailure,
    spec_list,
)
from vk_provider.status.fields import ContainerWaiting

log = get_logger("pods.workers")


def _exit_code(instance: ContainerInstance) -> int | None:
    """The exit code of an instance that ran and exited; None for one that did not finish."""
    return (instance.exit_code or 0) if instance.state == ContainerRunState.EXITED else None


class ContainerPipeline:
    def __init__(self, deps: SyncDeps) -> None:
        self._deps = deps
        self._images = ImageManager(deps)
        self.resizer = PodResizer(deps)

    async def sync_pod_containers(
        self, work: PodWork, state: PodRuntimeState | None, sandbox: PodSandboxState
    ) -> None:
        """The pod's resources allocated (`PodResizer.allocate`), its init containers run one at a
        time, then its app containers; a resize completes once every running container, init or
        app, runs with its allocation."""
        retry = self.resizer.allocate(work)
        if retry is not None:
            wake_in(work, retry)
        resized: list[bool] = []  # per running container: it runs with its allocated resources
        if await self._sync_init_containers(work, state, sandbox, resized):
            await self._sync_app_containers(work, state, sandbox, resized)
        self.resizer.finish(work, all(resized))

    async def _sync_init_containers(
        self, work: PodWork, state: PodRuntimeState | None, sandbox: PodSandboxState, resized: list[bool]
    ) -> bool:
        """Run init containers one at a time; True once every one has succeeded (sidecars: started).
        A running one, sidecar or not, is resized in place like an app container
        (kuberuntime_container.go computeInitContainerActions)."""
        for desired in spec(work.pod).get("initContainers") or []:
            container = self.resizer.allocated_container(work, desired)
            name = container["name"]
            instance = state.latest(name, ContainerRole.INIT) if state is not None else None
            sidecar = is_sidecar(container)
            if instance is None:
                started = await self._start(work, container, ContainerRole.INIT, 0, sandbox)
                if not (sidecar and started) or container.get("startupProbe"):
                    return False  # a sidecar with a startup probe is waited for until it passes
                continue
            if instance.state == ContainerRunState.RUNNING:
                resized.append(await self._resize(work, container, instance, sandbox))
                if not sidecar:
                    return False
                await self._kill_if_unhealthy(work, instance, sandbox.ip)
                initialized = state is not None and any(c.role == ContainerRole.APP for c in state.containers)
                if not initialized and not self._deps.probes.started(work.uid, name, instance.container_id):
                    return False  # the next init / app containers wait for the sidecar to start
                continue
            if instance.state == ContainerRunState.EXITED and instance.exit_code == 0 and not sidecar:
                if in_sandbox(instance, sandbox):
                    continue
                # A new sandbox runs the init containers again, as the kubelet does.
                await self._start(work, container, ContainerRole.INIT, instance.attempt + 1, sandbox)
                return False
            if not sidecar and restart_policy(work.pod) == "Never":
                return False  # the init container failed for good: the pod is Failed
            await self._restart(work, container, ContainerRole.INIT, instance, sandbox)
            if not sidecar:
                return False
        return True

    async def _sync_app_containers(
        self, work: PodWork, state: PodRuntimeState | None, sandbox: PodSandboxState, resized: list[bool]
    ) -> None:
        for desired in spec(work.pod).get("containers") or []:
            container = self.resizer.allocated_container(work, desired)
            instance = state.latest(container["name"], ContainerRole.APP) if state is not None else None
            if instance is None:
                await self._start(work, container, ContainerRole.APP, 0, sandbox)
            elif instance.state != ContainerRunState.RUNNING and should_restart(
                work.pod, container, _exit_code(instance)
            ):
                await self._restart(work, container, ContainerRole.APP, instance, sandbox)
            elif instance.state == ContainerRunState.RUNNING and self._changed(container, instance):
                await self._replace(work, container, instance, sandbox)
            elif instance.state == ContainerRunState.RUNNING:
                resized.append(await self._resize(work, container, instance, sandbox))
                await self._kill_if_unhealthy(work, instance, sandbox.ip)

    async def _resize(
        self,
        work: PodWork,
        container: Mapping[str, Any],
        instance: ContainerInstance,
        sandbox: PodSandboxState,
    ) -> bool:
        """A running container whose limits differ from its allocation: `docker update` in
        place, or a restart when its resizePolicy says RestartContainer (pods/resize.py).
        False while it does not run with its allocated resources."""
        fp = field_path(instance.role, container["name"])
        action = self.resizer.needed(container, instance, fp)
        if action == ResizeAction.UPDATE:
            if await self.resizer.update(work, container, instance, fp):
                return True
            wake_in(work, RESIZE_RETRY_SECONDS)
            return False
        if action == ResizeAction.RESTART:
            message = f"Container {container['name']} resize requires restart"
            await self._replace(work, container, instance, sandbox, message)
        return True

    async def sync_ephemeral_containers(
        self, work: PodWork, state: PodRuntimeState | None, sandbox: PodSandboxState
    ) -> None:
        """Start each new ephemeral container once, whatever the init containers' progress; it
        is never restarted (`pods/ephemeral.py`). A target that is not running is its
        CreateContainerConfigError, retried, as the kubelet's startContainer reports it."""
        for container in ephemeral_to_start(work.pod, state):
            target, error = ephemeral_target(container, state)
            if not error:
                await self._start(work, container, ContainerRole.EPHEMERAL, 0, sandbox, target)
                continue
            name = container["name"]
            log.info(
                "ephemeral container not started",
                extra=pod_fields(work.pod, container=name, reason="CreateContainerConfigError", detail=error),
            )
            work.waiting[name] = ContainerWaiting("CreateContainerConfigError", error)
            fp = field_path(ContainerRole.EPHEMERAL, name)
            self._deps.recorder.event(work.pod, "Warning", "Failed", f"Error: {error}", field_path=fp)
            wake_in(work, jitter(ERROR_RETRY_SECONDS))

    async def _kill_if_unhealthy(self, work: PodWork, instance: ContainerInstance, pod_ip: str) -> None:
        """Kill a running container whose liveness or startup probe failed; it restarts per policy.

        Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go (computePodActions), which
        also uses the probe's terminationGracePeriodSeconds when it has one.
        """
        failure = self._deps.probes.failed_probe(work.uid, instance.name, instance.container_id)
        if failure is None:
            return
        pod = work.pod
        restart = restart_policy(pod) != "Never" or instance.role == ContainerRole.INIT
        message = probe_messages.kill(instance.name, failure.probe_type, restart)
        log.info(
            "container unhealthy",
            extra=pod_fields(pod, container=instance.name, reason="Unhealthy", detail=message),
        )
        grace = failure.termination_grace
        await self.kill(
            work, instance, effective_grace_period(None, pod) if grace is None else grace, pod_ip, message
        )

    def _changed(self, container: Mapping[str, Any], instance: ContainerInstance) -> bool:
        """Whether a running container's spec changed since it was created (`spec_hash`); an
        instance without a recorded hash never counts as changed."""
        return bool(instance.spec_hash) and instance.spec_hash != spec_hash(container)

    async def _replace(
        self,
        work: PodWork,
        container: Mapping[str, Any],
        instance: ContainerInstance,
        sandbox: PodSandboxState,
        message: str = "",
    ) -> None:
        """The container's spec changed (e.g. its image), or a resize needs a restart: stop it
        and start the new definition, one restart more."""
        pod, name = work.pod, container["name"]
        message = message or f"Container {name} definition changed, will be restarted"
        log.info("restarting container", extra=pod_fields(pod, container=name, detail=message))
        self._deps.recorder.event(
            pod, "Normal", "Killing", message, field_path=field_path(instance.role, name)
        )
        work.runtime_changed = True
        await self._deps.runtime.stop_container(instance.container_id, effective_grace_period(None, pod))
        if await self._start(work, container, instance.role, instance.attempt + 1, sandbox):
            await self._deps.runtime.prune_pod(work.uid)

    async def _restart(
        self,
        work: PodWork,
        container: Mapping[str, Any],
        role: ContainerRole,
        instance: ContainerInstance,
        sandbox: PodSandboxState,
    ) -> None:
        pod, name = work.pod, container["name"]
        fp = field_path(role, name)
        # The kubelet's key holds the container's hash (GetStableKey with HashContainer): a new
        # image starts a fresh back-off instead of waiting out the old one.
        key = container_key(pod, name, spec_hash(container))
        finished = (instance.finished_at or instance.created_at or now()).timestamp()
        left = self._deps.backoff.remaining(key, finished)
        if left > 0:
            message = crash_loop_message(self._deps.backoff.current(key), name, pod)
            work.waiting[name] = ContainerWaiting("CrashLoopBackOff", message)
            self._deps.recorder.event(
                pod,
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {name} in pod {format_pod(pod)}",
                field_path=fp,
            )
            log.info(
                "container in back-off",
                extra=pod_fields(pod, container=name, reason="CrashLoopBackOff", detail=message),
            )
            wake_in(work, left)
            return
        self._deps.backoff.next(key, finished)
        log.info(
            "restarting container",
            extra=pod_fields(pod, container=name, exitCode=instance.exit_code, attempt=instance.attempt + 1),
        )
        if await self._start(work, container, role, instance.attempt + 1, sandbox):
            await self._deps.runtime.prune_pod(work.uid)

    async def _start(
        self,
        work: PodWork,
        container: Mapping[str, Any],
        role: ContainerRole,
        attempt: int,
        sandbox: PodSandboxState,
        target: str = "",
    ) -> bool:
        """Pull, resolve, create and start one container; failures become its waiting reason.

        `target`: an ephemeral container's target (`ContainerLaunch.target_container_id`).
        True when the container was started (it may have exited already).
        """
        pod, name = work.pod, container["name"]
        fp = field_path(role, name)
        if not await self._images.ensure(work, container, role):
            return False
        host_ip = self._deps.host_ip()
        # A host-network pod's IPs are the node's (generateAPIPodStatus), for status.podIP
        # in the downward API as in the status.
        pod_ip = sandbox.ip or (host_ip if (pod.get("spec") or {}).get("hostNetwork") else "")
        try:
            resolved = await resolve_container_env(
                pod,
                container,
                getter=self._deps.getter,
                addresses=PodAddresses(
                    pod_ips=(pod_ip,) if pod_ip else (), host_ips=(host_ip,) if host_ip else ()
                ),
                node_allocatable=self._deps.node_allocatable(),
                service_env=pod_service_env(pod, self._deps.services),
            )
            launch = ContainerLaunch(
                pod=pod,
                container=container,
                role=role,
                attempt=attempt,
                env=resolved.env,
                command=resolved.command,
                args=resolved.args,
                sandbox=sandbox,
                target_container_id=target,
            )
            work.runtime_changed = True
            deps = self._deps
            config = await container_config_for(deps.runtime, deps.docker, launch, deps.dns.cluster_domain)
            instance = await self._deps.runtime.start_container(config)
        except RuntimeFailure as exc:
            log.info(
                "container not started",
                extra=pod_fields(pod, container=name, reason=exc.reason, detail=exc.message),
            )
            work.waiting[name] = ContainerWaiting(exc.reason, exc.message)
            self._deps.recorder.event(pod, "Warning", "Failed", f"Error: {exc.message}", field_path=fp)
            wake_in(work, jitter(ERROR_RETRY_SECONDS))
            return False
        log.info("started container", extra=pod_fields(pod, container=name, role=role.value, attempt=attempt))
        self._deps.recorder.event(pod, "Normal", "Created", f"Created container: {name}", field_path=fp)
        self._deps.recorder.event(pod, "Normal", "Started", f"Started container {name}", field_path=fp)
        post_start = (container.get("lifecycle") or {}).get("postStart")
        if post_start and instance.state == ContainerRunState.RUNNING:
            return await self._post_start(work, container, instance, post_start, sandbox.ip)
        return True

    async def _post_start(
        self,
        work: PodWork,
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
                run_hook(self._deps.runtime, container, instance.container_id, hook, grace, pod_ip), grace
            )
            return True
        except (HookError, RuntimeFailure, TimeoutError) as exc:
            log.info(
                "postStart hook failed",
                extra=pod_fields(pod, container=name, reason="FailedPostStartHook", err=str(exc)),
            )
        fp = field_path(instance.role, name)
        # The message stays generic so that secrets in the hook's output never reach an Event.
        self._deps.recorder.event(
            pod, "Warning", "FailedPostStartHook", "PostStartHook failed", field_path=fp
        )
        # kuberuntime_container.go startContainer: killContainer(..., "FailedPostStartHook", ...),
        # the Killing Event's message, preStop included.
        await self.kill(work, instance, grace, pod_ip, message="FailedPostStartHook")
        return False

    def _container_spec(self, pod: Mapping[str, Any], instance: ContainerInstance) -> Mapping[str, Any]:
        for container in spec(pod).get(spec_list(instance.role)) or []:
            if container.get("name") == instance.name:
                return dict(container)
        return {"name": instance.name}

    async def kill(
        self, work: PodWork, instance: ContainerInstance, grace: int, pod_ip: str, message: str = ""
    ) -> None:
        """Run the preStop hook, then stop the container; `message` is the Killing Event's."""
        pod = work.pod
        container = self._container_spec(pod, instance)
        fp = field_path(instance.role, instance.name)
        message = message or f"Stopping container {instance.name}"
        self._deps.recorder.event(pod, "Normal", probe_messages.KILLING, message, field_path=fp)
        began = time.monotonic()
        pre_stop = (container.get("lifecycle") or {}).get("preStop")
        if pre_stop and instance.state == ContainerRunState.RUNNING:
            try:
                await asyncio.wait_for(
                    run_hook(self._deps.runtime, container, instance.container_id, pre_stop, grace, pod_ip),
                    grace,
                )
            except (HookError, RuntimeFailure, TimeoutError) as exc:
                log.info(
                    "preStop hook failed",
                    extra=pod_fields(pod, container=instance.name, reason="FailedPreStopHook", err=str(exc)),
                )
                self._deps.recorder.event(
                    pod, "Warning", "FailedPreStopHook", "PreStopHook failed", field_path=fp
                )
        timeout = stop_timeout_after_prestop(grace, time.monotonic() - began) if pre_stop else float(grace)
        work.runtime_changed = True
        await self._deps.runtime.stop_container(instance.container_id, timeout)
        if time.monotonic() - began > grace + SANDBOX_STOP_SECONDS:
            self._deps.recorder.event(
                pod,
                "Warning",
                "ExceededGracePeriod",
                "Container runtime did not kill the pod within specified grace period.",
                field_path=fp,
            )
