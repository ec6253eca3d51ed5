"""The lifecycle of background tasks: start one once, stop it by cancelling it and waiting.

Lives here: `BackgroundTask`, the start / cancel / await idiom every long-running part of the
provider uses, and `cancel_and_wait` for a group of tasks. Must not: know what a task does, log
its failures (the owner's coroutine does), or swallow a cancellation of the caller itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> list[BaseException]:
    """Cancel `tasks` (None entries are skipped) and wait until each has finished.

    Returns the exceptions the tasks had ended with, their own cancellation left out; raises
    none of them. A cancellation of the caller still propagates.
    """
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    if not running:
        return []
    results = await asyncio.gather(*running, return_exceptions=True)
    return [
        result
        for result in results
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError)
    ]


class BackgroundTask:
    """One named task an owner starts at most once at a time and stops with `stop`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Start `run()` unless it already runs (a finished task is started anew)."""
        if not self.running:
            self._task = asyncio.create_task(run(), name=self.name)

    async def stop(self, grace: float = 0.0) -> None:
        """Wait up to `grace` seconds for the task to end by itself (its owner has told it to),
        then cancel it and wait for it (a no-op when it never started); raise what it had failed
        with, as awaiting it would."""
        task, self._task = self._task, None
        if task is not None and grace > 0:
            await asyncio.wait({task}, timeout=grace)
        for error in await cancel_and_wait(task):
            raise error
