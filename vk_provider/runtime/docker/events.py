"""This node's container lifecycle events: one dedicated thread on Docker's event stream.

What lives here: `EventPump`, which reads `events(decode=True, filters={label: node, type:
container})` in a daemon thread, reconnects with backoff (resuming from the last event's
time, skipping what it already delivered, and marking the gap with `EventsResumed`: an engine
that restarted has forgotten what happened while it was down), converts start / die / oom /
destroy into `RuntimeEvent`s and feeds them to the event loop with `call_soon_threadsafe`; and
`runtime_event`, the pure conversion. Besides the queue for `Runtime.events()`, it
resolves waiters for a container's exit (used by stop_container), and numbers its connections
(`epoch`: None while the stream is down), so a reader can tell whether it missed a gap. Must
not: act on events.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from vk_common.logging import get_logger
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.types import EventsResumed, RuntimeEvent

log = get_logger("runtime.docker.events")

ACTIONS = ("start", "die", "oom", "destroy")
BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 5.0  # a refused connect costs nothing; the kubelet's PLEG relists every second
QUEUE_LIMIT = 10000
_CLOSED = object()


def runtime_event(raw: Mapping[str, Any], node_name: str) -> RuntimeEvent | None:
    """A Docker event dict as a RuntimeEvent, or None if it is not one of ours or not of interest."""
    action = str(raw.get("Action") or raw.get("status") or "")
    if raw.get("Type") != "container" or action not in ACTIONS:
        return None
    actor = raw.get("Actor") or {}
    attrs: Mapping[str, str] = actor.get("Attributes") or {}
    role = lb.role_of(attrs)
    if not lb.is_owned(attrs, node_name) or role is None:
        return None
    exit_code = attrs.get("exitCode")
    nanos = raw.get("timeNano")
    when = datetime.fromtimestamp(int(nanos) / 1e9, tz=UTC) if nanos else None
    return RuntimeEvent(
        pod_uid=attrs[lb.POD_UID],
        container_name=attrs.get(lb.CONTAINER_NAME, ""),
        role=role,
        action=action,
        container_id=str(actor.get("ID") or raw.get("id") or ""),
        exit_code=int(exit_code) if exit_code not in (None, "") and action == "die" else None,
        time=when,
    )


class EventPump:
    def __init__(self, open_stream: Callable[[float | None], Any], node_name: str) -> None:
        """`open_stream(since)` returns a CancellableStream of decoded events of this node."""
        self._open = open_stream
        self._node = node_name
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._stream: Any = None
        # Set in the pump's thread: the number of the stream's current connection, None while
        # it is down (between the two, events may have been missed).
        self.epoch: int | None = None
        self._connections = 0
        self._thread: threading.Thread | None = None
        self._exit_waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._last_nanos = 0
        self._seen_at_last: set[tuple[str, str]] = set()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name=f"docker-events-{self._node}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
        self._deliver(_CLOSED)

    def wait_exit(self, container_id: str) -> asyncio.Future[None]:
        """A future resolved by the container's next die or destroy event."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._exit_waiters.setdefault(container_id, []).append(fut)
        return fut

    def forget(self, container_id: str, fut: asyncio.Future[None]) -> None:
        waiters = self._exit_waiters.get(container_id, [])
        if fut in waiters:
            waiters.remove(fut)
        if not waiters:
            self._exit_waiters.pop(container_id, None)

    async def events(self) -> AsyncIterator[RuntimeEvent | EventsResumed]:
        while True:
            item = await self._queue.get()
            if item is _CLOSED:
                self._queue.put_nowait(_CLOSED)  # later iterators end too
                return
            yield item

    # --- in the event loop ---

    def _on_loop(self, item: Any) -> None:
        if isinstance(item, RuntimeEvent) and item.action in ("die", "destroy"):
            for fut in self._exit_waiters.pop(item.container_id, []):
                if not fut.done():
                    fut.set_result(None)
        if self._queue.qsize() >= QUEUE_LIMIT and item is not _CLOSED:
            log.warning(
                "runtime event queue full; event dropped",
                extra={"action": getattr(item, "action", ""), "event": str(item)},
            )
            return
        self._queue.put_nowait(item)

    def _deliver(self, item: Any) -> None:
        if self._loop is None:
            return
        with contextlib.suppress(RuntimeError):  # loop closed
            self._loop.call_soon_threadsafe(self._on_loop, item)

    # --- in the thread ---

    def _is_new(self, raw: Mapping[str, Any]) -> bool:
        nanos = int(raw.get("timeNano") or 0)
        key = (str(raw.get("id") or (raw.get("Actor") or {}).get("ID")), str(raw.get("Action")))
        if nanos < self._last_nanos or (nanos == self._last_nanos and key in self._seen_at_last):
            return False
        if nanos > self._last_nanos:
            self._last_nanos, self._seen_at_last = nanos, set()
        self._seen_at_last.add(key)
        return True

    def _run(self) -> None:
        delay = BACKOFF_INITIAL
        broken = False
        while not self._stop.is_set():
            try:
                since = self._last_nanos / 1e9 if self._last_nanos else None
                self._stream = self._open(since)
                self._connections += 1
                self.epoch = self._connections
                if self._stop.is_set():
                    self._stream.close()
                    return
                if broken:
                    log.info("Docker event stream is back; every pod's state is read again")
                    self._deliver(EventsResumed())
                    broken, delay = False, BACKOFF_INITIAL
                for raw in self._stream:
                    delay = BACKOFF_INITIAL
                    if not self._is_new(raw):
                        continue
                    event = runtime_event(raw, self._node)
                    if event is not None:
                        self._deliver(event)
                if self._stop.is_set():
                    return
                log.warning(
                    "Docker event stream ended; reconnecting", extra={"delaySeconds": round(delay, 1)}
                )
            except Exception as exc:
                if self._stop.is_set():
                    return
                log.warning(
                    "Docker event stream failed; reconnecting",
                    extra={"err": str(exc), "delaySeconds": round(delay, 1)},
                )
            self.epoch = None
            broken = True
            self._stop.wait(delay)
            delay = min(delay * 2, BACKOFF_MAX)
