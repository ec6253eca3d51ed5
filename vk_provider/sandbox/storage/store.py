"""The sandbox's object store: in-memory objects, one global resourceVersion, a watchable event log.

What lives here: `Store` (create/get/list/update/delete/watch over plain dicts keyed by resource
key, namespace and name, as the real generic registry `staging/src/k8s.io/apiserver/pkg/registry/
generic/registry/store.go` behaves: no-op writes do not bump the resourceVersion, status
subresources change only status, graceful pod deletion, finalizers, uid/resourceVersion
preconditions, namespace termination), `WatchEvent`, the bounded event log that serves
`watch?resourceVersion=N` (410 Expired as an ERROR event when N is older than the log), selector
transitions, bookmarks, and optional persistence of the objects to `state_dir/store.json`.
Every method returns deep copies (a watch event's `object` is copied on first access).

Memory: the event log is bounded by count (`log_size`) and by bytes (`log_bytes`, each event
charged the compact JSON size of the states it holds, measured once at write), as the real
watch cache is bounded (`staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go`); a
live event is serialized once and its JSON shared by every watcher (the cacher's
`cachingObject`, `caching_object.go`); each watcher's buffer holds at most `watch_queue_limit`
events and `watch_queue_bytes` bytes, and a watcher whose buffer overflows is terminated
(`cacheWatcher.add` in `cacher/cache_watcher.go`): its buffer is dropped, its stream ends and
its `on_terminate` callback runs, so the client re-lists and re-watches. A watch's state is
freed the moment it ends. Must not: know about HTTP, defaulting or schema validation (the
handlers do that before calling in).

Additions to the contract: `list_page(...)` (a list at an older resourceVersion, rebuilt from the
event log, and `limit`/`after` pagination), `watch(..., bookmark_interval=None, on_terminate=None)`,
`close_all_watches()`, `resource_version` (the current global RV), `stats()` (the log's and the
watchers' retained events and bytes), `flush()` and `close()` for persistence.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import secrets
import tempfile
import threading
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from vk_provider.logging import get_logger
from vk_provider.sandbox.api import errors
from vk_provider.sandbox.api.resources import ResourceInfo, by_key
from vk_provider.sandbox.storage.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)

log = get_logger("sandbox.store")

OPTIMISTIC_LOCK_MSG = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
GENERATED_SUFFIX_LENGTH = 5
# k8s.io/apiserver pkg/storage/names/generate.go: a base longer than 63 - 5 characters is cut
MAX_GENERATED_PREFIX = 63 - GENERATED_SUFFIX_LENGTH
_STATE_FILE = "store.json"
LOG_BYTES = 64 * 1024 * 1024
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")

Obj = dict[str, Any]


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def clone(obj: Obj) -> Obj:
    """Deep copy of a JSON-shaped object (faster than copy.deepcopy for plain dicts and lists)."""
    return {k: _copy(v) for k, v in obj.items()}


def encode(obj: Obj) -> bytes:
    """The compact JSON of obj, as the watch and the size accounting serialize it."""
    return json.dumps(obj, separators=(",", ":")).encode()


def now_rfc3339(delta_seconds: float = 0) -> str:
    t = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=delta_seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _key_text(key: tuple[str, str]) -> str:
    """A storage key as the real one sorts: etcd orders `/registry/<resource>/<namespace>/<name>`."""
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


@dataclass
class ListPage:
    items: list[Obj]
    resource_version: str
    last_key: str  # the key of the last item when more follow, else ""
    remaining: int  # how many more items match


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

    def encoded(self) -> bytes:
        """The object's compact JSON, without copying the object."""
        return self._data if self._data is not None else encode(self._obj)

    def __repr__(self) -> str:
        return f"WatchEvent({self.type!r}, {self.resource!r}, {self._obj!r})"


class WatchStream:
    """The events of one watch (an async iterator). `aclose()` ends it and frees its state in the
    store, also when it was never iterated (a generator that never started runs no `finally`)."""

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
    resource: str
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


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _without_rv(obj: Obj) -> Obj:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("resourceVersion", None)
    out["metadata"] = meta
    return out


