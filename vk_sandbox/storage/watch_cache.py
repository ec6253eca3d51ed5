"""The store's watch cache: the bounded event log and the open watches it feeds.

What lives here: `WatchEvent`, `WatchStream` and `WatchCache`: the log of changes that serves
`watch?resourceVersion=N` and lists at an older resourceVersion (410 Expired as an ERROR event
when N is older than the log), selector transitions (an object that stops matching is DELETED
for that watcher), bookmarks, and each watcher's buffer.

Memory: the log is bounded by count (`log_size`) and by bytes (`log_bytes`, each event charged
the compact JSON size of the states it holds, measured once at write), as the real watch cache
is bounded (`staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go`); a live event is
serialized once and its JSON shared by every watcher (the cacher's `cachingObject`,
`caching_object.go`); each watcher's buffer holds at most `watch_queue_limit` events and
`watch_queue_bytes` bytes, and a watcher whose buffer overflows is terminated
(`cacheWatcher.add` in `cacher/cache_watcher.go`): its buffer is dropped, its stream ends and
its `on_terminate` callback runs, so the client re-lists and re-watches. A watch's state is
freed the moment it ends.
Must not: store objects or decide what a write does (store.py and registry_rules.py do).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from dataclasses import dataclass, field

from vk_common.logging import get_logger
from vk_sandbox.api import errors
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.storage.objects import Obj, clone, encode
from vk_sandbox.storage.selectors import FieldSelector, LabelSelector

log = get_logger("sandbox.store")

LOG_BYTES = 64 * 1024 * 1024


class WatchEvent:
    """One event of a watch: type is ADDED | MODIFIED | DELETED | BOOKMARK | ERROR.

    shared: `obj` is a stored dict (never mutated by the store); `object` copies it on first
    access, so events of many watchers hold no copies of their own. data: obj's `encode()`,
    made once at write and shared by every watcher of a live event."""

    __slots__ = ("_data", "_obj", "_shared", "resource", "type")

    def __init__(
        self, type_: str, resource: str, obj: Obj, *, shared: bool = False, data: bytes | None = None
    ) -> None:
        self.type = type_
        self.resource = resource
        self._obj = obj
        self._shared = shared
        self._data = data

    @property
    def object(self) -> Obj:
        if self._shared:
            self._obj = clone(self._obj)
            self._shared = False
        return self._obj

    @property
    def view(self) -> Obj:
        """The object without a copy, for a reader in this process that never changes it."""
        return self._obj

    def encoded(self) -> bytes:
        """The object's compact JSON, without copying the object."""
        return self._data if self._data is not None else encode(self._obj)

    def __repr__(self) -> str:
        return f"WatchEvent({self.type!r}, {self.resource!r}, {self._obj!r})"


class WatchStream:
    """The events of one watch (an async iterator). `aclose()` ends it and frees its state in the
    cache, also when it was never iterated (a generator that never started runs no `finally`)."""

    def __init__(self, events: AsyncGenerator[WatchEvent, None], forget: Callable[[], None]) -> None:
        self._events = events
        self._forget = forget

    def __aiter__(self) -> WatchStream:
        return self

    async def __anext__(self) -> WatchEvent:
        return await anext(self._events)

    async def aclose(self) -> None:
        await self._events.aclose()
        self._forget()


@dataclass(eq=False)
class _Entry:
    rv: int
    type: str
    resource: str
    namespace: str
    obj: Obj
    prev: Obj | None
    size: int  # the JSON bytes of obj and prev: what this entry keeps alive
    data: bytes | None = None  # encode(obj) while a watcher's buffer holds the entry
    waiting: int = 0  # how many watchers' buffers hold it


