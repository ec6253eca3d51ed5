"""`DockerRuntime`: the Runtime protocol on one Docker engine, over the configurations it is given.

What lives here: the I/O shell of the engine verbs. It makes sandboxes through `sandboxes.SandboxMaker`
(a `SandboxConfig` in), creates and starts containers from their `ContainerConfig` (`spec`'s create
kwargs, with the files on this host they bind made first: a Localhost seccomp profile read from
its path and sent as text, the termination-log file, the managed /etc/hosts, the pod's
resolv.conf, and each sub-path opened without following a swapped symlink and bind-mounted under
the pod's directory before the engine binds it: `subpath_mounts`, the kubelet's way, refused on
a volume pods can write when this process may not mount), stops and removes through
`removal.Removal`, reads this node's containers back from their labels (`pod_states`: the event
pump, the caches and the reads), serves the kubelet API's needs (logs, stats, exec/attach
sessions through `interactive.DockerStreams`) and ships the files of API-backed volumes to an
engine that is not local (`shipped_volumes`). Every engine call goes through the engine's
bounded pool (streams get their own threads); docker-py's errors are translated into the
runtime-neutral ones of `runtime.types`. Its files live under `docker.stateDir/<node>` (0700,
`pod_dirs`): only UIDs and names that are one plain path component become directories there,
and everything is removed through `guarded_paths.remove_under`. The host's AppArmor / SELinux /
userns facts come from `info`.
Must not: decide anything about a pod (the kuberuntime layer did), touch containers without this
node's label, remove anything outside the node's state directory, or block the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from docker.errors import ImageNotFound
from vk_common import guarded_paths as paths
from vk_common.hostpath_types import HostPathTypeError, check_host_path
from vk_common.logging import get_logger, pod_fields
from vk_provider.config import DockerConfig
from vk_provider.kube.keyring import Keyring
from vk_provider.metrics import ProviderMetrics
from vk_provider.runtime import subpath_mounts, subpaths
from vk_provider.runtime.configs import (
    ContainerConfig,
    HostSecurity,
    MountKind,
    PodCgroup,
    SandboxConfig,
)
from vk_provider.runtime.docker import images, pod_resolv
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker import spec as sp
from vk_provider.runtime.docker.cgroup_stats import CgroupStats
from vk_provider.runtime.docker.cni_sandbox import CNISandboxes
from vk_provider.runtime.docker.create import create_request
from vk_provider.runtime.docker.engine import Engine, EngineErrors, engine_is_local
from vk_provider.runtime.docker.hostinfo import runtime_info
from vk_provider.runtime.docker.image_inspects import ImageInspects
from vk_provider.runtime.docker.interactive import DockerSession, DockerStreams
from vk_provider.runtime.docker.pod_dirs import PodDirs
from vk_provider.runtime.docker.pod_network import PodNetwork
from vk_provider.runtime.docker.pod_states import PodStates
from vk_provider.runtime.docker.pull import ImagePuller
from vk_provider.runtime.docker.pull import engine_message as _engine_message
from vk_provider.runtime.docker.removal import Removal
from vk_provider.runtime.docker.sandboxes import SandboxMaker
from vk_provider.runtime.docker.seccomp_profile import localhost_profile_json
from vk_provider.runtime.docker.security_options import host_security
from vk_provider.runtime.docker.shipped_volumes import ShippedVolumes
from vk_provider.runtime.docker.stats import container_stats
from vk_provider.runtime.docker.streams import thread_stream
from vk_provider.runtime.docker.volume_usage import volume_usage
from vk_provider.runtime.pod_cgroups import CgroupDriver, PodCgroups
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


def _storage_bytes(root_dir: str) -> int:
    """Size of the filesystem holding Docker's root dir, when it is visible from here (local engine)."""
    try:
        st = os.statvfs(root_dir)
    except OSError:
        return 0
    return st.f_blocks * st.f_frsize


