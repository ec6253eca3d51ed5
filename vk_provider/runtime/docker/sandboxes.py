"""Making a pod's sandbox on Docker from its `SandboxConfig`.

What lives here: `SandboxMaker`: `ensure(config)` (the pod's running sandbox, or a new one: the
sandbox image (`ensure_sandbox_image`, pulled anonymously when missing, looked up again at most
once a minute, by one pod at a time), the pod's emptyDir Docker volumes (a new disk one gets
its root's mode and group through a never-started helper container), the network (the
host's, none for CNI, or the node's pod network over the Node's pod CIDRs), the pod's
resolv.conf file and its pod cgroup with its limits (`runtime/pod_cgroups.py`, where the node
keeps them) made in one engine-thread call, the container created under the engine runtime of
its RuntimeClass handler (`docker.runtimes`) and started, CNI ADD on it in CNI mode, and the
pod's older sandboxes removed, as the kubelet's container GC keeps a live pod's latest sandbox
alone). Failures are `ContainerCreateError`s whose message starts as the kubelet's "Failed to
create pod sandbox: ".
Must not: decide anything about the pod (its `SandboxConfig` says it all) or block the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from docker.errors import APIError, NotFound
from vk_common import guarded_paths as paths
from vk_common.logging import get_logger, pod_fields
from vk_provider.config import DockerConfig
from vk_provider.kube.keyring import Keyring
from vk_provider.runtime.configs import SandboxConfig
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker import pod_resolv
from vk_provider.runtime.docker import spec as sp
from vk_provider.runtime.docker.cni_sandbox import CNISandboxes
from vk_provider.runtime.docker.create import create_container, create_request
from vk_provider.runtime.docker.engine import Engine, EngineErrors
from vk_provider.runtime.docker.pod_dirs import PodDirs
from vk_provider.runtime.docker.pod_network import PodNetwork
from vk_provider.runtime.docker.pod_states import PodStates
from vk_provider.runtime.docker.pull import engine_message as _engine_message
from vk_provider.runtime.docker.removal import Removal
from vk_provider.runtime.pod_cgroups import PodCgroups
from vk_provider.runtime.types import (
    ContainerCreateError,
    ContainerRole,
    ImagePullError,
    PodSandboxState,
    PulledImage,
    RuntimeFailure,
)

log = get_logger("runtime.docker")

SANDBOX_IMAGE_RECHECK_SECONDS = 60.0  # the sandbox image, once seen, is not looked up again for a while


class Images(Protocol):
    async def image_id(self, image: str) -> str | None: ...

    async def pull_image(self, image: str, keyring: Keyring) -> PulledImage: ...


@dataclass
class SandboxMaker:
    engine: Engine
    states: PodStates
    config: DockerConfig
    node_name: str
    images: Images
    removal: Removal
    pod_network: PodNetwork
    cni: CNISandboxes | None
    dirs: PodDirs | None
    cgroups: Callable[[], PodCgroups | None] = lambda: None  # the node's pod cgroups, once known
    # When the sandbox image was last seen in the engine: a burst of pods checks it once, not
    # once per pod; a create that fails checks it again.
    sandbox_image_seen: float | None = field(default=None, init=False)
    # One look-up at a time: the pods of a burst wait for the first one's answer.
    _sandbox_image_check: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    async def _ensure_volumes(self, config: SandboxConfig) -> None:
        """Create the pod's missing emptyDir volumes; a new disk one gets its root's mode and
        group once (`_set_volume_root`), as the kubelet's setupDir does once per pod: a
        container restart finds the volume as the pod left it."""
        api = self.engine.client.api
        podman = os.sysconf("SC_PAGE_SIZE") if self.config.engine == "podman" else None
        for vol in sp.emptydir_volumes(config, self.node_name, podman):
            try:
                await self.engine.call(api.inspect_volume, vol.docker_name)
                continue
            except NotFound:
                pass
            await self.engine.call(
                api.create_volume,
                vol.docker_name,
                driver="local",
                driver_opts=vol.driver_opts or None,
                labels=vol.labels,
            )
            if vol.memory:
                continue  # the tmpfs mount options carry the mode and group
            try:
                await self.engine.call(self._set_volume_root, vol)
            except EngineErrors:
                # Not left half made: the next attempt creates it again.
                with contextlib.suppress(*EngineErrors):
                    await self.engine.call(api.remove_volume, vol.docker_name, force=True)
                raise

    def _set_volume_root(self, vol: sp.VolumeSpec) -> None:
        """Give a new disk volume's root the kubelet's mode and group through the Docker API
        (so also for an engine whose filesystem this process does not see): extract the root's
        tar entry into a never-started container that mounts the volume, then remove it.
        Podman's archive upload leaves an existing directory's mode as it is: there the mode is
        set on the volume's directory on this host (its group came with the volume's options)."""
        if self.config.engine == "podman":
            point = str(self.engine.client.api.inspect_volume(vol.docker_name).get("Mountpoint") or "")
            if point and os.path.isdir(point):
                os.chmod(point, vol.mode)
                return
        kwargs = sp.volume_root_kwargs(vol, self.config.sandbox_image)
        container = create_container(self.engine.client, **kwargs)
        try:
            if not container.put_archive("/", sp.root_entry_tar(vol)):
                raise APIError(f"cannot set the mode of volume {vol.docker_name}")
        finally:
            with contextlib.suppress(NotFound):
                container.remove(force=True, v=True)

    async def ensure_sandbox_image(self) -> None:
        """The sandbox (pause) image, pulled anonymously when missing: sandboxes and the helper
        containers of shipped volumes are made from it. A failure names the image, as the
        kubelet's `failed to get sandbox image "<image>": ...`."""
        image = self.config.sandbox_image
        async with self._sandbox_image_check:
            seen = self.sandbox_image_seen
            if seen is not None and time.monotonic() - seen < SANDBOX_IMAGE_RECHECK_SECONDS:
                return
            try:
                if await self.images.image_id(image) is None:
                    await self.images.pull_image(image, Keyring())
            except ImagePullError as exc:
                message = f'failed to get sandbox image "{image}": {exc.message}'
                raise ImagePullError(message, exc.reason) from exc
            self.sandbox_image_seen = time.monotonic()

    async def ensure(self, config: SandboxConfig) -> PodSandboxState:
        uid = config.metadata.uid
        rows = await self.states.pod_rows(uid)  # the pod's state was just read: no second list for it
        sandboxes = [r for r in rows if lb.role_of(r.get("Labels") or {}) == ContainerRole.SANDBOX]
        attempt = 0
        if sandboxes:
            latest = max(sandboxes, key=lambda r: lb.attempt_of(r.get("Labels") or {}))
            state = await self.states.sandbox_state(str(latest["Id"]))
            if state is not None and state.running:
                return state
            attempt = lb.attempt_of(latest.get("Labels") or {}) + 1
        try:
            sp.engine_runtime(self.config, config.runtime_handler)  # a handler the node lacks fails first
        except ContainerCreateError as exc:
            raise ContainerCreateError(f"Failed to create pod sandbox: {exc.message}") from exc
        try:
            await self.ensure_sandbox_image()
            await self._ensure_volumes(config)
            if config.host_network:
                network = "host"
            elif self.cni is not None:
                network = "none"  # the plugins set it up once the sandbox runs
            else:
                network = await self.pod_network.ensure(config.pod_cidrs)
            kwargs = sp.sandbox_create_kwargs(
                config,
                node_name=self.node_name,
                docker=self.config,
                attempt=attempt,
                network=network,
                cgroup_parent=await self._pod_files(config, network),
            )
            params, body = create_request(self.engine.client, **kwargs)
            container_id = await self.engine.create_container(params, body)
        except (ImagePullError, *EngineErrors) as exc:
            self.sandbox_image_seen = None  # gone, perhaps: the next sandbox checks again
            message = exc.message if isinstance(exc, ImagePullError) else _engine_message(exc)
            raise ContainerCreateError(f"Failed to create pod sandbox: {message}") from exc
        try:
            await self.states.start_container(container_id)
        except EngineErrors as exc:
            with contextlib.suppress(*EngineErrors):
                await self.engine.call(self.engine.client.api.remove_container, container_id, force=True)
            raise ContainerCreateError(f"Failed to create pod sandbox: {_engine_message(exc)}") from exc
        if network == "none" and self.cni is not None:
            await self._cni_setup(config, container_id)
        state = await self.states.sandbox_state(container_id)
        if state is None:
            raise ContainerCreateError("Failed to create pod sandbox: it vanished after starting")
        # The pod keeps its latest sandbox alone, as the kubelet's container GC (evictSandboxes):
        # the dead one it replaces, or one a provider killed before its start left created.
        await asyncio.gather(
            *(self.removal.remove_sandbox(str(r["Id"])) for r in sandboxes if r.get("State") != "running")
        )
        log.info(
            "started sandbox",
            extra=pod_fields(config.metadata.as_object(), sandboxID=container_id[:12], ip=state.ip),
        )
        return state

    async def _pod_files(self, config: SandboxConfig, network: str) -> str:
        """The pod's resolv.conf written and its pod cgroup made with its limits, in one call on
        an engine thread (a thread hop costs the loop about as much as either write); the
        cgroup's CgroupParent ("" with no pod cgroups). Either failing fails the sandbox."""
        pod_dir = None if self.dirs is None else self.dirs.pod_dir(config.metadata.uid)
        cgroups = self.cgroups()

        def write_pod_files() -> str:
            try:
                pod_resolv.write_resolv_file(pod_dir, config.dns, network)
            except (OSError, paths.UnsafePathError) as exc:
                raise ContainerCreateError(f"cannot write resolv.conf: {exc}") from exc
            if cgroups is None or config.cgroup is None:
                return ""
            return cgroups.ensure(config.cgroup.qos, config.metadata.uid, config.cgroup.resources)

        try:
            return await self.engine.call(write_pod_files)
        except RuntimeFailure as exc:
            raise ContainerCreateError(f"Failed to create pod sandbox: {exc.message}") from exc

    async def _cni_setup(self, config: SandboxConfig, container_id: str) -> None:
        """ADD on the started sandbox; when it fails the sandbox goes (the plugins undid theirs)."""
        assert self.cni is not None
        try:
            inspect = await self.states.inspect(container_id)
            await self.cni.setup(config, inspect or {"Id": container_id})
        except (RuntimeFailure, *EngineErrors) as exc:
            with contextlib.suppress(*EngineErrors):
                await self.removal.remove(container_id)
            message = exc.message if isinstance(exc, RuntimeFailure) else _engine_message(exc)
            raise ContainerCreateError(f"Failed to create pod sandbox: {message}") from exc
