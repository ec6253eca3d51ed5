"""Docker labels and names of the provider's containers, and reading them back (pure).

What lives here: the label keys (docs/architecture.md, Docker objects), the labels of a pod's sandbox
and of one
container instance, the kubelet-style container and volume names, the label filter of one node, and
the parse of a Docker container (its `docker inspect` dict) back into a `ContainerInstance`
or a `PodSandboxState` (with its `docker://<id>` container URI and the HostConfig cgroup
limits it runs with now). Must not: call Docker;
everything here is a function of dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from vk_common.objects import parse_time
from vk_provider.runtime.configs import PodMetadata
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    LinuxResources,
    PodSandboxState,
)

PREFIX = "io.vk-provider."
NODE = PREFIX + "node"
POD_UID = PREFIX + "pod.uid"
POD_NAME = PREFIX + "pod.name"
POD_NAMESPACE = PREFIX + "pod.namespace"
CONTAINER_NAME = PREFIX + "container.name"
CONTAINER_ATTEMPT = PREFIX + "container.attempt"
CONTAINER_IMAGE = PREFIX + "container.image"
ROLE = PREFIX + "role"
SPEC_HASH = PREFIX + "spec-hash"
CONTAINER_URI_SCHEME = "docker://"  # a ContainerInstance's container_uri: the status's containerID
TERMINATION_MESSAGE_FILE = PREFIX + "termination-message-file"
TERMINATION_MESSAGE_POLICY = PREFIX + "termination-message-policy"
RUNTIME_HANDLER = PREFIX + "runtime-handler"  # a sandbox's RuntimeClass handler, when not the default

SANDBOX_CONTAINER_NAME = "POD"


def node_filter(node_name: str) -> dict[str, str]:
    """The `filters` argument selecting this node's objects only."""
    return {"label": f"{NODE}={node_name}"}


def pod_filter(node_name: str, uid: str) -> dict[str, list[str]]:
    return {"label": [f"{NODE}={node_name}", f"{POD_UID}={uid}"]}


def pod_labels(node_name: str, pod: PodMetadata) -> dict[str, str]:
    return {NODE: node_name, POD_UID: pod.uid, POD_NAME: pod.name, POD_NAMESPACE: pod.namespace}


def container_labels(
    node_name: str,
    pod: PodMetadata,
    name: str,
    role: ContainerRole,
    attempt: int,
    image: str,
    spec_hash: str,
) -> dict[str, str]:
    return {
        **pod_labels(node_name, pod),
        CONTAINER_NAME: name,
        CONTAINER_ATTEMPT: str(attempt),
        CONTAINER_IMAGE: image,
        ROLE: role.value,
        SPEC_HASH: spec_hash,
    }


def sandbox_labels(
    node_name: str, pod: PodMetadata, attempt: int, image: str, runtime_handler: str = ""
) -> dict[str, str]:
    labels = container_labels(
        node_name, pod, SANDBOX_CONTAINER_NAME, ContainerRole.SANDBOX, attempt, image, ""
    )
    if runtime_handler:
        labels[RUNTIME_HANDLER] = runtime_handler
    return labels


def container_name(pod: PodMetadata, name: str, attempt: int) -> str:
    """`k8s_<container>_<pod>_<namespace>_<uid>_<attempt>`, as the kubelet's dockershim named them."""
    return f"k8s_{name}_{pod.name}_{pod.namespace}_{pod.uid}_{attempt}"


def sandbox_name(pod: PodMetadata, attempt: int) -> str:
    return container_name(pod, SANDBOX_CONTAINER_NAME, attempt)


def volume_name(pod: PodMetadata, volume: str) -> str:
    """`k8s_<uid>_<volume>`, as emptyDirs are named: the Docker volume of a shipped API-backed volume."""
    return f"k8s_{pod.uid}_{volume}"


def docker_time(value: str | None) -> datetime | None:
    """Docker's RFC 3339 nanosecond timestamps; its zero time (`0001-01-01T00:00:00Z`) means never."""
    if not value or value.startswith("0001-01-01"):
        return None
    return parse_time(value)


def run_state(state: Mapping[str, Any]) -> ContainerRunState:
    """Docker's states, and Podman's besides: "stopping" (still running), "configured" (created),
    "stopped" (exited, before its clean-up ran) and "removing"."""
    status = str(state.get("Status", ""))
    if status in ("running", "paused", "restarting", "stopping"):
        return ContainerRunState.RUNNING
    if status in ("created", "configured"):
        return ContainerRunState.CREATED
    if status in ("exited", "dead", "stopped", "removing"):
        return ContainerRunState.EXITED
    return ContainerRunState.UNKNOWN


