"""The sandbox's object store: in-memory objects under one global resourceVersion.

What lives here: `Store` (create/get/list/update/delete/watch over plain dicts keyed by resource
key, namespace and name, as the real generic registry `staging/src/k8s.io/apiserver/pkg/registry/
generic/registry/store.go` behaves: no-op writes do not bump the resourceVersion, status
subresources change only status, graceful pod deletion, finalizers, uid/resourceVersion
preconditions, namespace termination) and `ListPage`. The rules of each write live in
registry_rules.py, the event log and the watches in watch_cache.py, the file in persistence.py.
Every method returns deep copies (a watch event's `object` is copied on first access).
Must not: know about HTTP, defaulting or schema validation (the handlers do that before calling in).

Additions to the contract: `list_page(...)` (a list at an older resourceVersion, rebuilt from the
event log, and `limit`/`after` pagination), `watch(..., bookmark_interval=None, on_terminate=None)`,
`close_all_watches()`, `resource_version` (the current global RV), `stats()` (the log's and the
watchers' retained events and bytes), `flush()` and `close()` for persistence.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vk_common.logging import get_logger
from vk_sandbox.api import errors
from vk_sandbox.api.resources import ResourceInfo, by_key
from vk_sandbox.storage import namespace_deletion
from vk_sandbox.storage import registry_rules as rules
from vk_sandbox.storage.objects import Obj, clone, encode, metadata, now_rfc3339
from vk_sandbox.storage.persistence import StateFile
from vk_sandbox.storage.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from vk_sandbox.storage.watch_cache import LOG_BYTES, WatchCache, WatchStream

log = get_logger("sandbox.store")


def _key_text(key: tuple[str, str]) -> str:
    """A storage key as the real one sorts: etcd orders `/registry/<resource>/<namespace>/<name>`."""
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


@dataclass
class ListPage:
    items: list[Obj]
    resource_version: str
    last_key: str  # the key of the last item when more follow, else ""
    remaining: int  # how many more items match


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
        # Each stored object's compact JSON, made once when it was written (the snapshot's parts).
        self._encoded: dict[str, dict[tuple[str, str], bytes]] = {}
        self._deleting: set[str] = set()  # namespaces a deleter pass is running for
        # etcd's history as the apiserver's compactor leaves it: each compaction drops what is
        # older than the revision the previous one saw (storage/etcd3/compact.go)
        self._compacted_rv = 0
        self._compaction_mark = 0
        self._rv = 0
        self.watch_cache = WatchCache(
            lambda: self._rv,
            log_size=log_size,
            log_bytes=log_bytes,
            watch_queue_limit=watch_queue_limit,
            watch_queue_bytes=watch_queue_bytes,
        )
        self._state = StateFile(state_dir, self._snapshot) if state_dir is not None else None
        if self._state is not None:
            self._load(self._state)

    # ------------------------------------------------------------------ helpers

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    def stats(self) -> dict[str, int]:
        """What the log and the open watches hold: events and the bytes they are charged."""
        return self.watch_cache.stats()

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

    def _write(self, type_: str, info: ResourceInfo, obj: Obj) -> Obj:
        """Store (or remove) obj, a fresh dict, at a new resourceVersion and log the event.

        Stored dicts are never mutated afterwards: the log keeps them as the previous states."""
        rv = self._next_rv()
        metadata(obj)["resourceVersion"] = str(rv)
        meta = obj["metadata"]
        key = self._key(info, meta.get("namespace"), meta["name"])
        prev = self._bucket(info.key).get(key)
        data = encode(obj)
        encoded = self._encoded.setdefault(info.key, {})
        prev_size = len(encoded.get(key, b""))
        if type_ == "DELETED":
            self._bucket(info.key).pop(key, None)
            encoded.pop(key, None)
        else:
            self._bucket(info.key)[key] = obj
            encoded[key] = data
        self.watch_cache.record(type_, info.key, obj, prev, rv, data, prev_size)
        if self._state is not None:
            self._state.save_soon()
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
        meta = metadata(new)
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
                meta["name"] = rules.generated_name(prefix)
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
            refusal = errors.forbidden(
                info.name,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
                info.group,
            )
            # the NamespaceLifecycle admission's cause (apiserver pkg/admission/plugin/namespace/lifecycle)
            (refusal.details or {}).setdefault("causes", []).append(
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            )
            raise refusal

    def stored_bytes(self, resource: str, namespace: str | None, name: str) -> int:
        """The size of the stored object's JSON (0: none)."""
        info = self.info(resource)
        return len(self._encoded.get(info.key, {}).get(self._key(info, namespace, name), b""))

    def stored(self, resource: str) -> builtins.list[Obj]:
        """Every object of `resource` now, as stored: no copies, for the sandbox's own
        controllers, which read them and never change them (a write stores a new dict and the
        watch log keeps the old ones)."""
        return builtins.list(self._bucket(self.info(resource).key).values())

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
        if rv < self._compacted_rv:  # etcd: ErrCompacted (storage/etcd3/errors.go)
            raise errors.expired("The resourceVersion for the provided list is too old.")
        self.watch_cache.check_not_expired(rv)
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

    def compact(self) -> None:
        """One tick of the apiserver's etcd compactor (every 5 minutes by default,
        --etcd-compaction-interval): lists at a resourceVersion older than what the previous tick
        saw are 410 Expired from now on, as etcd's history before it is gone."""
        self._compacted_rv, self._compaction_mark = self._compaction_mark, self._rv

    def _state_at(self, info: ResourceInfo, rv: int) -> dict[tuple[str, str], Obj]:
        """The objects of one resource as they were at `rv`: the present, with the logged changes
        after `rv` undone, newest first."""
        state = dict(self._bucket(info.key))
        for obj, prev in self.watch_cache.changes_after(rv, info.key):
            meta = obj.get("metadata") or {}
            key = self._key(info, meta.get("namespace"), meta.get("name") or "")
            if prev is None:
                state.pop(key, None)
            else:
                state[key] = prev
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
        rules.check_update_preconditions(info, old, obj)
        new = rules.merge_update(info, old, clone(obj), subresource)
        if rules.without_rv(new) == rules.without_rv(old):
            return clone(old)
        if dry_run:
            return new
        if rules.delete_on_update(new, old):
            return self._write("DELETED", info, new)
        return self._write("MODIFIED", info, new)

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
            rules.check_preconditions(info, obj, preconditions or {})
            new = clone(obj)
            if info.key == "namespaces":
                return new
            if grace_period_seconds is not None and grace_period_seconds < 0:
                grace_period_seconds = 1
            graceful, pending, _ = rules.before_delete(info, new, grace_period_seconds)
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
        rules.check_preconditions(info, old, preconditions or {})
        if info.key == "namespaces":
            return self._delete_namespace(old)
        if grace_period_seconds is not None and grace_period_seconds < 0:
            grace_period_seconds = 1
        new = clone(old)
        meta = new["metadata"]
        graceful, pending, period = rules.before_delete(info, new, grace_period_seconds)
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

    def _delete_namespace(self, ns: Obj) -> Obj:
        """Namespace deletion: Terminating, then the namespace controller's passes."""
        info = self.info("namespaces")
        name = ns["metadata"]["name"]
        if name in rules.IMMORTAL_NAMESPACES:
            raise errors.forbidden("namespaces", name, "this namespace may not be deleted")
        result = clone(ns)
        if not ns["metadata"].get("deletionTimestamp"):
            new = clone(ns)
            new["metadata"]["deletionTimestamp"] = now_rfc3339()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
            result = self._write("MODIFIED", info, new)
        self._maybe_finish_namespace(name)
        return clone(self._bucket("namespaces").get(("", name)) or result)

    def _maybe_finish_namespace(self, namespace: str) -> None:
        """A pass of the namespace controller's deleter over a terminating namespace, again after
        each deletion in it (pkg/controller/namespace/deletion, deleteAllContent): its pods first,
        the rest of its content once no pod is left, its status conditions (namespace_deletion.py),
        and the namespace removed once empty and without finalizers."""
        ns = self._bucket("namespaces").get(("", namespace))
        if ns is None or not ns["metadata"].get("deletionTimestamp") or namespace in self._deleting:
            return
        self._deleting.add(namespace)
        try:
            left = self._delete_content(namespace)
        finally:
            self._deleting.discard(namespace)
        ns = self._bucket("namespaces").get(("", namespace))
        if ns is None:
            return
        if left.empty() and not ns["metadata"].get("finalizers"):
            self._write("DELETED", self.info("namespaces"), clone(ns))
            return
        status = ns.get("status") or {}
        updated = namespace_deletion.conditions(left, status.get("conditions") or [])
        if updated != status.get("conditions"):
            new = clone(ns)
            new.setdefault("status", {})["conditions"] = updated
            self._write("MODIFIED", self.info("namespaces"), new)

    def _delete_content(self, namespace: str) -> namespace_deletion.Leftovers:
        pods = self.info("pods")
        infos = [pods] + [
            info
            for key in list(self._objects)
            if (info := by_key(key)) is not None and info.namespaced and info.key != "pods"
        ]
        left = namespace_deletion.Leftovers(namespace)
        for info in infos:
            if info is not pods and left.by_resource.get("pods"):
                break  # pods first: the rest waits until none is left
            for item in list(self._matching(info, namespace)):
                if not item["metadata"].get("deletionTimestamp"):
                    with contextlib.suppress(errors.ApiError):
                        self._delete(info, namespace, item["metadata"]["name"], None, None)
            left.by_resource[info.key] = list(self._matching(info, namespace))
        return left

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
        return self.watch_cache.watch(
            info,
            namespace,
            labels,
            fields,
            start=start,
            present=lambda: self._matching(info, namespace),
            bookmark_interval=bookmark_interval,
            initial_events_end=initial_events_end,
            on_terminate=on_terminate,
        )

    def close_all_watches(self) -> int:
        """End every open watch stream (fault injection); returns how many were closed."""
        return self.watch_cache.close_all()

    # ------------------------------------------------------------------ persistence

    def _snapshot(self) -> bytes:
        """The JSON of every object and the resourceVersion, joined from each object's encoding
        made when it was written: a save costs no encoding of objects that did not change (it
        was a quarter of the sandbox's CPU in a burst of pods)."""
        buckets = [
            json.dumps(key).encode() + b":[" + b",".join(self._encoded[key][k] for k in bucket) + b"]"
            for key, bucket in self._objects.items()
            if bucket
        ]
        return b'{"resourceVersion":%d,"objects":{%s}}' % (self._rv, b",".join(buckets))

    async def flush(self) -> None:
        """Write the objects to state_dir now (no-op without a state_dir)."""
        if self._state is not None:
            await self._state.flush()

    async def close(self) -> None:
        self.close_all_watches()
        if self._state is not None:
            await self._state.close()

    def _load(self, state: StateFile) -> None:
        data = state.load()
        if data is None:
            return
        self._rv = int(data.get("resourceVersion", 0))
        self.watch_cache.floor = self._rv
        for key, items in (data.get("objects") or {}).items():
            info = by_key(key)
            if info is None:
                continue
            for obj in items:
                meta = obj["metadata"]
                at = self._key(info, meta.get("namespace"), meta["name"])
                self._bucket(key)[at] = obj
                self._encoded.setdefault(key, {})[at] = encode(obj)
        log.info(
            "loaded objects",
            extra={
                "count": sum(len(b) for b in self._objects.values()),
                "resourceVersion": self._rv,
                "path": str(state.path),
            },
        )
