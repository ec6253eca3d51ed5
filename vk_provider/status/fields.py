"""The pod status vocabulary: the names and small lookups every status module shares.

What lives here: the condition types and their ownership (`pkg/kubelet/types/pod_status.go`),
the condition reasons (`pkg/kubelet/status/generate.go`), the default waiting reasons
(`pkg/kubelet/kubelet_pods.go`), the phases, `ContainerWaiting` (why the pod worker says a
container waits), and the lookups of a container status and a condition by name.
Must not: compute a status (`status/generate.py` and its parts do), do I/O or keep state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vk_provider.kuberuntime.restart_all import ALL_CONTAINERS_RESTARTING

# Condition types (k8s.io/api/core/v1) and ownership (pkg/kubelet/types/pod_status.go).
POD_SCHEDULED = "PodScheduled"
READY = "Ready"
INITIALIZED = "Initialized"
CONTAINERS_READY = "ContainersReady"
READY_TO_START = "PodReadyToStartContainers"
DISRUPTION_TARGET = "DisruptionTarget"
POD_RESIZE_PENDING = "PodResizePending"
POD_RESIZE_IN_PROGRESS = "PodResizeInProgress"
KUBELET_OWNED_CONDITIONS = frozenset(
    {
        POD_SCHEDULED,
        READY,
        INITIALIZED,
        CONTAINERS_READY,
        READY_TO_START,
        POD_RESIZE_PENDING,
        POD_RESIZE_IN_PROGRESS,
        ALL_CONTAINERS_RESTARTING,
    }
)
KUBELET_SHARED_CONDITIONS = frozenset({DISRUPTION_TARGET})

# Condition reasons (pkg/kubelet/status/generate.go).
UNKNOWN_CONTAINER_STATUSES = "UnknownContainerStatuses"
POD_COMPLETED = "PodCompleted"
POD_FAILED = "PodFailed"
CONTAINERS_NOT_READY = "ContainersNotReady"
CONTAINERS_NOT_INITIALIZED = "ContainersNotInitialized"
READINESS_GATES_NOT_READY = "ReadinessGatesNotReady"

# Default waiting reasons (pkg/kubelet/kubelet_pods.go).
CONTAINER_CREATING = "ContainerCreating"
POD_INITIALIZING = "PodInitializing"
STATUS_UNKNOWN = "ContainerStatusUnknown"
UNKNOWN_TERMINATED_MESSAGE = "The container could not be located when the pod was terminated"
UNKNOWN_DELETED_MESSAGE = (
    "The container could not be located when the pod was deleted.  The container used to be Running"
)

SUCCEEDED = "Succeeded"
FAILED = "Failed"
RUNNING = "Running"
PENDING = "Pending"
TERMINAL_PHASES = frozenset({SUCCEEDED, FAILED})


@dataclass(frozen=True)
class ContainerWaiting:
    """Why a container that is not running waits, as decided by the pod worker."""

    reason: str
    message: str = ""


def is_terminal_phase(phase: str | None) -> bool:
    return phase in TERMINAL_PHASES


def find_status(statuses: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    """The container status named `name`."""
    for status in statuses:
        if status.get("name") == name:
            return status
    return None


def find_condition(conditions: Iterable[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    """The condition of type `type_`."""
    for cond in conditions:
        if cond.get("type") == type_:
            return cond
    return None


def go_list(names: Sequence[str]) -> str:
    """Go's %s of a []string: `[a b]`."""
    return "[" + " ".join(names) + "]"
