"""The apiserver's etcd compactor (k8s.io/apiserver pkg/storage/etcd3/compact.go): every
`--etcd-compaction-interval` (5 minutes by default) the store's history is compacted to the
revision the previous tick saw, so a list at an older resourceVersion, or a continue token of
one, is 410 Expired (the continue token's answer carries an inconsistent one that goes on).
Must not: touch objects (Store.compact only moves the history's floor).
"""

from __future__ import annotations

import asyncio

from vk_common.tasks import BackgroundTask
from vk_sandbox.storage.store import Store

COMPACTION_INTERVAL = 300.0  # storagebackend.DefaultCompactInterval


class Compactor:
    def __init__(self, store: Store, interval: float = COMPACTION_INTERVAL) -> None:
        self._store = store
        self._interval = interval
        self._task = BackgroundTask("sandbox-compactor")

    async def start(self) -> None:
        self._task.start(self._run)

    async def stop(self) -> None:
        await self._task.stop()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            self._store.compact()
