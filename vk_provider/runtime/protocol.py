"""The Runtime protocol: what pod workers, the node agent and the kubelet API need from a container engine.

What lives here: the `Runtime` protocol (pod lifecycle, logs, stats, the spec hash, the
pod's dial address for port-forward, and interactive exec/attach sessions),
`InteractiveSession`, one such open session, and `ContainerLaunch`, the fully resolved
request to start one container. Everything outside `vk_provider/runtime/<engine>/` depends
on this module and `runtime.types` only; the one place that picks an engine is
`runtime/build.py`. Must not: contain an implementation or import a specific engine's SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from vk_provider.kube.keyring import Keyring
from vk_provider.runtime.configs import ResolvConf
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerStats,
    EventsResumed,
    LinuxResources,
    PodRuntimeState,
    PodSandboxState,
    PulledImage,
    RuntimeEvent,
    RuntimeInfo,
    VolumeFile,
)

STDOUT, STDERR = 1, 2  # the stream numbers InteractiveSession.output yields


@dataclass(frozen=True)
class ContainerLaunch:
    """One container to create and start, with everything resolved by the caller.

    `pod` and `container` are the API objects as dicts (JSON shape). `command` and
    `args` are already `$(VAR)`-expanded and `env` already resolved (fieldRefs,
    ConfigMap and Secret keys), so the runtime needs no apiserver.
    """

    pod: Mapping[str, Any]
    container: Mapping[str, Any]
    role: ContainerRole
    attempt: int
    env: tuple[tuple[str, str], ...]
    command: tuple[str, ...] | None  # None: the image's entrypoint
    args: tuple[str, ...] | None  # None: the image's cmd
    sandbox: PodSandboxState
    # An ephemeral container's targetContainerName, running: the runtime id whose PID
    # namespace it joins (empty: the pod's own rules).
    target_container_id: str = ""


class InteractiveSession(Protocol):
    """One open exec or attach: the process's output in, stdin and terminal resizes out."""

    def output(self) -> AsyncIterator[tuple[int, bytes]]:
        """(stream, data) until the process's output ends: STDOUT or STDERR (STDOUT with a TTY)."""
        ...

    async def write_stdin(self, data: bytes) -> None: ...

    def close_stdin(self) -> None:
        """Half-close stdin (the process reads end of file)."""

    async def resize(self, width: int, height: int) -> None:
        """Resize the terminal; failures are ignored."""

    async def exit_code(self) -> int | None:
        """The exec's exit code once it has ended (None for attach); raises StreamError."""
        ...

    async def close(self) -> None: ...


