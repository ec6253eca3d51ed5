"""`DockerRuntime`: the Runtime protocol on one Docker engine.

What lives here: the I/O shell that turns the pure mappings (labels, spec, images) into
Docker calls, each through the engine's bounded pool, and reads this node's containers
back from their labels. Must not: touch containers without this node's label, or block
the event loop.
"""

from __future__ import annotations

import os

from requests.exceptions import RequestException

from docker.errors import DockerException
from vk_provider.config import DockerConfig
from vk_provider.logging import get_logger
from vk_provider.runtime.docker.engine import Engine
from vk_provider.runtime.docker.hostinfo import runtime_info
from vk_provider.runtime.types import RuntimeInfo, RuntimeUnavailable

log = get_logger("runtime.docker")


def _storage_bytes(root_dir: str) -> int:
    """Size of the filesystem holding Docker's root dir, when it is visible from here (local engine)."""
    try:
        st = os.statvfs(root_dir)
    except OSError:
        return 0
    return st.f_blocks * st.f_frsize


class DockerRuntime:
    def __init__(self, config: DockerConfig, node_name: str) -> None:
        self.config = config
        self.node_name = node_name
        self._engine = Engine(config)

    async def start(self) -> None:
        await self._engine.connect()
        await self.ping()

    async def close(self) -> None:
        await self._engine.close()

    async def ping(self) -> None:
        await self._engine.connect()  # an engine that was down at start may be back
        try:
            await self._engine.call(self._engine.client.api.ping)
        except (DockerException, RequestException) as exc:
            raise RuntimeUnavailable(f"Docker engine at {self._engine.url} does not answer: {exc}") from exc

    async def info(self) -> RuntimeInfo:
        await self._engine.connect()
        try:
            info = await self._engine.call(self._engine.client.info)
        except (DockerException, RequestException) as exc:
            raise RuntimeUnavailable(f"Docker engine at {self._engine.url} does not answer: {exc}") from exc
        storage = await self._engine.call(_storage_bytes, str(info.get("DockerRootDir") or "/var/lib/docker"))
        return runtime_info(info, storage)