@dataclass(eq=False)
class _Watcher:
    info: ResourceInfo
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    min_rv: int
    on_terminate: Callable[[], None] | None = None
    pending: deque[_Entry] = field(default_factory=deque)
    pending_bytes: int = 0
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    def matches(self, obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)

    def convert(self, entry: _Entry, data: bytes | None) -> WatchEvent | None:
        """The event this watcher sees for a logged change (cacheWatcher.convertToWatchEvent);
        data: the entry's JSON, if it is still at hand."""
        if self.namespace is not None and entry.namespace != self.namespace:
            return None
        cur = entry.type != "DELETED" and self.matches(entry.obj)
        if entry.type == "DELETED":  # the deleted object already carries the deletion's RV
            return (
                WatchEvent("DELETED", entry.resource, entry.obj, shared=True, data=data)
                if self.matches(entry.obj)
                else None
            )
        old = entry.prev is not None and self.matches(entry.prev)
        if cur:
            type_ = "MODIFIED" if old and entry.type != "ADDED" else "ADDED"
            return WatchEvent(type_, entry.resource, entry.obj, shared=True, data=data)
        if old and entry.prev is not None and entry.type != "ADDED":
            gone = clone(entry.prev)
            gone["metadata"]["resourceVersion"] = str(entry.rv)
            return WatchEvent("DELETED", entry.resource, gone)
        return None


def bookmark(info: ResourceInfo, rv: int) -> Obj:
    return {"kind": info.kind, "apiVersion": info.api_version, "metadata": {"resourceVersion": str(rv)}}