def is_owned(labels: Mapping[str, str], node_name: str) -> bool:
    return labels.get(NODE) == node_name and bool(labels.get(POD_UID))


def role_of(labels: Mapping[str, str]) -> ContainerRole | None:
    try:
        return ContainerRole(labels.get(ROLE, ""))
    except ValueError:
        return None


def attempt_of(labels: Mapping[str, str]) -> int:
    try:
        return int(labels.get(CONTAINER_ATTEMPT, "0"))
    except ValueError:
        return 0


def instance_from_inspect(inspect: Mapping[str, Any], termination_message: str = "") -> ContainerInstance:
    """A container instance from `docker inspect`; the labels say which pod container it is.

    A container the engine created but could not start is reported EXITED with the engine's
    exit code (127, 126...) and its `error`, as the kubelet's ContainerCannotRun.
    """
    config = inspect.get("Config") or {}
    labels: Mapping[str, str] = config.get("Labels") or {}
    state = inspect.get("State") or {}
    current = run_state(state)
    exit_code = int(state.get("ExitCode") or 0)
    if current == ContainerRunState.CREATED and state.get("Error"):
        # It could not start (exec format, missing binary...) and never will: a failed run.
        current = ContainerRunState.EXITED
        exit_code = exit_code or 128
    exited = current == ContainerRunState.EXITED
    return ContainerInstance(
        name=labels.get(CONTAINER_NAME, ""),
        role=role_of(labels) or ContainerRole.APP,
        attempt=attempt_of(labels),
        container_id=str(inspect.get("Id", "")),
        image=labels.get(CONTAINER_IMAGE) or str(config.get("Image", "")),
        image_id=str(inspect.get("Image", "")),
        state=current,
        created_at=docker_time(inspect.get("Created")),
        started_at=docker_time(state.get("StartedAt")),
        finished_at=docker_time(state.get("FinishedAt")) if exited else None,
        exit_code=exit_code if exited else None,
        oom_killed=bool(state.get("OOMKilled", False)),
        error=str(state.get("Error", "")),
        termination_message=termination_message,
        spec_hash=labels.get(SPEC_HASH, ""),
        container_uri=f"{CONTAINER_URI_SCHEME}{inspect.get('Id', '')}",
        resources=_linux_resources(inspect.get("HostConfig")),
    )


def _linux_resources(host_config: Mapping[str, Any] | None) -> LinuxResources | None:
    """The cgroup limits Docker applies now (HostConfig changes with `docker update`)."""
    if not host_config:
        return None
    return LinuxResources(
        cpu_shares=int(host_config.get("CpuShares") or 0),
        cpu_quota=int(host_config.get("CpuQuota") or 0),
        cpu_period=int(host_config.get("CpuPeriod") or 0),
        memory_limit=int(host_config.get("Memory") or 0),
    )


def sandbox_from_inspect(inspect: Mapping[str, Any]) -> PodSandboxState:
    """The sandbox's address is on the network it was created on (`HostConfig.NetworkMode`:
    the node's pod network or `docker.network`, whichever was in force then); where that name
    is not among its networks but it has one only (Podman calls its default bridge "podman"),
    on that one."""
    state = inspect.get("State") or {}
    networks = (inspect.get("NetworkSettings") or {}).get("Networks") or {}
    mode = str((inspect.get("HostConfig") or {}).get("NetworkMode") or "")
    network = "bridge" if mode in ("", "default") else mode
    attached = networks.get(network) or (next(iter(networks.values())) if len(networks) == 1 else {})
    ip = str((attached or {}).get("IPAddress", ""))
    running = run_state(state) == ContainerRunState.RUNNING
    labels = (inspect.get("Config") or {}).get("Labels") or {}
    host_config = inspect.get("HostConfig") or {}
    return PodSandboxState(
        container_id=str(inspect.get("Id", "")),
        running=running,
        ip=ip if running else "",
        created_at=docker_time(inspect.get("Created")),
        runtime_handler=str(labels.get(RUNTIME_HANDLER) or ""),
        cgroup_parent=str(host_config.get("CgroupParent") or ""),
    )
