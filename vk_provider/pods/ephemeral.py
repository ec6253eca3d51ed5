"""Ephemeral containers (`kubectl debug`): which to start and the PID namespace they join.

What lives here: the pure rules of `spec.ephemeralContainers` as the kubelet applies them:
`ephemeral_to_start` (each one that has no runtime record yet; an ephemeral container is
started once and never restarted, `computePodActions` in
pkg/kubelet/kuberuntime/kuberuntime_manager.go) and `ephemeral_target` (the running
`targetContainerName` whose PID namespace it joins, or the kubelet's error when that container
is not running: `startSpec.getTargetID` in pkg/kubelet/kuberuntime/kuberuntime_container.go).
The plan (`pods/plan.py`) uses both; the pod sync starts them.
Must not: touch the runtime, the apiserver or the event loop; keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_common.objects import spec
from vk_provider.runtime.types import ContainerRole, ContainerRunState, PodRuntimeState


def ephemeral_to_start(pod: Mapping[str, Any], state: PodRuntimeState | None) -> list[Mapping[str, Any]]:
    """The ephemeral containers of `pod` the runtime never created, in spec order."""
    return [
        container
        for container in spec(pod).get("ephemeralContainers") or []
        if state is None or state.latest(container["name"], ContainerRole.EPHEMERAL) is None
    ]


def ephemeral_target(container: Mapping[str, Any], state: PodRuntimeState | None) -> tuple[str, str]:
    """(runtime id of the running target container, "") or ("", the kubelet's error);
    ("", "") when the container names no target."""
    target = str(container.get("targetContainerName") or "")
    if not target:
        return "", ""
    instance = None
    if state is not None:
        instance = state.latest(target, ContainerRole.APP) or state.latest(target, ContainerRole.INIT)
    if instance is None or instance.state != ContainerRunState.RUNNING:
        return "", f"unable to find target container {target}"
    return instance.container_id, ""