class WatchCache:
    def __init__(
        self,
        current_rv: Callable[[], int],
        *,
        log_size: int = 10000,
        log_bytes: int = LOG_BYTES,
        watch_queue_limit: int = 10000,
        watch_queue_bytes: int | None = None,
    ):
        """current_rv: the store's resourceVersion now. log_size, log_bytes: the log keeps at most
        that many events and bytes (older resourceVersions get 410). watch_queue_limit,
        watch_queue_bytes: a watcher that has more events or bytes waiting is terminated (default
        bytes: log_bytes, as a watcher that far behind could not resume from the log either)."""
        self._current_rv = current_rv
        self._log: deque[_Entry] = deque()
        self.log_size = log_size
        self._log_bytes = log_bytes
        self._logged_bytes = 0
        self.floor = 0  # every event with rv > floor is still in the log
        self._watchers: set[_Watcher] = set()
        self._watch_queue_limit = watch_queue_limit
        self._watch_queue_bytes = log_bytes if watch_queue_bytes is None else watch_queue_bytes

    def stats(self) -> dict[str, int]:
        """What the log and the open watches hold: events and the bytes they are charged."""
        return {
            "logEvents": len(self._log),
            "logBytes": self._logged_bytes,
            "watches": len(self._watchers),
            "watchBufferedEvents": sum(len(w.pending) for w in self._watchers),
            "watchBufferedBytes": sum(w.pending_bytes for w in self._watchers),
        }

    def check_not_expired(self, rv: int) -> None:
        if rv < self.floor:
            raise errors.expired(f"too old resource version: {rv} ({self.floor})")

    def record(
        self, type_: str, resource: str, obj: Obj, prev: Obj | None, rv: int, data: bytes, prev_size: int
    ) -> None:
        """Log a write (obj, encoded as `data`, replaces prev, of `prev_size` JSON bytes, at rv)
        and hand it to the watchers of `resource`. The log and the watchers' buffers are charged
        both sizes: the entry keeps the replaced state alive too."""
        size = len(data) + prev_size
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        entry = _Entry(rv, type_, resource, namespace, obj, prev, size)
        self._log.append(entry)
        self._logged_bytes += size
        while len(self._log) > self.log_size or (self._logged_bytes > self._log_bytes and len(self._log) > 1):
            old = self._log.popleft()
            self.floor = old.rv
            self._logged_bytes -= old.size
        for w in list(self._watchers):
            if w.info.key != resource or w.closed:
                continue
            w.pending.append(entry)
            w.pending_bytes += size
            entry.waiting += 1
            if len(w.pending) > self._watch_queue_limit or (
                w.pending_bytes > self._watch_queue_bytes and len(w.pending) > 1
            ):
                log.warning(
                    "terminating a watch that fell behind",
                    extra={"resource": resource, "events": len(w.pending), "bytes": w.pending_bytes},
                )
                self._terminate(w)
            else:
                w.wake.set()
        if entry.waiting:
            entry.data = data

    def changes_after(self, rv: int, resource: str) -> Iterator[tuple[Obj, Obj | None]]:
        """(state, previous state) of each logged change of `resource` after `rv`, newest first."""
        for entry in reversed(self._log):
            if entry.rv <= rv:
                break
            if entry.resource == resource:
                yield entry.obj, entry.prev

    def watch(
        self,
        info: ResourceInfo,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        start: int | None,
        present: Callable[[], Iterable[Obj]],
        bookmark_interval: float | None,
        initial_events_end: bool,
        on_terminate: Callable[[], None] | None,
    ) -> WatchStream:
        """A watch from `start` (None: the `present` objects as ADDED, then live events)."""
        watcher = _Watcher(
            info, namespace if info.namespaced else None, labels, fields, start or 0, on_terminate
        )
        if start is not None and start < self.floor:
            status = errors.expired(f"too old resource version: {start} ({self.floor})").status()
            error = [WatchEvent("ERROR", info.key, status)]
            return WatchStream(self._stream(watcher, error, None, registered=False), lambda: None)
        initial: list[WatchEvent] = []
        if start is None:
            for obj in present():
                if watcher.matches(obj):
                    initial.append(WatchEvent("ADDED", info.key, obj, shared=True))
            watcher.min_rv = self._current_rv()
            if initial_events_end:
                end = bookmark(info, self._current_rv())
                end["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
                initial.append(WatchEvent("BOOKMARK", info.key, end))
        else:
            for entry in self._log:
                if entry.rv > start and entry.resource == info.key:
                    event = watcher.convert(entry, entry.data)
                    if event is not None:
                        initial.append(event)
            watcher.min_rv = max(start, self._current_rv())
        self._watchers.add(watcher)
        return WatchStream(
            self._stream(watcher, initial, bookmark_interval, registered=True), lambda: self._forget(watcher)
        )

    async def _stream(
        self,
        watcher: _Watcher,
        initial: list[WatchEvent],
        bookmark_interval: float | None,
        *,
        registered: bool,
    ) -> AsyncGenerator[WatchEvent, None]:
        try:
            for event in initial:
                yield event
            if not registered:
                return
            while not watcher.closed:
                while watcher.pending:
                    entry = watcher.pending.popleft()
                    data = entry.data
                    self._release(watcher, entry)
                    if entry.rv <= watcher.min_rv:
                        continue
                    live = watcher.convert(entry, data)
                    if live is not None:
                        yield live
                if watcher.closed:
                    break
                watcher.wake.clear()
                try:
                    await asyncio.wait_for(watcher.wake.wait(), bookmark_interval)
                except TimeoutError:
                    rv = self._current_rv()
                    if rv >= watcher.min_rv and not watcher.pending:
                        yield WatchEvent("BOOKMARK", watcher.info.key, bookmark(watcher.info, rv))
        finally:
            self._forget(watcher)

    @staticmethod
    def _release(watcher: _Watcher, entry: _Entry) -> None:
        """entry left watcher's buffer; its shared JSON goes once no buffer holds it."""
        watcher.pending_bytes -= entry.size
        entry.waiting -= 1
        if entry.waiting == 0:
            entry.data = None

    def _forget(self, watcher: _Watcher) -> None:
        """Free everything the cache holds for a watch (its stream then ends)."""
        watcher.closed = True
        while watcher.pending:
            self._release(watcher, watcher.pending.popleft())
        self._watchers.discard(watcher)

    def _terminate(self, watcher: _Watcher) -> None:
        """End a watch from the server's side (cacheWatcher.forget + stopLocked)."""
        self._forget(watcher)
        watcher.wake.set()
        if watcher.on_terminate is not None:
            watcher.on_terminate()

    def close_all(self) -> int:
        """End every open watch stream; returns how many were closed."""
        watchers = [w for w in self._watchers if not w.closed]
        for w in watchers:
            self._terminate(w)
        return len(watchers)