class Runtime(Protocol):
    async def start(self) -> None:
        """Connect, start the event stream thread; raises RuntimeUnavailable."""

    async def close(self) -> None:
        """Stop the event stream and the thread pool. Containers keep running."""

    async def ping(self) -> None:
        """Raise RuntimeUnavailable with the engine's error when it does not answer."""

    async def network_status(self) -> str | None:
        """None when pods can get a network; else why not (the CRI's NetworkReady=false: the
        Node is NotReady, host-network pods still run)."""

    async def info(self) -> RuntimeInfo: ...

    def events(self) -> AsyncIterator[RuntimeEvent | EventsResumed]:
        """Lifecycle events of this node's containers, in order, until close(); `EventsResumed`
        after a gap in which some may have been lost."""
        ...

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        """Every pod UID that has containers of this node, rebuilt from labels."""
        ...

    async def pod_state(self, uid: str) -> PodRuntimeState | None: ...

    async def image_id(self, image: str) -> str | None:
        """The id of the image when the engine has it, else None (the kubelet's GetImageRef).

        Raises ImagePullError: InvalidImageName, or ImageInspectError when the engine fails."""
        ...

    async def pull_image(self, image: str, keyring: Keyring) -> PulledImage:
        """Pull the image, trying each credential the keyring has for its registry in turn
        (anonymously when it has none); one pull at a time per reference and credentials, a
        second caller waits for the first's result. Raises ImagePullError (ErrImagePull)."""
        ...

    async def ensure_sandbox(
        self, pod: Mapping[str, Any], dns: ResolvConf | None = None, pod_cidrs: Sequence[str] = ()
    ) -> PodSandboxState:
        """Create and start (or reuse) the pod's sandbox; raises PodSpecRefused and friends.
        `dns` is its resolver configuration (kuberuntime/dns.py); None: the engine's own.
        `pod_cidrs` are the Node's (runtime/pod_cidrs.py): the pod's address comes from
        them where the runtime's network allows it."""
        ...

    async def setup_host_paths(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """Set up the pod's hostPath volumes as the kubelet's hostPath plugin does (the `type`
        checks, DirectoryOrCreate / FileOrCreate made on the engine's host); the failed ones as
        volume name -> error text. Nothing is checked or made when hostPath is not allowed
        (ensure_sandbox refuses such a pod)."""
        ...

    async def volume_usage(self) -> dict[tuple[str, str], int]:
        """Bytes used by each emptyDir volume of this node's pods, by (pod UID, volume name);
        one engine-wide query, so call it once per period for the whole node."""
        ...

    def volume_dir(self, uid: str, name: str) -> Path | None:
        """The host directory holding the files of the pod's configMap, secret, downwardAPI or
        projected volume `name` (written by the caller, mounted read-only by start_container);
        None when the engine's filesystem is not reachable from here."""
        ...

    async def ship_volume(
        self, pod: Mapping[str, Any], name: str, files: Sequence[VolumeFile], group: int | None
    ) -> bool:
        """Make the engine's copy of the pod's API-backed volume `name` hold exactly `files` (the
        kubelet's `..data` layout, their modes and owners; `group`, an fsGroup, owns the
        directories), for an engine whose filesystem is not reachable (`volume_dir` is None);
        mounted read-only by start_container, removed by remove_pod. False when it already did;
        raises RuntimeFailure."""
        ...

    async def start_container(self, launch: ContainerLaunch) -> ContainerInstance:
        """Create and start one container; raises ContainerConfigError / Create / Start errors."""
        ...

    async def stop_container(
        self, container_id: str, grace_seconds: float, signal: str | None = None
    ) -> None:
        """Send `signal` (the image's stop signal when None), SIGKILL after grace_seconds."""

    async def exec_in_container(
        self, container_id: str, command: list[str], timeout_seconds: float
    ) -> tuple[int, bytes]:
        """Run a command (hooks, exec probes); return (exit code, combined output)."""
        ...

    async def prune_pod(self, uid: str) -> None:
        """Remove exited instances older than the previous one of each container."""

    async def remove_pod(self, uid: str) -> None:
        """Remove every container of the pod, sandbox included (stopped first if running), then
        its volumes and files."""

    async def list_pod_storage(self) -> set[str]:
        """The UIDs of the pods whose volumes or files are on the node, with or without
        containers (the kubelet's listPodsFromDisk): a remove_pod cut short leaves a pod here
        that list_pods no longer shows."""
        ...

    async def remove_node_resources(self) -> list[str]:
        """Remove what the node keeps in the engine besides its pods (on Docker: its pod network
        `vk-pods-<node>`), once no pod uses it; the names of what was removed. For `vk-provider
        clean`, after every pod is gone."""
        ...

    async def container_logs(
        self, container_id: str, *, follow: bool, timestamps: bool, tail: int | None, since: float | None
    ) -> AsyncIterator[bytes]:
        """Log bytes of one container, as `kubectl logs` shows them."""
        ...

    async def container_role(self, container_id: str) -> ContainerRole | None: ...

    async def container_stats(self, container_ids: Sequence[str]) -> list[ContainerStats | None]:
        """One CPU and memory sample of each running container, in order (a stats pass asks
        for all of the node's at once); None for one the engine cannot say."""
        ...

    def spec_hash(self, container: Mapping[str, Any]) -> str:
        """The hash recorded as `ContainerInstance.spec_hash` (a change means recreate); the
        resizable fields (resources, resizePolicy) are not part of it."""
        ...

    def linux_resources(self, container: Mapping[str, Any], field: str) -> LinuxResources:
        """The cgroup limits the container's resources give, as `ContainerInstance.resources`
        reports them; raises ContainerConfigError naming `field` for bad quantities."""
        ...

    async def update_resources(self, container_id: str, container: Mapping[str, Any], field: str) -> None:
        """Apply the container's resources to the running container in place (no restart);
        raises ContainerNotFound, or RuntimeFailure with the engine's message."""

    def pod_address(self, pod: PodRuntimeState) -> str:
        """Where the pod's ports are dialled from here; "" when it shares the node's network."""
        ...

    async def open_exec(
        self, container_id: str, command: list[str], *, stdin: bool, stdout: bool, stderr: bool, tty: bool
    ) -> InteractiveSession:
        """Start `command` in the container, attached; raises StreamError."""
        ...

    async def open_attach(
        self, container_id: str, *, stdin: bool, stdout: bool, stderr: bool
    ) -> InteractiveSession:
        """Attach to the container's main process; raises StreamError."""
        ...
