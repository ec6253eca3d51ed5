"""Plain data the runtime reports and the rest of the provider reads.

What lives here: immutable snapshots of what a container runtime observed about a pod (its
sandbox, every container instance with its attempt number, exit details, container-ID URI and the
cgroup limits it runs with, `LinuxResources`), what a finished image pull reports, the runtime's
host facts, runtime events (and `EventsResumed`, the mark of a gap in them), one stats sample of a
container, one file of an API-backed volume the pods layer hands a runtime (`VolumeFile`), and the
runtime-neutral errors a runtime raises with a kubelet-style reason (`ContainerNotFound`,
`StreamError`, ...): each runtime translates its engine's own errors into these.
Must not: import Docker or talk to anything; these are values (the one import: a pull's
`kube.keyring.RegistryAuth`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from vk_common.sysctls import POD_REJECTED
from vk_provider.kube.keyring import RegistryAuth

# Pod volumes whose files come from the API (written by the pods layer under
# Runtime.volume_dir and bind-mounted read-only, or shipped to the engine by Runtime.ship_volume).
API_VOLUME_TYPES = ("configMap", "secret", "downwardAPI", "projected")


@dataclass(frozen=True)
class VolumeFile:
    """One file of an API-backed volume, as the pods layer computed it (`pods.volumes`)."""

    path: str  # relative to the volume's root
    data: bytes
    mode: int
    uid: int | None = None  # owner to set; None: the writer's own
    gid: int | None = None  # group to set; None: the writer's own


class ContainerRole(StrEnum):
    SANDBOX = "sandbox"
    INIT = "init"
    APP = "app"
    EPHEMERAL = "ephemeral"  # a debug container of spec.ephemeralContainers, started once


def spec_list(role: ContainerRole) -> str:
    """The PodSpec list a container of `role` is declared in."""
    return {ContainerRole.INIT: "initContainers", ContainerRole.EPHEMERAL: "ephemeralContainers"}.get(
        role, "containers"
    )


class ContainerRunState(StrEnum):
    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class LinuxResources:
    """The cgroup limits a container runs with, as CRI's LinuxContainerResources: cpu shares
    (from requests.cpu), the CFS quota and period (limits.cpu; quota 0 is none) and the memory
    limit in bytes (limits.memory; 0 is none). What the in-place resize compares and applies."""

    cpu_shares: int = 0
    cpu_quota: int = 0
    cpu_period: int = 0
    memory_limit: int = 0


@dataclass(frozen=True)
class ContainerInstance:
    """One runtime container: one attempt of one pod container."""

    name: str  # the pod spec's container name
    role: ContainerRole
    attempt: int  # 0 for the first run, +1 for every restart
    container_id: str  # the runtime's id, without the scheme prefix
    image: str  # the image as the spec named it
    image_id: str  # docker-pullable://... or sha256:...
    state: ContainerRunState
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    oom_killed: bool = False
    error: str = ""  # the runtime's own error, e.g. an exec format error at start
    termination_message: str = ""
    spec_hash: str = ""  # hash of the container spec it was created from
    container_uri: str = ""  # the status's containerID: <runtime>://<container_id>
    resources: LinuxResources | None = None  # the limits applied now (None: the engine did not say)


@dataclass(frozen=True)
class PodSandboxState:
    container_id: str
    running: bool
    ip: str = ""
    created_at: datetime | None = None
    ips: tuple[str, ...] = ()  # every address (both families in CNI mode); () means (ip,)
    runtime_handler: str = ""  # the RuntimeClass handler it runs under; its containers too
    cgroup_parent: str = ""  # the pod cgroup it runs in ("": none); its containers too


@dataclass(frozen=True)
class PodRuntimeState:
    """Everything the runtime has for one pod UID, rebuilt from labels."""

    uid: str
    namespace: str
    name: str
    sandbox: PodSandboxState | None = None
    containers: tuple[ContainerInstance, ...] = ()

    def latest(self, name: str, role: ContainerRole | None = None) -> ContainerInstance | None:
        """The instance of container `name` with the highest attempt."""
        found = [c for c in self.containers if c.name == name and (role is None or c.role == role)]
        return max(found, key=lambda c: c.attempt) if found else None

    def previous(self, name: str, role: ContainerRole | None = None) -> ContainerInstance | None:
        """The instance before the latest one, for lastState and `logs --previous`."""
        found = sorted(
            (c for c in self.containers if c.name == name and (role is None or c.role == role)),
            key=lambda c: c.attempt,
        )
        return found[-2] if len(found) >= 2 else None


@dataclass(frozen=True)
class RuntimeInfo:
    """Host facts for the Node object."""

    cpus: int
    memory_bytes: int
    storage_bytes: int
    os_type: str  # linux
    architecture: str  # amd64 | arm64 (GOARCH spelling)
    kernel_version: str
    os_image: str
    runtime_version: str  # docker://<engine version>
    hostname: str = ""
    # The RuntimeClass handlers the engine can run ("" first: its default runtime), for the
    # Node's status.runtimeHandlers.
    runtime_handlers: tuple[str, ...] = ("",)


@dataclass(frozen=True)
class RuntimeEvent:
    """A lifecycle event of a container the provider owns (start, die, oom, destroy)."""

    pod_uid: str
    container_name: str
    role: ContainerRole
    action: str
    container_id: str
    exit_code: int | None = None
    time: datetime | None = None


@dataclass(frozen=True)
class EventsResumed:
    """The event stream broke and is back: what happened in between may never be reported (an
    engine that restarted keeps no events), so every pod's state must be read again, as the
    kubelet's PLEG relist would notice it (pkg/kubelet/pleg/generic.go)."""


