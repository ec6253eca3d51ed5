"""The lifecycle of background tasks: start one once, stop it by cancelling it and waiting.

Lives here: `BackgroundTask`, the start / cancel / await idiom every long-running part of the
provider uses, and `cancel_and_wait` for a group of tasks. Must not: know what a task does, log
its failures (the owner's coroutine does), or swallow a cancellation of the caller itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel `tasks` and wait until each has finished.

    A task's own cancellation is expected and not raised; an exception it had ended with is
    (the first one), as awaiting it would. A cancellation of the caller still propagates.
    """
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    if not running:
        return
    results = await asyncio.gather(*running, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


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

    async def stop(self) -> None:
        """Cancel the task and wait for it; a no-op when it never started."""
        task, self._task = self._task, None
        await cancel_and_wait(task)
