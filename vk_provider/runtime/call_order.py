"""The order in which a runtime's blocking calls are served once they queue: oldest pod first.

What lives here: `call_priority`, a context variable a caller sets to order the runtime calls
made in its context (a pod worker sets its pod's arrival number: the first pod seen is 1), and
`PriorityGate`, the bounded set of slots those calls wait for, handed out lowest priority
first and in arrival order among equals. Calls made outside any pod's context (relists,
events, the kubelet API's stats and logs) keep the default 0 and go first.

Why: a burst of N new pods makes N workers queue their Docker calls in one pool of a few
threads. In arrival order, every pod's next call waits behind the calls of all the others, so
almost every pod is Running only near the end of the burst. Oldest pod first lets the first
pods finish at the speed of a lone pod while the pool stays as busy, which is what raw Docker
with a thread per pod does (`bench/startup.py` measures both).

Must not: know about Docker, pods or threads; it only orders waiters.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from contextvars import ContextVar

call_priority: ContextVar[int] = ContextVar("call_priority", default=0)


class PriorityGate:
    """At most `slots` holders at once; a released slot goes to the waiter with the lowest
    (priority, arrival). A free slot exists only while nobody waits, so a newcomer never
    overtakes a waiter."""

    def __init__(self, slots: int) -> None:
        self._free = max(1, slots)
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrival = itertools.count()

    async def acquire(self, priority: int) -> None:
        if self._free > 0:
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._arrival), granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release()  # handed the slot just as it was cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, granted = heapq.heappop(self._waiters)
            if not granted.done():  # a cancelled waiter is skipped
                granted.set_result(None)
                return
        self._free += 1
