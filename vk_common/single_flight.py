"""Single-flight: callers asking for one key while its work is under way wait for that work.

What lives here: `SingleFlight`, a table of the tasks under way by key: `join(key, start)` starts
`start()` as a task when none runs for `key`, else waits for the running one (shielded: a
caller's cancellation never cancels the work the others wait for); `drop(key)` forgets the
running task, so the next `join` starts another; `is_current(key)`, inside the work, says
whether it was dropped meanwhile. A finished task leaves the table, its exception retrieved.
Must not: keep results (callers that cache do so themselves) or retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SingleFlight(Generic[K, V]):
    def __init__(self) -> None:
        self._flights: dict[K, asyncio.Task[V]] = {}

    async def join(self, key: K, start: Callable[[], Coroutine[Any, Any, V]]) -> V:
        flight = self._flights.get(key)
        if flight is None:
            flight = asyncio.get_running_loop().create_task(start())
            self._flights[key] = flight
            flight.add_done_callback(lambda done: self._landed(key, done))
        return await asyncio.shield(flight)

    def drop(self, key: K) -> None:
        self._flights.pop(key, None)

    def is_current(self, key: K) -> bool:
        """Inside the work started for `key`: it was not dropped since."""
        return self._flights.get(key) is asyncio.current_task()

    def _landed(self, key: K, flight: asyncio.Task[V]) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        if not flight.cancelled():
            flight.exception()  # retrieved: every waiter may have been cancelled
