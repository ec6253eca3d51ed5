"""`DockerRuntime`: the Runtime protocol on one Docker engine.

What lives here: the I/O shell that turns the pure mappings (labels, spec, images) into
Docker calls, each through the engine's bounded pool (streams get their own threads),
reads this node's containers back from their labels (`pod_states`: the event pump, the caches
and the reads), and serves the kubelet API's needs
(logs, stats, exec/attach sessions through `interactive.DockerStreams`), and ships the files of
API-backed volumes to an engine that is not local (`shipped_volumes`). docker-py's
errors are translated here into the runtime-neutral ones of `runtime.types`. Its files live under
`docker.stateDir/<node>` (0700, `pod_dirs`): only UIDs and names that are one plain path component
become directories there, a subPath is opened without following a swapped symlink and
bind-mounted under the pod's directory before the engine binds it (`subpath_mounts`: the
kubelet's way; refused on a volume pods can write when this process may not mount), those
mounts are detached before a pod's files go, and everything is removed through
`paths.remove_under`. A
container's Localhost seccomp profile is read here from `docker.seccompProfileRoot` and sent
to the engine as text; the host's AppArmor / SELinux / userns facts come from `info`. A sandbox
joins the node's pod network (`pod_network`, the Node's podCIDR) or `docker.network`, with the
pod's own resolv.conf where Docker would answer (`pod_resolv`); in CNI mode it has no network
and `cni_sandbox` runs the plugins on it (ADD after start, DEL before stop and removal).
Must not: touch containers without this node's label, remove anything outside the node's
state directory, or block the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from docker.errors import APIError, ImageNotFound, NotFound
from vk_common import guarded_paths as paths
from vk_common.hostpath_types import HostPathTypeError, check_host_path
from vk_common.logging import get_logger, pod_fields
from vk_provider.config import DockerConfig
from vk_provider.kube.keyring import Keyring
from vk_provider.metrics import ProviderMetrics
from vk_provider.runtime import subpath_mounts, subpaths
from vk_provider.runtime.configs import ContainerConfig, HostSecurity, MountKind, SandboxConfig
from vk_provider.runtime.docker import images, pod_resolv
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker import spec as sp
from vk_provider.runtime.docker.cgroup_stats import CgroupStats
from vk_provider.runtime.docker.cni_sandbox import CNISandboxes
from vk_provider.runtime.docker.create import create_container
from vk_provider.runtime.docker.engine import Engine, EngineErrors, engine_is_local
from vk_provider.runtime.docker.hostinfo import runtime_info
from vk_provider.runtime.docker.interactive import DockerSession, DockerStreams
from vk_provider.runtime.docker.pod_dirs import PodDirs
from vk_provider.runtime.docker.pod_network import PodNetwork
from vk_provider.runtime.docker.pod_states import PodStates
from vk_provider.runtime.docker.pull import ImagePuller
from vk_provider.runtime.docker.pull import engine_message as _engine_message
from vk_provider.runtime.docker.security_options import host_security
from vk_provider.runtime.docker.shipped_volumes import ShippedVolumes
from vk_provider.runtime.docker.stats import container_stats
from vk_provider.runtime.docker.streams import thread_stream
from vk_provider.runtime.docker.volume_usage import volume_usage
from vk_provider.runtime.types import (
    ContainerConfigError,
    ContainerCreateError,
    ContainerInstance,
    ContainerNotFound,
    ContainerRole,
    ContainerStartError,
    ContainerStats,
    EventsResumed,
    ImagePullError,
    LinuxResources,
    PodRuntimeState,
    PodSandboxState,
    PulledImage,
    RuntimeEvent,
    RuntimeFailure,
    RuntimeInfo,
    RuntimeUnavailable,
    VolumeFile,
)

log = get_logger("runtime.docker")

KILL_WAIT_SECONDS = 30.0
EXIT_POLL_SECONDS = 2.0
REMOVAL_POLL_SECONDS = 0.2  # waiting out a removal the engine already has under way
SECCOMP_PROFILE_MAX_BYTES = 1 << 20  # a Localhost seccomp profile read for a container
SANDBOX_IMAGE_RECHECK_SECONDS = 60.0  # the sandbox image, once seen, is not looked up again for a while


def _storage_bytes(root_dir: str) -> int:
    """Size of the filesystem holding Docker's root dir, when it is visible from here (local engine)."""
    try:
        st = os.statvfs(root_dir)
    except OSError:
        return 0
    return st.f_blocks * st.f_frsize


