"""The node's desired pods and their statuses as the kubelet API sees them, and its answers from them.

What lives here: the `DesiredPods` and `PodStatuses` protocols (the pod sources' PodConfig and the
StatusManager satisfy them; app.py wires them into `KnownPods`), `KnownPods.pod`, and the pure
decisions the kubelet takes from a pod's spec and status before it reaches the runtime:
`check_logs` (`pkg/kubelet/server/server.go` getContainerLogs and `pkg/kubelet/kubelet_pods.go`
GetKubeletContainerLogs / validateContainerLogStatus) and `not_running` (kubelet_pods.go GetExec /
GetAttach, when the runtime has no running container of that name). Must not: import pods/ or
status/ (only these protocols), talk HTTP or reach the runtime.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from vk_common.objects import spec, uid
from vk_provider.kubeletapi.lookup import BadRequest, NotFound

Pod = Mapping[str, Any]
Kind = Literal["exec", "attach"]

# pkg/kubelet/images/types.go: the two waiting reasons validateContainerLogStatus spells out.
_PULL_REASONS = {
    "ErrImagePull": "image can't be pulled",
    "ImagePullBackOff": "trying and failing to pull image",
}


class DesiredPods(Protocol):
    """The pods this node should run (the kubelet's pod manager)."""

    def by_name(self, namespace: str, name: str) -> Pod | None: ...


class PodStatuses(Protocol):
    """The last status generated for a pod (the kubelet's status manager cache)."""

    def get_pod_status(self, uid: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class KnownPods:
    desired: DesiredPods
    statuses: PodStatuses

    def pod(self, namespace: str, name: str) -> tuple[Pod, Mapping[str, Any]] | None:
        """The pod and its status; without a cached status the source's (GetKubeletContainerLogs)."""
        pod = self.desired.by_name(namespace, name)
        if pod is None:
            return None
        status = self.statuses.get_pod_status(uid(pod))
        return pod, status if status is not None else (pod.get("status") or {})


def _specs(pod: Pod) -> Iterable[Mapping[str, Any]]:
    pod_spec = spec(pod)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        yield from pod_spec.get(key) or ()


def _status_of(status: Mapping[str, Any], container: str) -> Mapping[str, Any] | None:
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for entry in status.get(key) or ():
            if entry.get("name") == container:
                return entry  # type: ignore[no-any-return]
    return None


def check_logs(
    known: tuple[Pod, Mapping[str, Any]] | None, name: str, container: str, previous: bool
) -> None:
    """Raise what the kubelet answers instead of logs; return when there are logs to read."""
    if known is None:  # server.go: GetPodByName
        raise NotFound(f'pod "{name}" does not exist')
    pod, status = known
    if not any(c.get("name") == container for c in _specs(pod)):  # server.go: GetContainerSpec
        raise NotFound(f'container "{container}" not found in pod "{name}"')
    # kubelet_pods.go validateContainerLogStatus; server.go writes its error as 400.
    entry = _status_of(status, container)
    if entry is None:
        raise BadRequest(f'container "{container}" in pod "{name}" is not available')
    state = entry.get("state") or {}
    last = (entry.get("lastState") or {}).get("terminated")
    last_id = (last or {}).get("containerID") or ""
    terminated = state.get("terminated")
    if previous:
        if not last_id:
            raise BadRequest(f'previous terminated container "{container}" in pod "{name}" not found')
    elif "running" in state:
        return
    elif terminated is not None:
        if not (terminated.get("containerID") or last_id):
            raise BadRequest(f'container "{container}" in pod "{name}" is terminated')
    elif last is not None:
        if not last_id:
            raise BadRequest(f'container "{container}" in pod "{name}" is terminated')
    elif "waiting" in state:
        reason = (state["waiting"] or {}).get("reason") or ""
        why = _PULL_REASONS.get(reason, reason)
        raise BadRequest(f'container "{container}" in pod "{name}" is waiting to start: {why}')
    else:
        raise BadRequest(f'container "{container}" in pod "{name}" is waiting to start - no logs yet')


def not_running(kind: Kind, namespace: str, name: str, container: str) -> str:
    """GetExec / GetAttach with no running container of that name (`findContainer` sees running
    ones only); streaming.WriteError makes it a 500 with this text."""
    if kind == "exec":
        return f'container not found ("{container}")'
    return f"container {container} not found in pod {name}_{namespace}"