@dataclass(frozen=True)
class PulledImage:
    """What one finished pull reports: the image's id, its size, how long the engine took, and
    the credential that worked (None: an anonymous pull)."""

    image_id: str
    size_bytes: int
    pull_seconds: float
    auth: RegistryAuth | None = None


@dataclass(frozen=True)
class ContainerStats:
    """One sample of a running container's CPU and memory (the kubelet derives rates)."""

    cpu_usage_core_nanoseconds: int
    memory_usage_bytes: int
    memory_working_set_bytes: int
    memory_rss_bytes: int | None = None  # None when the engine does not report it


class RuntimeFailure(Exception):
    """Base of runtime failures that become a container's waiting reason."""

    reason = "RuntimeError"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason


class ContainerNotFound(RuntimeFailure):
    """The container does not exist on this node (any more): the kubelet API answers 404."""

    reason = "NotFound"


class StreamError(Exception):
    """The runtime refused or failed an interactive stream (exec, attach); the message is the engine's."""


class RuntimeUnavailable(RuntimeFailure):
    """The engine does not answer (ping failed); the node goes NotReady."""

    reason = "RuntimeUnavailable"


class ImagePullError(RuntimeFailure):
    """Reason is ErrImagePull, InvalidImageName, ImageInspectError or ErrImageNeverPull."""

    reason = "ErrImagePull"


class ContainerConfigError(RuntimeFailure):
    """The spec cannot be turned into a container: CreateContainerConfigError."""

    reason = "CreateContainerConfigError"


class ContainerCreateError(RuntimeFailure):
    """The engine refused to create the container: CreateContainerError."""

    reason = "CreateContainerError"


class ContainerStartError(RuntimeFailure):
    """The engine created but could not start it: RunContainerError."""

    reason = "RunContainerError"


class PodSpecRefused(RuntimeFailure):
    """A security allowance forbids the spec (privileged, hostPath, host namespaces...)."""

    reason = "Forbidden"


class PodRejected(PodSpecRefused):
    """The kubelet's own admission rejects the pod (a sysctl, SupplementalGroupsPolicy,
    AppArmor): kubelet.go rejectPod. `event_message` is its Event's message; the status message
    (`message`) is `POD_REJECTED` before it."""

    def __init__(self, reason: str, event_message: str) -> None:
        super().__init__(POD_REJECTED + event_message, reason)
        self.event_message = event_message


def running_counts(pods: Iterable[PodRuntimeState]) -> tuple[int, dict[str, int]]:
    """(pods with a running sandbox, containers by state with every state present) of the
    runtime's pods: the kubelet's running_pods and running_containers gauges."""
    running = 0
    states = dict.fromkeys((state.value for state in ContainerRunState), 0)
    for pod in pods:
        running += pod.sandbox is not None and pod.sandbox.running
        for container in pod.containers:
            states[container.state.value] += 1
    return running, states
