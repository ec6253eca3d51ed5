"""A collection of the cluster followed by a reflector only to be read (the kubelet's listers).

What lives here: `StoreLister`, a `Reflector` over one collection whose events change nothing
but its store: `start`, `stop`, `synced`, `items` and `get` (by name, or namespace/name). The
services (`kube/services.py`) and the RuntimeClasses (`kube/runtime_classes.py`) are followed
this way.
Must not: interpret the objects or write anything.
"""

from __future__ import annotations

from typing import Any

from vk_provider.kube.client import KubeClient
from vk_provider.kube.reflector import Reflector


class StoreLister:
    def __init__(self, client: KubeClient, path: str, name: str) -> None:
        self._reflector = Reflector(client, path, self._ignore, name=name)

    @staticmethod
    async def _ignore(_type: str, _obj: dict[str, Any]) -> None:
        return None  # only the store is read

    async def start(self) -> None:
        await self._reflector.start()

    async def stop(self) -> None:
        await self._reflector.stop()

    def synced(self) -> bool:
        return self._reflector.synced.is_set()

    def items(self) -> list[dict[str, Any]]:
        return list(self._reflector.store().values())

    def get(self, key: str) -> dict[str, Any] | None:
        """The object of `key`: its name (cluster-scoped) or namespace/name."""
        return self._reflector.store().get(key)
