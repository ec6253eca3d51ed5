"""A container's lifecycle around its start and stop: postStart, and the kill with preStop.

What lives here: `ContainerLifecycle`, which the pod sync calls once a container started
(`post_start`: run its postStart hook; when the hook fails, the FailedPostStartHook Event and
the container is killed, to restart per policy: kuberuntime_container.go startContainer) and to
stop one (`kill`: the Killing Event, the preStop hook within the grace period, then the stop
with what is left of it; ExceededGracePeriod when the runtime took longer: killContainer), and
to reset one when its pod restarts all its containers (`reset`: killed without grace, removed).
The hook handlers themselves are `pods/hooks.py`'.
Must not: decide which container starts or stops, or when (the plan and the pod sync do).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import RESTART_ALL_CONTAINERS, spec
from vk_provider.pods.grace import effective_grace_period, stop_timeout_after_prestop
from vk_provider.pods.hooks import HookError, run_hook
from vk_provider.pods.policy import SANDBOX_STOP_SECONDS, field_path
from vk_provider.pods.work import EventSink
from vk_provider.probes import messages as probe_messages
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerInstance, ContainerRunState, RuntimeFailure, spec_list

log = get_logger("pods.workers")


@dataclass(frozen=True)
class ContainerLifecycle:
    runtime: Runtime
    recorder: EventSink

    async def post_start(
        self,
        pod: Mapping[str, Any],
        container: Mapping[str, Any],
        instance: ContainerInstance,
        hook: Mapping[str, Any],
        pod_ip: str,
    ) -> bool:
        """Run the postStart hook; False when it failed and the container was killed."""
        name = container["name"]
        grace = effective_grace_period(None, pod)
        try:
            await asyncio.wait_for(
                run_hook(self.runtime, container, instance.container_id, hook, grace, pod_ip), grace
            )
            return True
        except (HookError, RuntimeFailure, TimeoutError) as exc:
            log.info(
                "postStart hook failed",
                extra=pod_fields(pod, container=name, reason="FailedPostStartHook", err=str(exc)),
            )
        fp = field_path(instance.role, name)
        # The message stays generic so that secrets in the hook's output never reach an Event.
        self.recorder.event(pod, "Warning", "FailedPostStartHook", "PostStartHook failed", field_path=fp)
        # kuberuntime_container.go startContainer: killContainer(..., "FailedPostStartHook", ...),
        # the Killing Event's message, preStop included.
        await self.kill(pod, instance, grace, pod_ip, message="FailedPostStartHook")
        return False

    async def reset(self, pod: Mapping[str, Any], instance: ContainerInstance) -> None:
        """RestartAllContainers: kill the instance with no grace period, so no preStop, and remove
        it (kuberuntime_manager.go SyncPod's ContainersToReset)."""
        if instance.state in (ContainerRunState.RUNNING, ContainerRunState.CREATED):
            fp = field_path(instance.role, instance.name)
            self.recorder.event(pod, "Normal", probe_messages.KILLING, "killing", field_path=fp)
            await self.runtime.stop_container(instance.container_id, 0)
        await self.runtime.remove_container(instance.container_id)
        log.info(
            "container reset", extra=pod_fields(pod, container=instance.name, reason=RESTART_ALL_CONTAINERS)
        )

    async def kill(
        self, pod: Mapping[str, Any], instance: ContainerInstance, grace: int, pod_ip: str, message: str = ""
    ) -> None:
        """Run the preStop hook, then stop the container; `message` is the Killing Event's."""
        container: Mapping[str, Any] = next(
            (c for c in spec(pod).get(spec_list(instance.role)) or [] if c.get("name") == instance.name),
            {"name": instance.name},
        )
        fp = field_path(instance.role, instance.name)
        message = message or f"Stopping container {instance.name}"
        self.recorder.event(pod, "Normal", probe_messages.KILLING, message, field_path=fp)
        began = time.monotonic()
        pre_stop = (container.get("lifecycle") or {}).get("preStop")
        if pre_stop and instance.state == ContainerRunState.RUNNING:
            try:
                await asyncio.wait_for(
                    run_hook(self.runtime, container, instance.container_id, pre_stop, grace, pod_ip), grace
                )
            except (HookError, RuntimeFailure, TimeoutError) as exc:
                log.info(
                    "preStop hook failed",
                    extra=pod_fields(pod, container=instance.name, reason="FailedPreStopHook", err=str(exc)),
                )
                self.recorder.event(pod, "Warning", "FailedPreStopHook", "PreStopHook failed", field_path=fp)
        timeout = stop_timeout_after_prestop(grace, time.monotonic() - began) if pre_stop else float(grace)
        await self.runtime.stop_container(instance.container_id, timeout)
        if time.monotonic() - began > grace + SANDBOX_STOP_SECONDS:
            self.recorder.event(
                pod,
                "Warning",
                "ExceededGracePeriod",
                "Container runtime did not kill the pod within specified grace period.",
                field_path=fp,
            )