def _signal_of(inspect: Mapping[str, Any]) -> str:
    """The container's stop signal (Docker copies the image's STOPSIGNAL into its config)."""
    return str((inspect.get("Config") or {}).get("StopSignal") or "SIGTERM")


class DockerRuntime:
    def __init__(
        self,
        config: DockerConfig,
        node_name: str,
        metrics: ProviderMetrics | None = None,
        *,
        cni: CNISandboxes | None = None,
    ) -> None:
        """`cni`: CNI mode (`network.plugin: cni`), the sandboxes' networks set up by its plugins."""
        self.config = config
        self.node_name = node_name
        self._engine = Engine(config, metrics)
        self._streams = DockerStreams(self._engine)
        self._shipped = ShippedVolumes(  # API-backed volumes when the engine is not local
            self._engine,
            node_name,
            config.sandbox_image,
            lambda pod: self._ensure_sandbox_image(),
        )
        self._puller = ImagePuller(self._engine)
        self._pod_network = PodNetwork(self._engine, node_name, config.network)
        self._cni = cni
        # When the sandbox image was last seen in the engine: a burst of pods checks it once,
        # not once per pod; a create that fails checks it again.
        self._sandbox_image_seen: float | None = None
        local = engine_is_local(config.engine_location, self._engine.url)  # docker.engineLocation
        # The pods' files on this host (termination logs, /etc/hosts, API volumes, sub-paths).
        self._dirs = PodDirs(Path(config.state_dir) / node_name) if local else None
        self._cgroups = CgroupStats() if local else None  # stats without the engine, when visible
        # What the engine holds of this node's pods: the event pump, the caches, the reads.
        self._states = PodStates(self._engine, node_name, cni, self._cgroups)
        # Why a subPath cannot be bind-mounted here (None: it can), found at start.
        self._subpath_refusal: str | None = "the state directory is not prepared yet"
        self._host_security = HostSecurity()  # from `info`, at start

    # --- connection ---

    async def start(self) -> None:
        await self._engine.connect()
        await self.ping()
        await self.info()
        if self._dirs is not None:
            self._subpath_refusal = await self._engine.call(self._dirs.prepare)
        self._states.start()

    async def close(self) -> None:
        self._states.close()
        await self._engine.close()

    async def ping(self) -> None:
        await self._engine.connect()  # an engine that was down at start may be back
        try:
            await self._engine.call(self._engine.client.api.ping)
        except EngineErrors as exc:
            raise RuntimeUnavailable(f"Docker engine at {self._engine.url} does not answer: {exc}") from exc

    async def network_status(self) -> str | None:
        """Docker mode: always ready; CNI mode: whether the conf dir has a usable list."""
        return await self._cni.not_ready() if self._cni is not None else None

    async def info(self) -> RuntimeInfo:
        await self._engine.connect()
        try:
            info = await self._engine.call(self._engine.client.info)
        except EngineErrors as exc:
            raise RuntimeUnavailable(f"Docker engine at {self._engine.url} does not answer: {exc}") from exc
        self._host_security = host_security(info)
        storage = await self._engine.call(_storage_bytes, str(info.get("DockerRootDir") or "/var/lib/docker"))
        return runtime_info(info, storage)

    def events(self) -> AsyncIterator[RuntimeEvent | EventsResumed]:
        return self._states.events()

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        return await self._states.list_pods()

    async def pod_state(self, uid: str) -> PodRuntimeState | None:
        return await self._states.pod_state(uid)

    async def container_role(self, container_id: str) -> ContainerRole | None:
        return await self._states.container_role(container_id)

    async def image_id(self, image: str) -> str | None:
        ref = images.parse_image(image)
        try:
            inspect: dict[str, Any] = await self._engine.call(
                self._engine.client.api.inspect_image, ref.normalized()
            )
        except ImageNotFound:
            return None
        except EngineErrors as exc:
            raise images.inspect_error(image, _engine_message(exc)) from exc
        return str(inspect["Id"])

    async def pull_image(self, image: str, keyring: Keyring) -> PulledImage:
        log.info("pulling image", extra={"image": image})
        return await self._puller.pull(image, keyring)

    # --- sandbox ---

    async def _ensure_volumes(self, config: SandboxConfig) -> None:
        """Create the pod's missing emptyDir volumes; a new disk one gets its root's mode and
        group once (`_set_volume_root`), as the kubelet's setupDir does once per pod: a
        container restart finds the volume as the pod left it."""
        api = self._engine.client.api
        for vol in sp.emptydir_volumes(config, self.node_name):
            try:
                await self._engine.call(api.inspect_volume, vol.docker_name)
                continue
            except NotFound:
                pass
            await self._engine.call(
                api.create_volume,
                vol.docker_name,
                driver="local",
                driver_opts=vol.driver_opts or None,
                labels=vol.labels,
            )
            if vol.memory:
                continue  # the tmpfs mount options carry the mode and group
            try:
                await self._engine.call(self._set_volume_root, vol)
            except EngineErrors:
                # Not left half made: the next attempt creates it again.
                with contextlib.suppress(*EngineErrors):
                    await self._engine.call(api.remove_volume, vol.docker_name, force=True)
                raise

    def _set_volume_root(self, vol: sp.VolumeSpec) -> None:
        """Give a new disk volume's root the kubelet's mode and group through the Docker API
        (so also for an engine whose filesystem this process does not see): extract the root's
        tar entry into a never-started container that mounts the volume, then remove it."""
        kwargs = sp.volume_root_kwargs(vol, self.config.sandbox_image)
        container = create_container(self._engine.client, **kwargs)
        try:
            if not container.put_archive("/", sp.root_entry_tar(vol)):
                raise APIError(f"cannot set the mode of volume {vol.docker_name}")
        finally:
            with contextlib.suppress(NotFound):
                container.remove(force=True, v=True)

    async def _ensure_sandbox_image(self) -> None:
        """The sandbox (pause) image, pulled anonymously when missing: sandboxes and the helper
        containers of shipped volumes are made from it. A failure names the image, as the
        kubelet's `failed to get sandbox image "<image>": ...`."""
        image = self.config.sandbox_image
        seen = self._sandbox_image_seen
        if seen is not None and time.monotonic() - seen < SANDBOX_IMAGE_RECHECK_SECONDS:
            return
        try:
            if await self.image_id(image) is None:
                await self.pull_image(image, Keyring())
        except ImagePullError as exc:
            raise ImagePullError(f'failed to get sandbox image "{image}": {exc.message}', exc.reason) from exc
        self._sandbox_image_seen = time.monotonic()

    def host_security(self) -> HostSecurity:
        return self._host_security

    async def ensure_sandbox(self, config: SandboxConfig) -> PodSandboxState:
        try:
            return await self._ensure_sandbox(config)
        finally:
            self._states.listing.changed(
                config.metadata.uid
            )  # whatever it made, the latest list does not show

    async def _ensure_sandbox(self, config: SandboxConfig) -> PodSandboxState:
        uid = config.metadata.uid
        rows = await self._states.pod_rows(uid)  # the pod's state was just read: no second list for it
        sandboxes = [r for r in rows if lb.role_of(r.get("Labels") or {}) == ContainerRole.SANDBOX]
        attempt = 0
        if sandboxes:
            latest = max(sandboxes, key=lambda r: lb.attempt_of(r.get("Labels") or {}))
            state = await self._states.sandbox_state(str(latest["Id"]))
            if state is not None and state.running:
                return state
            attempt = lb.attempt_of(latest.get("Labels") or {}) + 1
        try:
            await self._ensure_sandbox_image()
            await self._ensure_volumes(config)
            if config.host_network:
                network = "host"
            elif self._cni is not None:
                network = "none"  # the plugins set it up once the sandbox runs
            else:
                network = await self._pod_network.ensure(config.pod_cidrs)
            try:
                await self._engine.call(pod_resolv.write_resolv_file, self._pod_dir(uid), config.dns, network)
            except (OSError, paths.UnsafePathError) as exc:
                raise ContainerCreateError(
                    f"Failed to create pod sandbox: cannot write resolv.conf: {exc}"
                ) from exc
            kwargs = sp.sandbox_create_kwargs(
                config, node_name=self.node_name, docker=self.config, attempt=attempt, network=network
            )
            container = await self._engine.call(create_container, self._engine.client, **kwargs)
        except (ImagePullError, *EngineErrors) as exc:
            self._sandbox_image_seen = None  # gone, perhaps: the next sandbox checks again
            message = exc.message if isinstance(exc, ImagePullError) else _engine_message(exc)
            raise ContainerCreateError(f"Failed to create pod sandbox: {message}") from exc
        try:
            await self._engine.call(container.start)
        except EngineErrors as exc:
            with contextlib.suppress(*EngineErrors):
                await self._engine.call(container.remove, force=True)
            raise ContainerCreateError(f"Failed to create pod sandbox: {_engine_message(exc)}") from exc
        if network == "none" and self._cni is not None:
            await self._cni_setup(config, str(container.id))
        state = await self._states.sandbox_state(str(container.id))
        if state is None:
            raise ContainerCreateError("Failed to create pod sandbox: it vanished after starting")
        # The pod keeps its latest sandbox alone, as the kubelet's container GC (evictSandboxes):
        # the dead one it replaces, or one a provider killed before its start left created.
        await asyncio.gather(
            *(self._remove_sandbox(str(r["Id"])) for r in sandboxes if r.get("State") != "running")
        )
        log.info(
            "started sandbox",
            extra=pod_fields(config.metadata.as_object(), sandboxID=container.id[:12], ip=state.ip),
        )
        return state

    async def _cni_setup(self, config: SandboxConfig, container_id: str) -> None:
        """ADD on the started sandbox; when it fails the sandbox goes (the plugins undid theirs)."""
        assert self._cni is not None
        try:
            inspect = await self._states.inspect(container_id)
            await self._cni.setup(config, inspect or {"Id": container_id})
        except (RuntimeFailure, *EngineErrors) as exc:
            with contextlib.suppress(*EngineErrors):
                await self._remove(container_id)
            message = exc.message if isinstance(exc, RuntimeFailure) else _engine_message(exc)
            raise ContainerCreateError(f"Failed to create pod sandbox: {message}") from exc

    async def setup_host_paths(self, volumes: Sequence[tuple[str, str, str]]) -> dict[str, str]:
        """The `type` checks run on this host for a local engine (in the pool: they stat and may
        create); a remote engine's paths cannot be checked from here, so a typed one fails."""
        failed: dict[str, str] = {}
        for name, path, path_type in volumes:
            if self._dirs is None:
                if path_type:
                    failed[name] = (
                        f"hostPath type check failed: {path} is on the engine's host, which is not "
                        f"this one ({self._engine.url}): type {path_type} cannot be checked"
                    )
                continue
            try:
                await self._engine.call(check_host_path, path, path_type)
            except HostPathTypeError as exc:
                failed[name] = str(exc)
        return failed

    async def volume_usage(self) -> dict[tuple[str, str], int]:
        """From the engine's `system df` (it sizes every volume of the engine: one call per period)."""
        try:
            df: dict[str, Any] = await self._engine.call(self._engine.client.api.df)
        except EngineErrors as exc:
            raise RuntimeUnavailable(f"Docker engine at {self._engine.url} does not answer: {exc}") from exc
        return volume_usage(df, self.node_name)

    # --- containers ---

    def volume_dir(self, uid: str, name: str) -> Path | None:
        """Raises paths.UnsafePathError for a UID or volume name that is not one plain name."""
        root = self._volumes_root(uid)
        if root is not None and not paths.is_safe_name(name):
            raise paths.UnsafePathError(f"volume name {name!r} cannot be a directory name")
        return None if root is None else root / name

    async def ship_volume(
        self, pod: Mapping[str, Any], name: str, files: Sequence[VolumeFile], group: int | None
    ) -> bool:
        try:
            return await self._shipped.ship(pod, name, files, group)
        except (ImagePullError, *EngineErrors) as exc:
            message = exc.message if isinstance(exc, ImagePullError) else _engine_message(exc)
            raise RuntimeFailure(f"cannot ship the volume's files to the engine: {message}") from exc

    def _pod_dir(self, uid: str) -> Path | None:
        """`<state>/<node>/<uid>` on a local engine; raises paths.UnsafePathError unless the UID
        is one plain name."""
        return None if self._dirs is None else self._dirs.pod_dir(uid)

    def _volumes_root(self, uid: str) -> Path | None:
        return None if self._dirs is None else self._dirs.volumes_root(uid)

    async def image_user(self, image: str) -> str:
        """The image's `Config.User`, as the kubelet reads it from the CRI's image status."""
        try:
            ref = images.parse_image(image).normalized()
            inspect: dict[str, Any] = await self._engine.call(self._engine.client.api.inspect_image, ref)
        except (ImagePullError, *EngineErrors) as exc:
            message = exc.message if isinstance(exc, ImagePullError) else _engine_message(exc)
            raise ContainerConfigError(f'failed to inspect image "{image}": {message}') from exc
        return str((inspect.get("Config") or {}).get("User") or "")

    def _seccomp_json(self, config: ContainerConfig) -> str | None:
        """The container's Localhost seccomp profile, read from its file on this host (under
        `docker.seccompProfileRoot`) and sent as text, as the Docker CLI sends
        `--security-opt seccomp=<file>`."""
        profile = config.security.seccomp
        if profile is None or profile.type != "Localhost":
            return None
        where, path = profile.field, profile.localhost
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read(SECCOMP_PROFILE_MAX_BYTES + 1)
            if len(text) > SECCOMP_PROFILE_MAX_BYTES:
                raise ValueError(f"larger than {SECCOMP_PROFILE_MAX_BYTES} bytes")
            return json.dumps(json.loads(text), separators=(",", ":"))
        except OSError as exc:
            raise ContainerConfigError(
                f'{where}: cannot load seccomp profile "{path}": {exc.strerror}'
            ) from exc
        except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError too
            raise ContainerConfigError(f'{where}: seccomp profile "{path}" is not JSON: {exc}') from exc

    def _create_kwargs(self, config: ContainerConfig, root: Path | None) -> dict[str, Any]:
        """The container's `containers.create` arguments, with the files on this host they
        point at made first (a bad seccomp profile fails before any is). Blocking: in the pool."""
        seccomp_json = self._seccomp_json(config)
        dirs = self._dirs
        hosts = config.hosts_file
        return sp.container_create_kwargs(
            config,
            node_name=self.node_name,
            termination_file=None
            if dirs is None
            else dirs.termination_file(config.metadata, config.name, config.attempt),
            volumes_root=None if root is None else str(root),
            resolve_subpath=None if root is None else self._subpath_source(config.metadata.uid),
            seccomp_json=seccomp_json,
            hosts_file=None if dirs is None or hosts is None else dirs.hosts_file(config.metadata, hosts),
            emptydir_dirs=None if root is None else self._emptydir_dirs(config),
            resolv_file=pod_resolv.resolv_file(self._pod_dir(config.metadata.uid)),
        )

    def _subpath_source(self, uid: str) -> sp.SubPathResolver:
        """What the engine binds for a subPath (blocking: in the pool). Where this process may
        mount: the checked path bound onto `<pod dir>/volume-subpaths/<volume>/<container>/<i>`.
        Where it may not: the checked path of a read-only API volume (only the provider writes
        its directories), and a refusal for a volume pods can write (emptyDir, hostPath),
        whose directories a pod could swap for a symlink after any check."""

        def source(m: sp.SubPathMount) -> str:
            if self._subpath_refusal is None:
                pod_dir = self._pod_dir(uid)
                names = (m.volume, m.container)
                if pod_dir is None or not all(paths.is_safe_name(n) for n in names):
                    raise ContainerConfigError(f"{names!r} cannot be directory names")
                target = pod_dir / subpath_mounts.SUBPATHS_DIR / m.volume / m.container / str(m.index)
                return subpath_mounts.bind_subpath(m.source, m.sub, m.volume, m.container, target)
            if m.writable:
                raise ContainerConfigError(
                    f'subPath of volume "{m.volume}" in container "{m.container}" is refused on this node: '
                    f"{self._subpath_refusal}; a volume pods can write needs its sub-path bind-mounted "
                    "by the provider (docs/security.md)"
                )
            fd = subpath_mounts.open_subpath(m.source, m.sub, m.volume, m.container)
            try:
                return subpath_mounts.opened_path(fd)
            finally:
                os.close(fd)

        return source

    def _emptydir_dirs(self, config: ContainerConfig) -> dict[str, str]:
        """The host directories of the disk emptyDir volumes this container mounts with a
        sub-path: their Docker volume's Mountpoint, when this process sees it (a local engine
        whose data root is on this filesystem). Blocking: in the pool."""
        found: dict[str, str] = {}
        for m in config.mounts:
            if m.kind != MountKind.EMPTY_DIR or not m.sub_path or m.memory or m.volume in found:
                continue
            docker_name = sp.emptydir_docker_prefix(config.metadata.uid) + m.volume
            with contextlib.suppress(*EngineErrors):
                point = str(self._engine.client.api.inspect_volume(docker_name).get("Mountpoint") or "")
                if point and os.path.isdir(point):
                    found[m.volume] = point
        return found

    async def start_container(self, config: ContainerConfig) -> ContainerInstance:
        try:
            return await self._start_container(config)
        finally:
            self._states.listing.changed(config.metadata.uid)  # as in ensure_sandbox

    async def _start_container(self, config: ContainerConfig) -> ContainerInstance:
        try:
            root = self._volumes_root(config.metadata.uid)
        except paths.UnsafePathError as exc:
            raise ContainerConfigError(str(exc)) from exc
        try:
            # One turn in the pool: the seccomp profile, the termination-log file, /etc/hosts
            # and a subPath's walk and bind mount are all on the host's filesystem.
            kwargs = await self._engine.call(self._create_kwargs, config, root)
        except subpaths.SubPathError as exc:
            log.warning(
                "container not created",
                extra=pod_fields(
                    config.metadata.as_object(), container=config.name, err=exc.message, detail=exc.detail
                ),
            )
            raise
        try:
            container = await self._engine.call(create_container, self._engine.client, **kwargs)
        except EngineErrors as exc:
            raise ContainerCreateError(_engine_message(exc)) from exc
        try:
            await self._engine.call(container.start)
        except EngineErrors as exc:
            raise ContainerStartError(
                f'failed to start container "{container.id}": {_engine_message(exc)}'
            ) from exc
        inst = await self._states.instance(str(container.id))
        if inst is None:
            raise ContainerStartError(f'container "{container.id}" vanished after starting')
        return inst

    async def stop_container(
        self, container_id: str, grace_seconds: float, signal: str | None = None
    ) -> None:
        inspect = await self._states.owned_inspect(container_id)
        if inspect is None or not (inspect.get("State") or {}).get("Running"):
            return
        if (
            self._cni is not None
            and lb.role_of((inspect.get("Config") or {}).get("Labels") or {}) == ContainerRole.SANDBOX
        ):
            await self._cni.teardown(container_id, inspect)  # the kubelet's StopPodSandbox: network first
        sig = signal or _signal_of(inspect)
        if grace_seconds > 0 and await self._signal_and_wait(container_id, sig, grace_seconds):
            return
        await self._signal_and_wait(container_id, "SIGKILL", KILL_WAIT_SECONDS)

    async def _signal_and_wait(self, container_id: str, sig: str, seconds: float) -> bool:
        """Send `sig`; True once the container has exited within `seconds`."""
        pump = self._states.pump
        exited = pump.wait_exit(container_id) if pump is not None else None
        try:
            try:
                await self._engine.call(self._engine.client.api.kill, container_id, signal=sig)
            except APIError as exc:
                if exc.status_code in (404, 409):  # gone, or not running any more
                    return True
                raise
            deadline = time.monotonic() + seconds
            while (remaining := deadline - time.monotonic()) > 0:
                if exited is not None:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(exited), min(remaining, EXIT_POLL_SECONDS))
                        return True
                else:
                    await asyncio.sleep(min(remaining, EXIT_POLL_SECONDS))
                # The event stream may have been reconnecting: look directly too.
                inspect = await self._states.inspect(container_id)
                if inspect is None or not (inspect.get("State") or {}).get("Running"):
                    return True
            return False
        finally:
            self._states.forget_running(container_id)
            if exited is not None and pump is not None:
                pump.forget(container_id, exited)

    async def exec_in_container(
        self, container_id: str, command: list[str], timeout_seconds: float
    ) -> tuple[int, bytes]:
        api = self._engine.client.api
        if await self._states.owned_inspect(container_id) is None:
            raise ContainerNotFound(f'container "{container_id}" not found on this node')
        try:
            created = await self._engine.call(
                api.exec_create, container_id, command, stdout=True, stderr=True
            )
        except EngineErrors as exc:
            raise RuntimeFailure(
                f"cannot exec in container {container_id[:12]}: {_engine_message(exc)}"
            ) from exc
        exec_id = created["Id"]
        streams_api = self._engine.stream_client.api
        chunks: list[bytes] = []

        async def collect() -> None:
            async for chunk in thread_stream(
                # No read timeout on the stream (a quiet hook may run long); wait_for bounds it.
                lambda: streams_api.exec_start(exec_id, stream=True),
                name=f"docker-exec-{container_id[:12]}",
            ):
                chunks.append(chunk)

        try:
            await asyncio.wait_for(collect(), timeout_seconds)
        except TimeoutError as exc:
            raise TimeoutError(
                f"command {command!r} timed out after {timeout_seconds:g}s in container {container_id[:12]}"
            ) from exc
        result = await self._engine.call(api.exec_inspect, exec_id)
        return int(result.get("ExitCode") or 0), b"".join(chunks)

    async def container_logs(
        self, container_id: str, *, follow: bool, timestamps: bool, tail: int | None, since: float | None
    ) -> AsyncIterator[bytes]:
        """Checks the container here; the returned iterator streams its log in its own thread."""
        if await self._states.owned_inspect(container_id) is None:
            raise ContainerNotFound(f'container "{container_id}" not found on this node')
        api = self._engine.stream_client.api
        kwargs: dict[str, Any] = {"stream": True, "follow": follow, "timestamps": timestamps}
        kwargs["tail"] = "all" if tail is None else tail
        if since is not None and since > 0:
            kwargs["since"] = float(since)
        return thread_stream(
            lambda: api.logs(container_id, **kwargs), name=f"docker-logs-{container_id[:12]}"
        )

    # --- for the kubelet API ---

    async def update_resources(self, container_id: str, resources: LinuxResources) -> None:
        """`docker update` of the running container's cpu and memory limits (in-place resize)."""
        if await self._states.owned_inspect(container_id) is None:
            raise ContainerNotFound(f'container "{container_id}" not found on this node')
        kwargs = sp.resource_kwargs(resources)
        try:
            await self._engine.call(self._engine.client.api.update_container, container_id, **kwargs)
        except EngineErrors as exc:
            raise RuntimeFailure(_engine_message(exc)) from exc
        finally:
            self._states.forget_running(container_id)  # its limits changed: inspect it again

    def pod_address(self, pod: PodRuntimeState) -> str:
        """The sandbox's address on the Docker network ("" with host networking)."""
        return pod.sandbox.ip if pod.sandbox is not None else ""

    async def container_stats(self, container_ids: Sequence[str]) -> list[ContainerStats | None]:
        """From the containers' cgroup files, all in one thread hop, when this host has them
        (cgroup_stats.py: a hop per container cost six times the reads); else, and for any not
        found there, one `docker stats` each."""
        cgroups = self._cgroups
        samples = (
            await asyncio.to_thread(lambda: [cgroups.read(i) for i in container_ids])
            if cgroups is not None
            else [None] * len(container_ids)
        )
        engine = await asyncio.gather(
            *(
                self._engine_stats(i)
                for i, sample in zip(container_ids, samples, strict=True)
                if sample is None
            )
        )
        answers = iter(engine)
        return [container_stats(sample) if sample is not None else next(answers) for sample in samples]

    async def _engine_stats(self, container_id: str) -> ContainerStats | None:
        try:
            await self._engine.connect()
            raw: dict[str, Any] = await self._engine.call(
                self._engine.client.api.stats, container_id, stream=False, one_shot=True
            )
        except (*EngineErrors, RuntimeFailure):
            return None
        return container_stats(raw)

    async def open_exec(
        self, container_id: str, command: list[str], *, stdin: bool, stdout: bool, stderr: bool, tty: bool
    ) -> DockerSession:
        return await self._streams.exec(
            container_id, command, stdin=stdin, stdout=stdout, stderr=stderr, tty=tty
        )

    async def open_attach(
        self, container_id: str, *, stdin: bool, stdout: bool, stderr: bool
    ) -> DockerSession:
        return await self._streams.attach(container_id, stdin=stdin, stdout=stdout, stderr=stderr)

    # --- clean-up ---

    async def _remove(self, container_id: str) -> None:
        api = self._engine.client.api
        try:
            await self._engine.call(api.remove_container, container_id, force=True, v=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:
                raise
            # "removal of container ... is already in progress": the engine goes on with a
            # removal whose caller went away (a provider stopped mid-deletion); wait for it.
            await self._wait_removed(container_id, exc)
        finally:
            self._states.removed(container_id)

    async def _remove_sandbox(self, container_id: str) -> None:
        """CNI mode: DEL its network first (a failure keeps it, to be removed again later)."""
        if self._cni is not None:
            await self._cni.teardown(container_id, await self._states.inspect(container_id))
        await self._remove(container_id)

    async def _wait_removed(self, container_id: str, conflict: APIError) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + KILL_WAIT_SECONDS
        while loop.time() < end:
            try:
                await self._engine.call(self._engine.client.api.inspect_container, container_id)
            except NotFound:
                return
            await asyncio.sleep(REMOVAL_POLL_SECONDS)
        raise RuntimeFailure(f"container {container_id[:12]} is still being removed: {conflict}")

    async def prune_pod(self, uid: str) -> None:
        rows = await self._states.list_rows(lb.pod_filter(self.node_name, uid))
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in rows:
            labels = r.get("Labels") or {}
            groups.setdefault((labels.get(lb.ROLE, ""), labels.get(lb.CONTAINER_NAME, "")), []).append(r)
        doomed = []
        for (role, _), members in groups.items():
            keep = 1 if role == ContainerRole.SANDBOX.value else 2
            members.sort(key=lambda r: lb.attempt_of(r.get("Labels") or {}), reverse=True)
            doomed += [r for r in members[keep:] if r.get("State") != "running"]
        sandbox = ContainerRole.SANDBOX.value
        await asyncio.gather(
            *(
                (self._remove_sandbox if (r.get("Labels") or {}).get(lb.ROLE) == sandbox else self._remove)(
                    str(r["Id"])
                )
                for r in doomed
            )
        )
        if self._dirs is not None:
            for r in doomed:
                await self._engine.call(self._dirs.drop_container_dir, uid, r.get("Labels") or {})

    async def remove_pod(self, uid: str) -> None:
        try:
            await self._remove_pod(uid)
        except EngineErrors as exc:
            # A RuntimeFailure, so that `vk-provider clean` logs this pod and goes on with the rest.
            raise RuntimeFailure(f"removing pod {uid}: {exc}") from exc

    async def _remove_pod(self, uid: str) -> None:
        rows = await self._states.list_rows(lb.pod_filter(self.node_name, uid))
        sandboxes = [r for r in rows if lb.role_of(r.get("Labels") or {}) == ContainerRole.SANDBOX]
        others = [r for r in rows if r not in sandboxes]
        await asyncio.gather(*(self._remove(str(r["Id"])) for r in others))
        await asyncio.gather(*(self._remove_sandbox(str(r["Id"])) for r in sandboxes))
        if self._dirs is not None:  # before the volumes and files whose paths they hold
            await self._engine.call(self._dirs.clean_subpaths, uid)
        api = self._engine.client.api
        volumes = await self._engine.call(
            api.volumes, filters={"label": [f"{lb.NODE}={self.node_name}", f"{lb.POD_UID}={uid}"]}
        )
        for vol in (volumes or {}).get("Volumes") or []:
            with contextlib.suppress(NotFound):
                await self._engine.call(api.remove_volume, vol["Name"], force=True)
        self._shipped.forget(uid)
        if self._dirs is not None:
            await self._engine.call(self._dirs.drop_pod_dir, uid)

    async def remove_node_resources(self) -> list[str]:
        removed = await self._pod_network.remove()
        return [] if removed is None else [f"network {removed}"]

    async def list_pod_storage(self) -> set[str]:
        api = self._engine.client.api
        answer = await self._engine.call(api.volumes, filters=lb.node_filter(self.node_name))
        uids = {
            (vol.get("Labels") or {})[lb.POD_UID]
            for vol in (answer or {}).get("Volumes") or []
            if lb.is_owned(vol.get("Labels") or {}, self.node_name)
        }
        if self._dirs is not None:
            uids |= await self._engine.call(self._dirs.pod_uids)
        return uids
