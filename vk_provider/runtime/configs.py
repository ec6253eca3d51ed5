"""What a runtime is asked to make: fully resolved, engine-neutral sandbox and container configurations.

What lives here: the values the kuberuntime layer (`vk_provider.kuberuntime`) compiles a pod
into and a `Runtime` applies, as the CRI's PodSandboxConfig and ContainerConfig are between the
kubelet and a container runtime: `SandboxConfig` (the pod's identity, hostname, host
namespaces, `ResolvConf` (the CRI's DNSConfig), host aliases, `PortMapping`s, sysctls, the
emptyDir volumes (`EmptyDirVolume`) and the Node's pod CIDRs) and `ContainerConfig` (image,
command, environment, terminal, the PID namespace (`PidNamespace`), `LinuxResources`,
`ContainerSecurity` with its `SecurityProfile`s, `Mount`s as volume plus checked sub-path, the
termination message file, the content of the managed /etc/hosts, and the spec hash), plus the
host's security facts a runtime reports (`HostSecurity`) and `PodMetadata`.
Every Kubernetes rule has been applied when one of these exists: a runtime translates them into
its engine's options and decides nothing about the pod.
Must not: hold a Kubernetes rule or import an engine: these are values, decided above and
translated below.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from vk_provider.runtime.types import ContainerRole, LinuxResources, PodSandboxState

# Where a container gets the pod's managed files (ContainerConfig.hosts_file, mount_resolv_conf).
ETC_HOSTS = "/etc/hosts"
ETC_RESOLV_CONF = "/etc/resolv.conf"
# The types of a SecurityProfile.
RUNTIME_DEFAULT, UNCONFINED, LOCALHOST = "RuntimeDefault", "Unconfined", "Localhost"


@dataclass(frozen=True)
class PodMetadata:
    """The pod a sandbox or container belongs to (the CRI's PodSandboxMetadata)."""

    name: str
    namespace: str
    uid: str

    @staticmethod
    def of(pod: Mapping[str, Any]) -> PodMetadata:
        meta = pod.get("metadata") or {}
        return PodMetadata(
            str(meta.get("name", "")), str(meta.get("namespace", "default")), str(meta.get("uid", ""))
        )

    def as_object(self) -> dict[str, Any]:
        """The pod as far as this says, in the API's shape (for log lines)."""
        return {"metadata": {"name": self.name, "namespace": self.namespace, "uid": self.uid}}


@dataclass(frozen=True)
class ResolvConf:
    """A resolver configuration: a parsed resolv.conf, or what a pod's sandbox gets (the CRI's
    DNSConfig). Options are `name` or `name:value`."""

    servers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostSecurity:
    """What the engine's host enforces: AppArmor, SELinux, user namespaces (userns-remap), pod
    cgroups."""

    apparmor: bool = False
    selinux: bool = False
    userns: bool = False
    pod_cgroups: bool = False  # the runtime keeps a cgroup per pod (pod-level limits are enforced)


@dataclass(frozen=True)
class PodCgroup:
    """The pod's cgroup: its QoS class (where it lives) and its limits (0: not set)."""

    qos: str  # Guaranteed | Burstable | BestEffort
    resources: LinuxResources


@dataclass(frozen=True)
class PortMapping:
    """A hostPort of one of the pod's containers (the CRI's PortMapping)."""

    container_port: int
    protocol: str  # TCP | UDP | SCTP
    host_port: int
    host_ip: str = ""  # "": every address


@dataclass(frozen=True)
class EmptyDirVolume:
    """One emptyDir of the pod, with the mode and group its root gets (the kubelet's setupDir)."""

    name: str
    memory: bool  # medium Memory: a tmpfs
    size_limit: int | None  # bytes, for a Memory one
    mode: int
    gid: int


@dataclass(frozen=True)
class SandboxConfig:
    """One pod's sandbox: what owns its namespaces (the CRI's PodSandboxConfig)."""

    metadata: PodMetadata
    hostname: str  # the kernel hostname ("" with the host's network)
    host_network: bool = False
    host_pid: bool = False
    host_ipc: bool = False
    dns: ResolvConf | None = None  # None: the engine's own copy of its host's resolv.conf
    host_aliases: tuple[tuple[str, str], ...] = ()  # (hostname, ip), for an engine-kept /etc/hosts
    port_mappings: tuple[PortMapping, ...] = ()
    sysctls: tuple[tuple[str, str], ...] = ()
    empty_dirs: tuple[EmptyDirVolume, ...] = ()
    pod_cidrs: tuple[str, ...] = ()  # the Node's, for a network the runtime makes
    runtime_handler: str = ""  # the pod's RuntimeClass handler ("": the engine's default runtime)
    cgroup: PodCgroup | None = None  # the pod cgroup's class and limits (the CRI's cgroup_parent)


class PidNamespace(StrEnum):
    """Whose PID namespace a container joins (the CRI's NamespaceMode)."""

    CONTAINER = "container"  # its own
    POD = "pod"  # the sandbox's (shareProcessNamespace)
    NODE = "node"  # the host's (hostPID)
    TARGET = "target"  # another container's (an ephemeral container's targetContainerName)


class MountKind(StrEnum):
    HOST_PATH = "hostPath"  # a path of the node
    EMPTY_DIR = "emptyDir"  # the pod's EmptyDirVolume of that name
    API = "api"  # configMap, secret, downwardAPI or projected: files the pods layer writes


class Propagation(StrEnum):
    """A mount's propagation (the CRI's MountPropagation)."""

    PRIVATE = "private"
    HOST_TO_CONTAINER = "host-to-container"
    BIDIRECTIONAL = "bidirectional"


@dataclass(frozen=True)
class Mount:
    """One volumeMount, resolved: the volume, where it goes, and a checked sub-path (relative,
    no `..`) whose bind source the runtime makes safely on the engine's host when it starts
    the container."""

    kind: MountKind
    volume: str
    container_path: str
    read_only: bool
    index: int  # of the mount in the container's volumeMounts
    field: str  # its field path, for messages
    host_path: str = ""  # HOST_PATH: the node's path
    sub_path: str = ""  # "": the whole volume
    propagation: Propagation = Propagation.PRIVATE
    memory: bool = False  # EMPTY_DIR: a Memory (tmpfs) one
    api_type: str = ""  # API: configMap | secret | downwardAPI | projected


@dataclass(frozen=True)
class SecurityProfile:
    """A seccomp or AppArmor profile (the CRI's SecurityProfile): RuntimeDefault, Unconfined or
    Localhost, with the field it came from for messages."""

    type: str
    localhost: str = ""  # Localhost: seccomp, the profile file's host path; AppArmor, its name
    field: str = ""


@dataclass(frozen=True)
class ContainerSecurity:
    """The effective securityContext of a container, resolved (the CRI's
    LinuxContainerSecurityContext)."""

    user: str = ""  # "uid", "uid:gid" or "name:gid"; "": the image's
    groups: tuple[str, ...] = ()  # supplementary groups, fsGroup first
    cap_add: tuple[str, ...] = ()  # NET_ADMIN spelling, or ALL
    cap_drop: tuple[str, ...] = ()
    privileged: bool = False
    read_only_rootfs: bool = False
    no_new_privileges: bool = False
    seccomp: SecurityProfile | None = None  # None: the engine's default
    apparmor: SecurityProfile | None = None  # None: the engine's default
    selinux: tuple[tuple[str, str], ...] = ()  # (user | role | type | level, value)
    unmasked_proc: bool = False  # procMount Unmasked: no masked nor read-only /proc paths


@dataclass(frozen=True)
class ContainerConfig:
    """One container instance to create and start in its pod's sandbox (the CRI's ContainerConfig)."""

    metadata: PodMetadata
    name: str
    role: ContainerRole
    attempt: int
    field: str  # the container's field path: spec.containers[0]
    image: str
    spec_hash: str
    sandbox: PodSandboxState
    env: tuple[tuple[str, str], ...] = ()
    command: tuple[str, ...] | None = None  # None: the image's entrypoint
    args: tuple[str, ...] | None = None  # None: the image's cmd
    working_dir: str = ""
    tty: bool = False
    stdin: bool = False
    stdin_once: bool = False
    pid_namespace: PidNamespace = PidNamespace.CONTAINER
    target_container_id: str = ""  # PidNamespace.TARGET: the container whose namespace it joins
    resources: LinuxResources = dataclasses.field(default_factory=LinuxResources)
    oom_score_adj: int | None = None  # the process's oom_score_adj; None: the engine's default
    security: ContainerSecurity = dataclasses.field(default_factory=ContainerSecurity)
    mounts: tuple[Mount, ...] = ()
    termination_message_path: str = "/dev/termination-log"
    termination_message_policy: str = ""  # "": File, the default
    hosts_file: str | None = None  # the managed /etc/hosts; None: the engine's own
    mount_resolv_conf: bool = False  # the pod's resolv.conf over /etc/resolv.conf