class DockerRuntime:
    SHARE_UTS = False  # Docker gives a container that joins a network namespace its UTS too
    EVENTS_BY_ACTION = True  # Docker's event stream takes an `event` filter

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
            lambda pod: self._sandboxes.ensure_sandbox_image(),
        )
        self._puller = ImagePuller(self._engine)
        self._image_inspects = ImageInspects(self._engine.inspect_image)  # a burst asks once
        self._pod_network = PodNetwork(self._engine, node_name, config.network)
        self._cni = cni
        local = engine_is_local(config.engine_location, self._engine.url)  # docker.engineLocation
        # The pods' files on this host (termination logs, /etc/hosts, API volumes, sub-paths).
        self._dirs = PodDirs(Path(config.state_dir) / node_name) if local else None
        self._cgroups = CgroupStats() if local else None  # stats without the engine, when visible
        # What the engine holds of this node's pods: the event pump, the caches, the reads.
        self._states = PodStates(
            self._engine, node_name, cni, self._cgroups, events_by_action=self.EVENTS_BY_ACTION
        )
        self._removal = Removal(
            self._engine, self._states, node_name, cni, self._dirs, self._shipped, lambda: self._pod_cgroups
        )
        self._sandboxes = SandboxMaker(
            self._engine,
            self._states,
            config,
            node_name,
            images=self,
            removal=self._removal,
            pod_network=self._pod_network,
            cni=cni,
            dirs=self._dirs,
            cgroups=lambda: self._pod_cgroups,
        )
        # Why a subPath cannot be bind-mounted here (None: it can), found at start.
        self._subpath_refusal: str | None = "the state directory is not prepared yet"
        self._host_security = HostSecurity()  # from `info`, at start
        self._pod_cgroups: PodCgroups | None = None  # the pods' cgroups, once found writable at start

    # --- connection ---

    async def start(self) -> None:
        await self._engine.connect()
        await self.ping()
        await self._engine.check_kind(self.config.engine)
        info = await self._engine_info()
        if self._dirs is not None:
            self._subpath_refusal = await self._engine.call(self._dirs.prepare)
        await self._start_pod_cgroups(info)
        self._states.start()

    async def _start_pod_cgroups(self, info: Mapping[str, Any]) -> None:
        """A cgroup per pod (docker.podCgroups) where the engine is on this host and its cgroups
        can be written here; otherwise off, with one warning (pod-level limits are then refused).
        `info`: the engine's, for its cgroup driver and version."""
        if not self.config.pod_cgroups:
            return
        cgroups = PodCgroups(
            root=f"{self.config.cgroup_root.rstrip('/')}/{self.node_name}",
            driver=CgroupDriver(str(info.get("CgroupDriver") or "cgroupfs")),
            version=int(info.get("CgroupVersion") or 1),
        )
        reason = "the engine is not on this host" if self._dirs is None else ""
        if not reason:
            try:
                await self._engine.call(cgroups.prepare)
            except (OSError, ValueError) as exc:
                reason = f"cannot write the host's cgroups: {exc}"
        if reason:
            log.warning("pod cgroups off", extra={"reason": reason, "cgroupRoot": cgroups.root})
            return
        self._pod_cgroups = cgroups
        self._host_security = dataclasses.replace(self._host_security, pod_cgroups=True)
        log.info("pod cgroups on", extra={"cgroupRoot": cgroups.root, "driver": cgroups.driver.value})

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

    async def _engine_info(self) -> dict[str, Any]:
        """Docker's `info`; the host's security facts are read from it again."""
        await self._engine.connect()
        try:
            info: dict[str, Any] = await self._engine.call(self._engine.client.info)
        except EngineErrors as exc:
            raise RuntimeUnavailable(f"Docker engine at {self._engine.url} does not answer: {exc}") from exc
        self._host_security = dataclasses.replace(
            host_security(info), pod_cgroups=self._pod_cgroups is not None
        )
        return info

    async def info(self) -> RuntimeInfo:
        info = await self._engine_info()
        storage = await self._engine.call(_storage_bytes, str(info.get("DockerRootDir") or "/var/lib/docker"))
        return runtime_info(info, storage, self.config.runtimes)

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
            inspect = await self._image_inspects.get(ref.normalized())
        except ImageNotFound:
            return None
        except EngineErrors as exc:
            raise images.inspect_error(image, _engine_message(exc)) from exc
        return str(inspect["Id"])

    async def pull_image(self, image: str, keyring: Keyring) -> PulledImage:
        log.info("pulling image", extra={"image": image})
        try:
            return await self._puller.pull(image, keyring)
        finally:
            self._forget_image(image)

    # --- sandbox ---

    def host_security(self) -> HostSecurity:
        return self._host_security

    async def ensure_sandbox(self, config: SandboxConfig) -> PodSandboxState:
        try:
            return await self._sandboxes.ensure(config)
        finally:
            # Whatever it made, the latest list does not show.
            self._states.listing.changed(config.metadata.uid)

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
            df = await self._engine.call(self._df)
        except EngineErrors as exc:
            raise RuntimeUnavailable(f"Docker engine at {self._engine.url} does not answer: {exc}") from exc
        return volume_usage(df, self.node_name)

    def _df(self) -> dict[str, Any]:
        """The engine's `system df` (blocking: in the pool; counted as `df`)."""
        df: dict[str, Any] = self._engine.client.api.df()
        return df

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
            inspect = await self._image_inspects.get(ref)
        except (ImagePullError, *EngineErrors) as exc:
            message = exc.message if isinstance(exc, ImagePullError) else _engine_message(exc)
            raise ContainerConfigError(f'failed to inspect image "{image}": {message}') from exc
        return str((inspect.get("Config") or {}).get("User") or "")

    def _create_kwargs(self, config: ContainerConfig, root: Path | None) -> dict[str, Any]:
        """The container's `containers.create` arguments, with the files on this host they
        point at made first (a bad seccomp profile fails before any is). Blocking: in the pool."""
        seccomp_json = self._seccomp_profile(config)
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
            runtime=sp.engine_runtime(self.config, config.sandbox.runtime_handler),
        )

    def _seccomp_profile(self, config: ContainerConfig) -> str | None:
        """What `seccomp=` of a Localhost profile names: its JSON text, as the Docker CLI sends it."""
        return localhost_profile_json(config)

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
        params, body = create_request(self._engine.client, share_uts=self.SHARE_UTS, **kwargs)
        try:
            container_id = await self._engine.create_container(params, body)
        except EngineErrors as exc:
            if isinstance(exc, ImageNotFound):  # gone since it was last seen: asked again next time
                self._forget_image(config.image)
            raise ContainerCreateError(_engine_message(exc)) from exc
        try:
            await self._states.start_container(container_id)
        except EngineErrors as exc:
            self._start_failed(container_id, _engine_message(exc))
            raise ContainerStartError(
                f'failed to start container "{container_id}": {_engine_message(exc)}'
            ) from exc
        inst = await self._states.instance(container_id)
        if inst is None:
            raise ContainerStartError(f'container "{container_id}" vanished after starting')
        return inst

    def _forget_image(self, image: str) -> None:
        with contextlib.suppress(ImagePullError):  # a name that does not parse was never kept
            self._image_inspects.forget(images.parse_image(image).normalized())

    def _start_failed(self, container_id: str, message: str) -> None:
        """Docker keeps a start's error in the container's State (labels.instance_from_inspect)."""

    async def stop_container(
        self, container_id: str, grace_seconds: float, signal: str | None = None
    ) -> None:
        await self._removal.stop(container_id, grace_seconds, signal)

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
        try:
            await self._apply_resources(container_id, resources)
        except EngineErrors as exc:
            raise RuntimeFailure(_engine_message(exc)) from exc
        finally:
            self._states.forget_running(container_id)  # its limits changed: inspect it again

    async def _apply_resources(self, container_id: str, resources: LinuxResources) -> None:
        kwargs = sp.resource_kwargs(resources)
        await self._engine.call(self._engine.client.api.update_container, container_id, **kwargs)

    async def update_pod_resources(self, pod_uid: str, cgroup: PodCgroup) -> None:
        if self._pod_cgroups is not None:
            await self._engine.call(self._pod_cgroups.update, cgroup.qos, pod_uid, cgroup.resources)

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

    async def prune_pod(self, uid: str) -> None:
        await self._removal.prune_pod(uid)

    async def remove_container(self, container_id: str) -> None:
        await self._removal.remove(container_id)

    async def remove_pod(self, uid: str) -> None:
        await self._removal.remove_pod(uid)

    async def remove_node_resources(self) -> list[str]:
        removed = await self._pod_network.remove()
        names = [] if removed is None else [f"network {removed}"]
        if self._pod_cgroups is not None and await self._engine.call(self._pod_cgroups.remove_root):
            names.append(f"cgroup {self._pod_cgroups.root}")
        return names

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
        if self._pod_cgroups is not None:
            uids |= await self._engine.call(self._pod_cgroups.pod_uids)
        return uids