class Store:
    def __init__(
        self,
        *,
        state_dir: Path | None = None,
        log_size: int = 10000,
        log_bytes: int = LOG_BYTES,
        watch_queue_limit: int = 10000,
        watch_queue_bytes: int | None = None,
    ):
        """log_size, log_bytes: the event log keeps at most that many events and bytes (older
        resourceVersions get 410). watch_queue_limit, watch_queue_bytes: a watcher that has more
        events or bytes waiting is terminated (default bytes: log_bytes, as a watcher that far
        behind could not resume from the log either)."""
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self._rv = 0
        self._log: deque[_Entry] = deque()
        self._log_size = log_size
        self._log_bytes = log_bytes
        self._logged_bytes = 0
        self._sizes: dict[tuple[str, tuple[str, str]], int] = {}  # JSON size of each stored object
        self._floor = 0  # every event with rv > floor is still in the log
        self._watchers: set[_Watcher] = set()
        self._watch_queue_limit = watch_queue_limit
        self._watch_queue_bytes = log_bytes if watch_queue_bytes is None else watch_queue_bytes
        self._state_path = state_dir / _STATE_FILE if state_dir is not None else None
        self._save_task: asyncio.Task[None] | None = None
        # Snapshots are numbered; the writer thread keeps only the newest. A save cancelled while
        # its thread writes (close() cancels the pending save) must neither race close()'s own
        # write on the same file nor land after it with older state.
        self._write_lock = threading.Lock()
        self._snapshots = 0
        self._written = 0
        if self._state_path is not None and self._state_path.exists():
            self._load(self._state_path)

    # ------------------------------------------------------------------ helpers

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    def stats(self) -> dict[str, int]:
        """What the log and the open watches hold: events and the bytes they are charged."""
        return {
            "logEvents": len(self._log),
            "logBytes": self._logged_bytes,
            "watches": len(self._watchers),
            "watchBufferedEvents": sum(len(w.pending) for w in self._watchers),
            "watchBufferedBytes": sum(w.pending_bytes for w in self._watchers),
        }

    @staticmethod
    def info(resource: str) -> ResourceInfo:
        info = by_key(resource)
        if info is None:
            raise errors.ApiError(
                404, "NotFound", f"the server could not find the requested resource ({resource})"
            )
        return info

    def _bucket(self, resource: str) -> dict[tuple[str, str], Obj]:
        return self._objects.setdefault(resource, {})

    @staticmethod
    def _key(info: ResourceInfo, namespace: str | None, name: str) -> tuple[str, str]:
        return ((namespace or "") if info.namespaced else "", name)

    def _require(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj:
        obj = self._bucket(info.key).get(self._key(info, namespace, name))
        if obj is None:
            raise errors.not_found(info.name, name, info.group)
        return obj

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _record(
        self, type_: str, info: ResourceInfo, key: tuple[str, str], obj: Obj, prev: Obj | None, rv: int
    ) -> None:
        data = encode(obj)
        size = len(data)
        if prev is not None:  # the entry keeps the replaced state alive too
            size += self._sizes.pop((info.key, key), 0) or len(encode(prev))
        if type_ != "DELETED":
            self._sizes[(info.key, key)] = len(data)
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        entry = _Entry(rv, type_, info.key, namespace, obj, prev, size)
        self._log.append(entry)
        self._logged_bytes += size
        while len(self._log) > self._log_size or (
            self._logged_bytes > self._log_bytes and len(self._log) > 1
        ):
            old = self._log.popleft()
            self._floor = old.rv
            self._logged_bytes -= old.size
        for w in list(self._watchers):
            if w.resource != info.key or w.closed:
                continue
            w.pending.append(entry)
            w.pending_bytes += size
            entry.waiting += 1
            if len(w.pending) > self._watch_queue_limit or (
                w.pending_bytes > self._watch_queue_bytes and len(w.pending) > 1
            ):
                log.warning(
                    "terminating a watch on %s that fell %d events (%d bytes) behind",
                    info.key,
                    len(w.pending),
                    w.pending_bytes,
                )
                self._terminate(w)
            else:
                w.wake.set()
        if entry.waiting:
            entry.data = data
        self._schedule_save()

    def _write(self, type_: str, info: ResourceInfo, obj: Obj) -> Obj:
        """Store (or remove) obj, a fresh dict, at a new resourceVersion and log the event.

        Stored dicts are never mutated afterwards: the log keeps them as the previous states."""
        rv = self._next_rv()
        _meta(obj)["resourceVersion"] = str(rv)
        meta = obj["metadata"]
        key = self._key(info, meta.get("namespace"), meta["name"])
        prev = self._bucket(info.key).get(key)
        if type_ == "DELETED":
            self._bucket(info.key).pop(key, None)
        else:
            self._bucket(info.key)[key] = obj
        self._record(type_, info, key, obj, prev, rv)
        if type_ == "DELETED" and info.namespaced:
            self._maybe_finish_namespace(meta.get("namespace", ""))
        return clone(obj)

    def _selectors(
        self, info: ResourceInfo, label_selector: str, field_selector: str
    ) -> tuple[LabelSelector, FieldSelector]:
        try:
            return parse_label_selector(label_selector), parse_field_selector(field_selector, info.name)
        except SelectorError as e:
            raise errors.bad_request(e.message) from None

    # ------------------------------------------------------------------ CRUD

    async def create(self, resource: str, obj: Obj, *, dry_run: bool = False) -> Obj:
        """dry_run: check and fill in everything, store nothing (the result has no resourceVersion)."""
        info = self.info(resource)
        new = clone(obj)
        meta = _meta(new)
        namespace = meta.get("namespace") or ""
        if info.namespaced:
            if not namespace:
                raise errors.bad_request("the server could not find the requested resource")
            self._check_namespace_open(info, namespace, meta.get("name") or "")
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise errors.invalid(
                    info.kind,
                    "",
                    [
                        {
                            "reason": "FieldValueRequired",
                            "message": "name or generateName is required",
                            "field": "metadata.name",
                        }
                    ],
                    info.group,
                )
            bucket = self._bucket(info.key)
            for _ in range(8):
                suffix = "".join(secrets.choice(_NAME_CHARS) for _ in range(GENERATED_SUFFIX_LENGTH))
                meta["name"] = prefix[:MAX_GENERATED_PREFIX] + suffix
                if self._key(info, namespace, meta["name"]) not in bucket:
                    break
        if self._key(info, namespace, meta["name"]) in self._bucket(info.key):
            raise errors.already_exists(info.name, meta["name"], info.group)
        new["apiVersion"] = info.api_version
        new["kind"] = info.kind
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        for system_field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(system_field, None)
        if dry_run:
            return new
        return self._write("ADDED", info, new)

    def _check_namespace_open(self, info: ResourceInfo, namespace: str, name: str) -> None:
        ns = self._bucket("namespaces").get(("", namespace))
        if ns is None:
            raise errors.not_found("namespaces", namespace)
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise errors.forbidden(
                info.name,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
                info.group,
            )

    async def get(self, resource: str, namespace: str | None, name: str) -> Obj:
        info = self.info(resource)
        return clone(self._require(info, namespace, name))

    async def list(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
    ) -> tuple[builtins.list[Obj], str]:
        """Every matching object now, and the store's resourceVersion (`list_page` unpaged)."""
        page = await self.list_page(
            resource, namespace, label_selector=label_selector, field_selector=field_selector
        )
        return page.items, page.resource_version

    async def list_page(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        at_rv: int | None = None,
        limit: int = 0,
        after: str = "",
    ) -> ListPage:
        """A list as the real storage serves it: at `at_rv` (None: now; older states are rebuilt
        from the event log, 410 Expired once they are out of it), at most `limit` items (0: all)
        whose storage keys (`<namespace>/<name>`, in the real key order) sort after `after`."""
        info = self.info(resource)
        labels, fields = self._selectors(info, label_selector, field_selector)
        rv = self._rv if at_rv is None else at_rv
        if rv > self._rv:
            raise errors.ApiError(500, "", f"resourceVersion {rv} is newer than the store's {self._rv}")
        if rv < self._floor:
            raise errors.expired(f"too old resource version: {rv} ({self._floor})")
        state = self._state_at(info, rv)
        keys = sorted(
            (k for k in state if namespace is None or not info.namespaced or k[0] == namespace), key=_key_text
        )
        page: builtins.list[Obj] = []
        remaining = 0
        last = ""
        for key in keys:
            if _key_text(key) <= after:
                continue
            obj = state[key]
            if not (labels.matches((obj.get("metadata") or {}).get("labels")) and fields.matches(obj)):
                continue
            if limit and len(page) == limit:
                remaining += 1
                continue
            page.append(clone(obj))
            last = _key_text(key)
        return ListPage(page, str(rv), last if remaining else "", remaining)

    def _state_at(self, info: ResourceInfo, rv: int) -> dict[tuple[str, str], Obj]:
        """The objects of one resource as they were at `rv`: the present, with the logged changes
        after `rv` undone, newest first."""
        state = dict(self._bucket(info.key))
        for entry in reversed(self._log):
            if entry.rv <= rv:
                break
            if entry.resource != info.key:
                continue
            meta = entry.obj.get("metadata") or {}
            key = self._key(info, meta.get("namespace"), meta.get("name") or "")
            if entry.prev is None:
                state.pop(key, None)
            else:
                state[key] = entry.prev
        return state

    def _matching(self, info: ResourceInfo, namespace: str | None) -> Iterable[Obj]:
        bucket = self._bucket(info.key)
        for key in sorted(bucket, key=_key_text):
            if namespace is None or not info.namespaced or key[0] == namespace:
                yield bucket[key]

    async def update(
        self, resource: str, obj: Obj, *, subresource: str | None = None, dry_run: bool = False
    ) -> Obj:
        """dry_run: check and compute the result, store nothing."""
        info = self.info(resource)
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        old = self._bucket(info.key).get(self._key(info, meta.get("namespace"), name))
        if old is None:
            if info.allow_create_on_update and subresource is None:
                return await self.create(resource, obj, dry_run=dry_run)
            raise errors.not_found(info.name, name, info.group)
        old_meta = old["metadata"]
        rv = meta.get("resourceVersion")
        if rv and rv != old_meta["resourceVersion"]:
            raise errors.conflict(info.name, name, OPTIMISTIC_LOCK_MSG, info.group)
        uid = meta.get("uid")
        if uid and uid != old_meta["uid"]:
            key = f"/registry/{info.key}/{old_meta.get('namespace', '')}/{name}".replace("//", "/")
            raise errors.conflict(
                info.name,
                name,
                f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: "
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old_meta['uid']}",
                info.group,
            )
        new = self._merge_update(info, old, clone(obj), subresource)
        if _without_rv(new) == _without_rv(old):
            return clone(old)
        if dry_run:
            return new
        if self._should_delete_during_update(new, old):
            return self._write("DELETED", info, new)
        return self._write("MODIFIED", info, new)

    @staticmethod
    def _merge_update(info: ResourceInfo, old: Obj, new: Obj, subresource: str | None) -> Obj:
        """The object to store: system metadata from old, and only what the (sub)resource may change.

        "binding" is the pods/binding write: spec and status together (one event, as the real one).
        """
        if subresource == "approval":
            result = clone(old)
            result.setdefault("status", {})["conditions"] = (new.get("status") or {}).get("conditions", [])
            if not result["status"]["conditions"]:
                del result["status"]["conditions"]
            return result
        if subresource == "finalize":
            result = clone(old)
            finalizers = (new.get("spec") or {}).get("finalizers")
            result.setdefault("spec", {})["finalizers"] = finalizers or []
            return result
        if subresource == "binding":
            return Store._merge_update(info, old, new, "status") | {"spec": new.get("spec") or {}}
        if subresource == "status":
            result = {k: _copy(v) for k, v in old.items() if k not in ("status", "metadata")}
            result["metadata"] = new.get("metadata") or {}
            if "status" in new:
                result["status"] = new["status"]
            new = result
        elif info.has_status:
            new.pop("status", None)
            if "status" in old:
                new["status"] = _copy(old["status"])
        meta = _meta(new)
        old_meta = old["metadata"]
        for system_field in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if system_field in old_meta:
                meta[system_field] = old_meta[system_field]
            else:
                meta.pop(system_field, None)
        meta["name"] = old_meta["name"]
        if "namespace" in old_meta:
            meta["namespace"] = old_meta["namespace"]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        new["apiVersion"] = info.api_version
        new["kind"] = info.kind
        spec_writer = subresource is None or subresource == "resize"  # pods/resize changes the spec
        if spec_writer and "generation" in old_meta and new.get("spec") != old.get("spec"):
            meta["generation"] = old_meta["generation"] + 1
        return new

    @staticmethod
    def _should_delete_during_update(new: Obj, old: Obj) -> bool:
        """Removing the last finalizer of an object whose deletion is due deletes it (store.go)."""
        new_meta, old_meta = new["metadata"], old["metadata"]
        if new_meta.get("finalizers") or not old_meta.get("finalizers"):
            return False
        return bool(old_meta.get("deletionTimestamp")) and old_meta.get("deletionGracePeriodSeconds") == 0

    async def delete(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """dry_run: check existence and preconditions, change nothing, return the object as the
        deletion would leave it (a graceful or finalizer-held deletion's deletionTimestamp)."""
        info = self.info(resource)
        if dry_run:
            obj = self._require(info, namespace, name)
            self._check_preconditions(info, obj, preconditions or {})
            new = clone(obj)
            if info.key == "namespaces":
                return new
            if grace_period_seconds is not None and grace_period_seconds < 0:
                grace_period_seconds = 1
            graceful, pending, _ = self._before_delete(info, new, grace_period_seconds)
            if pending:
                return clone(obj)
            if (
                not graceful
                and new["metadata"].get("finalizers")
                and not new["metadata"].get("deletionTimestamp")
            ):
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
            return new
        return self._delete(info, namespace, name, grace_period_seconds, preconditions)

    def _delete(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        grace_period_seconds: int | None,
        preconditions: dict[str, Any] | None,
    ) -> Obj:
        old = self._require(info, namespace, name)
        self._check_preconditions(info, old, preconditions or {})
        if info.key == "namespaces":
            return self._delete_namespace(old)
        if grace_period_seconds is not None and grace_period_seconds < 0:
            grace_period_seconds = 1
        new = clone(old)
        meta = new["metadata"]
        graceful, pending, period = self._before_delete(info, new, grace_period_seconds)
        if pending:
            return clone(old)
        if meta.get("finalizers"):
            if not graceful and not meta.get("deletionTimestamp"):
                meta["deletionTimestamp"] = now_rfc3339()
                meta["deletionGracePeriodSeconds"] = 0
            if new == old:
                return clone(old)
            return self._write("MODIFIED", info, new)
        if graceful:
            if new != old:
                written = self._write("MODIFIED", info, new)
                new = clone(self._require(info, namespace, name))
                if period > 0:
                    return written
            elif period > 0:
                return clone(old)
        return self._write("DELETED", info, new)

    @staticmethod
    def _before_delete(info: ResourceInfo, obj: Obj, grace: int | None) -> tuple[bool, bool, int]:
        """rest.BeforeDelete + podStrategy.CheckGracefulDelete: (graceful, pending, period); mutates obj."""
        if not info.graceful_delete:
            return False, False, 0
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            current = meta.get("deletionGracePeriodSeconds")
            if not current:
                return False, False, 0
            if grace is None or grace >= current:
                return False, True, current
            deadline = parse_time(meta["deletionTimestamp"]) - timedelta(seconds=current - grace)
            meta["deletionTimestamp"] = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["deletionGracePeriodSeconds"] = grace
            return True, False, grace
        spec = obj.get("spec") or {}
        period = grace if grace is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            period = 0
        if period < 0:
            period = 1
        meta["deletionTimestamp"] = now_rfc3339(period)
        meta["deletionGracePeriodSeconds"] = period
        if meta.get("generation", 0) > 0:
            meta["generation"] += 1
        return True, False, period

    @staticmethod
    def _check_preconditions(info: ResourceInfo, obj: Obj, preconditions: dict[str, Any]) -> None:
        meta = obj["metadata"]
        uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
        if uid and uid != meta["uid"]:
            raise errors.conflict(
                info.kind,
                meta["name"],
                f"the UID in the precondition ({uid}) does not match the UID in record ({meta['uid']}). "
                "The object might have been deleted and then recreated",
                info.group,
            )
        if rv and rv != meta["resourceVersion"]:
            raise errors.conflict(
                info.kind,
                meta["name"],
                f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in "
                f"record ({meta['resourceVersion']}). The object might have been modified",
                info.group,
            )

    def _delete_namespace(self, ns: Obj) -> Obj:
        """Namespace deletion: Terminating, its content deleted, removed once empty (namespace controller)."""
        info = self.info("namespaces")
        name = ns["metadata"]["name"]
        if name in IMMORTAL_NAMESPACES:
            raise errors.forbidden("namespaces", name, "this namespace may not be deleted")
        result = clone(ns)
        if not ns["metadata"].get("deletionTimestamp"):
            new = clone(ns)
            new["metadata"]["deletionTimestamp"] = now_rfc3339()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
            result = self._write("MODIFIED", info, new)
        for key in list(self._objects):
            item_info = by_key(key)
            if item_info is None or not item_info.namespaced:
                continue
            for item in list(self._matching(item_info, name)):
                with contextlib.suppress(errors.ApiError):
                    self._delete(item_info, name, item["metadata"]["name"], None, None)
        self._maybe_finish_namespace(name)
        return result

    def _maybe_finish_namespace(self, namespace: str) -> None:
        ns = self._bucket("namespaces").get(("", namespace))
        if ns is None or not ns["metadata"].get("deletionTimestamp") or ns["metadata"].get("finalizers"):
            return
        for key, bucket in self._objects.items():
            item_info = by_key(key)
            if item_info is not None and item_info.namespaced and any(k[0] == namespace for k in bucket):
                return
        self._write("DELETED", self.info("namespaces"), clone(ns))

    # ------------------------------------------------------------------ watch

    def watch(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        bookmark_interval: float | None = None,
        initial_events_end: bool = False,
        on_terminate: Callable[[], None] | None = None,
    ) -> WatchStream:
        """Subscribe now; the iterator yields the initial state (or the missed events), then live ones.

        bookmark_interval: send a BOOKMARK after that many idle seconds. initial_events_end: after
        the initial state, send the `k8s.io/initial-events-end` BOOKMARK of streaming lists.
        on_terminate: called when the store ends the watch (its buffer overflowed, or
        `close_all_watches`); the iterator then ends without the buffered events.
        Raises ApiError(400) for a bad selector, (500) for a bad resourceVersion, before anything is yielded.
        """
        info = self.info(resource)
        labels, fields = self._selectors(info, label_selector, field_selector)
        start: int | None = None
        if resource_version not in (None, "", "0"):
            start = errors.parse_resource_version(str(resource_version))
        watcher = _Watcher(
            info.key, namespace if info.namespaced else None, labels, fields, start or 0, on_terminate
        )
        if start is not None and start < self._floor:
            status = errors.expired(f"too old resource version: {start} ({self._floor})").status()
            error = [WatchEvent("ERROR", info.key, status)]
            return WatchStream(self._stream(watcher, error, None, registered=False), lambda: None)
        initial: builtins.list[WatchEvent] = []
        if start is None:
            for obj in self._matching(info, namespace):
                if watcher.matches(obj):
                    initial.append(WatchEvent("ADDED", info.key, obj, shared=True))
            watcher.min_rv = self._rv
            if initial_events_end:
                end = self._bookmark(info)
                end["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
                initial.append(WatchEvent("BOOKMARK", info.key, end))
        else:
            for entry in self._log:
                if entry.rv > start and entry.resource == info.key:
                    event = watcher.convert(entry, entry.data)
                    if event is not None:
                        initial.append(event)
            watcher.min_rv = max(start, self._rv)
        self._watchers.add(watcher)
        return WatchStream(
            self._stream(watcher, initial, bookmark_interval, registered=True), lambda: self._forget(watcher)
        )

    async def _stream(
        self,
        watcher: _Watcher,
        initial: builtins.list[WatchEvent],
        bookmark_interval: float | None,
        *,
        registered: bool,
    ) -> AsyncGenerator[WatchEvent, None]:
        info = self.info(watcher.resource)
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
                    if self._rv >= watcher.min_rv and not watcher.pending:
                        yield WatchEvent("BOOKMARK", info.key, self._bookmark(info))
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
        """Free everything the store holds for a watch (its stream then ends)."""
        watcher.closed = True
        while watcher.pending:
            self._release(watcher, watcher.pending.popleft())
        self._watchers.discard(watcher)

    def _terminate(self, watcher: _Watcher) -> None:
        """End a watch from the store's side (cacheWatcher.forget + stopLocked)."""
        self._forget(watcher)
        watcher.wake.set()
        if watcher.on_terminate is not None:
            watcher.on_terminate()

    def _bookmark(self, info: ResourceInfo) -> Obj:
        return {
            "kind": info.kind,
            "apiVersion": info.api_version,
            "metadata": {"resourceVersion": str(self._rv)},
        }

    def close_all_watches(self) -> int:
        """End every open watch stream (fault injection); returns how many were closed."""
        watchers = [w for w in self._watchers if not w.closed]
        for w in watchers:
            self._terminate(w)
        return len(watchers)

    # ------------------------------------------------------------------ persistence

    def _schedule_save(self) -> None:
        if self._state_path is None or (self._save_task is not None and not self._save_task.done()):
            return
        self._save_task = asyncio.get_running_loop().create_task(self._save_soon())

    async def _save_soon(self) -> None:
        await asyncio.sleep(0.2)
        await self.flush()

    def _snapshot(self) -> str:
        objects = {key: list(bucket.values()) for key, bucket in self._objects.items() if bucket}
        return json.dumps({"resourceVersion": self._rv, "objects": objects}, separators=(",", ":"))

    async def flush(self) -> None:
        """Write the objects to state_dir now (no-op without a state_dir)."""
        if self._state_path is None:
            return
        self._snapshots += 1
        await asyncio.to_thread(self._write_state, self._state_path, self._snapshots, self._snapshot())

    def _write_state(self, path: Path, number: int, data: str) -> None:
        with self._write_lock:
            if number <= self._written:
                return  # a newer snapshot is already on disk
            _atomic_write(path, data)
            self._written = number

    async def close(self) -> None:
        self.close_all_watches()
        if self._save_task is not None and not self._save_task.done():
            self._save_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._save_task
        await self.flush()

    def _load(self, path: Path) -> None:
        data = json.loads(path.read_text())
        self._rv = int(data.get("resourceVersion", 0))
        self._floor = self._rv
        for key, items in (data.get("objects") or {}).items():
            info = by_key(key)
            if info is None:
                continue
            for obj in items:
                meta = obj["metadata"]
                self._bucket(key)[self._key(info, meta.get("namespace"), meta["name"])] = obj
        log.info(
            "loaded %d objects at resourceVersion %d from %s",
            sum(len(b) for b in self._objects.values()),
            self._rv,
            path,
        )


def _atomic_write(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600 (it holds secrets, like etcd's data directory) under a name
    # of its own, so the secrets are never readable by others, not even for a moment.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
