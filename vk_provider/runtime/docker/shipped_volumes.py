"""API-backed volumes on an engine that does not share our filesystem: shipped through the Docker API.

What lives here: `ShippedVolumes`, which keeps a pod's configMap, secret, downwardAPI or
projected volume as the Docker volume `labels.volume_name(pod, volume)` (labelled with the pod,
so removing the pod removes it) and writes its files with `put_archive` into a helper
container that mounts it, created from the sandbox image (pulled if missing: a pod's volumes
are set up before its sandbox) and never started, removed right after (`volume_tar` builds
the tar: the kubelet's `..data` layout, modes and owners, which the engine applies as it
extracts as root). What each volume holds is remembered per pod; after
a restart it is read back once with `get_archive`, so an unchanged volume is not re-shipped.
Every Docker call goes through the engine's bounded pool. Must not: know where the files come
from (the pods layer computes them) or touch the local filesystem.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from docker.errors import APIError, NotFound
from vk_common.objects import uid as uid_of
from vk_provider.runtime.configs import PodMetadata
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker import spec as sp
from vk_provider.runtime.docker.create import create_container
from vk_provider.runtime.docker.engine import Engine
from vk_provider.runtime.docker.volume_tar import ShippedState, payload_tar, read_volume
from vk_provider.runtime.types import VolumeFile


def _stamp(now: float) -> str:
    """The payload directory's name, as AtomicWriter's `..2006_01_02_15_04_05.<n>`."""
    moment = datetime.fromtimestamp(now, UTC)
    return moment.strftime("..%Y_%m_%d_%H_%M_%S.") + f"{moment.microsecond:06d}"


class ShippedVolumes:
    def __init__(
        self,
        engine: Engine,
        node_name: str,
        helper_image: str,
        ensure_image: Callable[[Mapping[str, Any]], Awaitable[object]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._engine = engine
        self._node = node_name
        self._image = helper_image
        self._ensure_image = ensure_image  # pulls the helper image for the pod if it is missing
        self._clock = clock
        self._states: dict[tuple[str, str], ShippedState] = {}  # (pod uid, volume) -> what it holds

    def forget(self, uid: str) -> None:
        """The pod's volumes were removed."""
        for key in [k for k in self._states if k[0] == uid]:
            del self._states[key]

    async def ship(
        self, pod: Mapping[str, Any], name: str, files: Sequence[VolumeFile], group: int | None
    ) -> bool:
        """Make the volume hold exactly `files`; False when it already did. Raises docker errors."""
        key = (uid_of(pod), name)
        state = self._states.get(key)
        if state is not None and state.holds(files, group):
            return False
        vol = sp.VolumeSpec(
            pod_volume=name,
            docker_name=lb.volume_name(PodMetadata.of(pod), name),
            labels=lb.pod_labels(self._node, PodMetadata.of(pod)),
            driver_opts={},
        )
        self._states.pop(key, None)  # unknown until this succeeds
        await self._ensure_image(pod)  # the sandbox's pull comes later: volumes are set up first
        new, changed = await self._engine.call(self._ship, vol, files, group, state, self._clock())
        self._states[key] = new
        return changed

    def _ship(
        self,
        vol: sp.VolumeSpec,
        files: Sequence[VolumeFile],
        group: int | None,
        state: ShippedState | None,
        now: float,
    ) -> tuple[ShippedState, bool]:
        api = self._engine.client.api
        try:
            api.inspect_volume(vol.docker_name)
        except NotFound:
            api.create_volume(vol.docker_name, driver="local", labels=vol.labels)
            state = ShippedState(slot=None)
        helper = create_container(self._engine.client, **sp.volume_root_kwargs(vol, self._image))
        try:
            if state is None:  # not shipped by this process: read what the volume holds
                chunks, _ = helper.get_archive(f"/{sp.VOLUME_ROOT_PATH}")
                state = read_volume(b"".join(chunks))
                if state.holds(files, group):
                    return state, False
            tar, new = payload_tar(files, group, state, _stamp(now), now)
            if not helper.put_archive("/", tar):
                raise APIError(f"the engine did not take the files of volume {vol.docker_name}")
            return new, True
        finally:
            with contextlib.suppress(NotFound):
                helper.remove(force=True, v=True)
