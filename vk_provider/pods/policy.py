"""Pure rules of the pod workers (kubelet rules, no I/O).

What lives here: when a pod's containers are `finished`, an Event's container fieldPath,
whether a container ran in the current sandbox, the activeDeadlineSeconds rule
(`active_deadline_left`, `past_active_deadline`, `DEADLINE_EXCEEDED`), the clock and jitter
helpers, and the retry constants shared by the pod workers and the container pipeline. The
rules every part shares (restart policy, sidecars, pull policy, times) are `vk_common/objects.py`.
Must not: touch the runtime, the apiserver or the event loop; keep state.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from vk_common.objects import container_should_restart, parse_time, restart_policy, spec
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
    spec_list,
)

ERROR_RETRY_SECONDS = 10.0  # the kubelet requeues a failed sync after 10 s (0.5 jitter)
SANDBOX_STOP_SECONDS = 2.0
# The reason and message of a pod past spec.activeDeadlineSeconds (pkg/kubelet/active_deadline.go).
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")


def now() -> datetime:
    return datetime.now(UTC)


def jitter(seconds: float) -> float:
    return seconds * (1.0 + 0.5 * random.random())


def field_path(role: ContainerRole, name: str) -> str:
    """The Event's involvedObject.fieldPath of one container, as the kubelet sets it."""
    return f"spec.{spec_list(role)}{{{name}}}"


def in_sandbox(instance: ContainerInstance, sandbox: PodSandboxState) -> bool:
    """Whether `instance` ran in `sandbox` (it was created after it), not in an earlier one."""
    if instance.created_at is None or sandbox.created_at is None:
        return True
    return instance.created_at >= sandbox.created_at


def finished(pod: Mapping[str, Any], state: PodRuntimeState) -> bool:
    """Every app container ran and none is to run again, or an init container failed for good."""
    if restart_policy(pod) == "Never":
        for container in spec(pod).get("initContainers") or []:
            init = state.latest(container["name"], ContainerRole.INIT)
            if init is not None and init.state == ContainerRunState.EXITED and init.exit_code != 0:
                return True
    for container in spec(pod).get("containers") or []:
        latest = state.latest(container["name"], ContainerRole.APP)
        if latest is None or latest.state != ContainerRunState.EXITED:
            return False
        if container_should_restart(pod, container, latest.exit_code or 0):
            return False
    return True


def active_deadline_left(
    pod: Mapping[str, Any], cached_status: Mapping[str, Any] | None, now: float
) -> float | None:
    """Seconds until `pod` passes spec.activeDeadlineSeconds (<= 0: it has), at epoch `now`.

    The kubelet's activeDeadlineHandler.pastActiveDeadline: the deadline is the pod's current
    spec (the apiserver lets it be lowered on a running pod); the start is `startTime` of the
    status manager's status (`cached_status`), else of the API's copy. None when no deadline
    is set or the pod has no startTime yet (it was never synced): nothing to enforce.
    """
    deadline = spec(pod).get("activeDeadlineSeconds")
    if deadline is None or isinstance(deadline, bool):
        return None
    try:
        allowed = float(deadline)
    except (TypeError, ValueError):
        return None
    status = cached_status if cached_status is not None else pod.get("status") or {}
    start = parse_time(status.get("startTime"))
    if start is None:
        return None
    return start.timestamp() + allowed - now


def past_active_deadline(pod: Mapping[str, Any], cached_status: Mapping[str, Any] | None, now: float) -> bool:
    """Whether `pod` has been active for at least its activeDeadlineSeconds (`now - start >= deadline`)."""
    left = active_deadline_left(pod, cached_status, now)
    return left is not None and left <= 0
