"""The Runtime protocol: what pod workers, the node agent and the kubelet API need from a container engine.

What lives here: the `Runtime` protocol, engine verbs over the configurations the kuberuntime
layer compiled (`runtime/configs.py`: make a sandbox, start a container, update its resources),
images, the pod lifecycle the engine holds (list, inspect, stop, remove), logs, stats, the pod's
dial address for port-forward and interactive exec/attach sessions, and `InteractiveSession`, one
such open session. Everything outside `vk_provider/runtime/<engine>/` depends on this module,
`runtime.configs` and `runtime.types` only; the one place that picks an engine is
`runtime/build.py`. Must not: contain an implementation, a Kubernetes rule, or import a specific
engine's SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from vk_provider.kube.keyring import Keyring
from vk_provider.runtime.configs import ContainerConfig, HostSecurity, PodCgroup, SandboxConfig
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

    def host_security(self) -> HostSecurity:
        """What the engine's host enforces (AppArmor, SELinux, user namespaces, pod cgroups), known
        once started: the pod's admission reads it (kuberuntime/admission.py, security.py)."""
        ...

    async def ensure_sandbox(self, config: SandboxConfig) -> PodSandboxState:
        """Create and start (or reuse) the pod's sandbox as `config` says (its DNS, host
        namespaces, ports, emptyDir volumes; the pod's address from `config.pod_cidrs` where the
        runtime's network allows it); raises RuntimeFailure (ContainerCreateError, ImagePullError)."""
        ...

    async def setup_host_paths(self, volumes: Sequence[tuple[str, str, str]]) -> dict[str, str]:
        """Set up hostPath volumes, (name, path, type), as the kubelet's hostPath plugin does (the
        `type` checks, DirectoryOrCreate / FileOrCreate made on the engine's host); the failed
        ones as volume name -> error text."""
        ...

    async def image_user(self, image: str) -> str:
        """The image's own user (its `Config.User`, "" when unset), against which runAsNonRoot is
        verified; raises ContainerConfigError when the image cannot be inspected."""
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

    async def start_container(self, config: ContainerConfig) -> ContainerInstance:
        """Create and start one container as `config` says, its sub-paths bound safely on the
        engine's host first; raises ContainerConfigError / Create / Start errors."""
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

    async def remove_container(self, container_id: str) -> None:
        """Remove one stopped container of this node (a pod restarting all its containers in
        place); one that is gone already is no error."""

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

    async def update_resources(self, container_id: str, resources: LinuxResources) -> None:
        """Apply `resources` to the running container in place (no restart); raises
        ContainerNotFound, or RuntimeFailure with the engine's message."""

    async def update_pod_resources(self, pod_uid: str, cgroup: PodCgroup) -> None:
        """Set the pod cgroup's limits (an in-place resize); nothing where the runtime keeps no
        pod cgroups (`host_security().pod_cgroups`); raises RuntimeFailure."""

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
