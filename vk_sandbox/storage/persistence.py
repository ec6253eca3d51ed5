"""The sandbox store's objects on disk: `state_dir/store.json`, written soon after each change.

What lives here: `StateFile`: `save_soon` (one write 0.2 s after a burst of changes), `flush`,
`close`, and `load`; snapshots are numbered and the writer thread keeps only the newest, so a
save cancelled while its thread writes neither races close()'s own write on the same file nor
lands after it with older state. The file is created 0600 under a name of its own and renamed
into place (it holds secrets, like etcd's data directory).
Must not: know what the objects mean (store.py builds the snapshot and reads it back).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vk_common.tasks import cancel_and_wait

_STATE_FILE = "store.json"


class StateFile:
    def __init__(self, state_dir: Path, snapshot: Callable[[], bytes]) -> None:
        """snapshot: the store's state as the JSON to write."""
        self.path = state_dir / _STATE_FILE
        self._snapshot = snapshot
        self._save_task: asyncio.Task[None] | None = None
        self._write_lock = threading.Lock()
        self._snapshots = 0
        self._written = 0

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None when there is none yet."""
        if not self.path.exists():
            return None
        data: dict[str, Any] = json.loads(self.path.read_text())
        return data

    def save_soon(self) -> None:
        if self._save_task is not None and not self._save_task.done():
            return
        self._save_task = asyncio.get_running_loop().create_task(self._save_later())

    async def _save_later(self) -> None:
        await asyncio.sleep(0.2)
        await self.flush()

    async def flush(self) -> None:
        self._snapshots += 1
        await asyncio.to_thread(self._write_state, self._snapshots, self._snapshot())

    def _write_state(self, number: int, data: bytes) -> None:
        with self._write_lock:
            if number <= self._written:
                return  # a newer snapshot is already on disk
            _atomic_write(self.path, data)
            self._written = number

    async def close(self) -> None:
        await cancel_and_wait(self._save_task)
        await self.flush()


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600 under a name of its own, so the secrets are never readable
    # by others, not even for a moment.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
