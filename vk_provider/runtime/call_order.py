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
with a thread per pod does (`bench/startup.py` measures both). A released slot is handed out on
the loop's next turn, not at once: a pod whose next call follows its last one in the same step
(no await between them) takes the slot back ahead of younger pods' waiters, as a thread that
makes a pod's calls one after another would. Handed out at once, the slot went to the next
waiter, and every pod of a burst moved one call at a time, interleaved with all the others
(`bench.startup`, 20 pods: p50 1.28x the floor with the same throughput and machine CPU).

Must not: know about Docker, pods or threads; it only orders waiters.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from contextvars import ContextVar

call_priority: ContextVar[int] = ContextVar("call_priority", default=0)


class PriorityGate:
    """At most `slots` holders at once; released slots go to the waiters with the lowest
    (priority, arrival), on the loop's next turn. A newcomer takes a free slot at once only when
    nobody waits or it comes before every waiter, so it never overtakes an older or equal one."""

    def __init__(self, slots: int) -> None:
        self._free = max(1, slots)
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrival = itertools.count()
        self._dispatching = False

    async def acquire(self, priority: int) -> None:
        if self._free > 0 and (not self._waiters or priority < self._waiters[0][0]):
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._arrival), granted))
        if self._free > 0:
            self._dispatch_soon()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release()  # handed the slot just as it was cancelled: pass it on
            raise

    def release(self) -> None:
        self._free += 1
        if self._waiters:
            self._dispatch_soon()

    def _dispatch_soon(self) -> None:
        if not self._dispatching:
            self._dispatching = True
            asyncio.get_running_loop().call_soon(self._dispatch)

    def _dispatch(self) -> None:
        self._dispatching = False
        while self._free > 0 and self._waiters:
            _, _, granted = heapq.heappop(self._waiters)
            if not granted.done():  # a cancelled waiter is skipped
                self._free -= 1
                granted.set_result(None)
