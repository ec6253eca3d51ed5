"""List+watch of one collection, like client-go's Reflector: the only robust way to follow the API.

What lives here: `Reflector`, which lists a path (with label/field selectors), hands every
object to an async handler, signals "synced", then watches from the list's resourceVersion,
resuming from the last one seen (bookmarks included) whenever the stream ends; relists on
410 Expired (the HTTP answer and the ERROR event alike) and turns the difference between
what it knew and the new list into ADDED / MODIFIED / DELETED calls, so no change is lost;
backs off with jitter on errors, and before each relist (a server that keeps expiring the
watch gets paced relists, never a list/watch loop); each relist or failure counted in the
client's `vk_provider_watch_restarts_total{reflector, reason}`. Must not: interpret the objects beyond
their identity.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from vk_common.logging import get_logger
from vk_common.objects import meta, uid
from vk_common.tasks import BackgroundTask
from vk_provider.kube.client import ApiStatusError, KubeClient

log = get_logger("kube.reflector")

Handler = Callable[[str, dict[str, Any]], Awaitable[None]]
SyncedHandler = Callable[[], Awaitable[None]]

MIN_BACKOFF = 0.8  # client-go reflector: 800 ms, doubling, capped at 30 s, jitter 1.0
MAX_BACKOFF = 30.0
# The server ends each watch after this many seconds (randomised like client-go's 5-10 min),
# so a silently dead connection is noticed.
WATCH_TIMEOUT_RANGE = (300, 600)


def backoff_delay(failures: int, rand: Callable[[], float] = random.random) -> float:
    """Delay before the next attempt after `failures` consecutive failures (>= 1): doubling plus jitter."""
    base = min(MAX_BACKOFF, MIN_BACKOFF * 2 ** max(0, failures - 1))
    return float(base * (1.0 + rand()))


def object_key(obj: Mapping[str, Any]) -> str:
    metadata = meta(obj)
    namespace = metadata.get("namespace") or ""
    return f"{namespace}/{metadata.get('name', '')}" if namespace else str(metadata.get("name", ""))


def _rv(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def diff_relist(
    known: Mapping[str, dict[str, Any]], listed: Mapping[str, dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    """The events that turn `known` into `listed`: deletions first, then additions and changes."""
    events: list[tuple[str, dict[str, Any]]] = []
    for key, old in known.items():
        current = listed.get(key)
        if current is None or (uid(current) and uid(old) and uid(current) != uid(old)):
            events.append(("DELETED", old))
    for key, new in listed.items():
        before = known.get(key)
        if before is None or (uid(new) and uid(before) and uid(new) != uid(before)):
            events.append(("ADDED", new))
        elif _rv(before) != _rv(new):
            events.append(("MODIFIED", new))
    return events


def list_items(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The items of a list answer, with `kind` and `apiVersion` filled in as a GET would show them."""
    kind = str(answer.get("kind") or "")
    item_kind = kind[: -len("List")] if kind.endswith("List") else ""
    api_version = answer.get("apiVersion")
    items: list[dict[str, Any]] = []
    for item in answer.get("items") or []:
        if item_kind and "kind" not in item:
            item = {"kind": item_kind, "apiVersion": api_version, **item}
        items.append(item)
    return items


class _Relist(Exception):
    """The watch's resourceVersion is too old (410): list again."""


class Reflector:
    """Follows `path` (a collection, e.g. `/api/v1/pods`) filtered by `params` (labelSelector, fieldSelector).

    `handler(type, object)` is awaited for each change, in order; its exceptions are logged,
    never fatal. `on_synced()` is awaited after every successful (re)list, once the list's
    changes were handed over; `synced` is set after the first one. `store()` is the current view.
    """

    def __init__(
        self,
        client: KubeClient,
        path: str,
        handler: Handler,
        *,
        params: Mapping[str, Any] | None = None,
        on_synced: SyncedHandler | None = None,
        name: str = "",
    ) -> None:
        self._client = client
        self._path = path
        self._params = dict(params or {})
        self._handler = handler
        self._on_synced = on_synced
        self.name = name or path
        self.synced = asyncio.Event()
        self.resource_version = ""
        self._store: dict[str, dict[str, Any]] = {}
        self._task = BackgroundTask(f"reflector {self.name}")

    def store(self) -> dict[str, dict[str, Any]]:
        """Objects by `namespace/name` (or `name`), as last seen."""
        return dict(self._store)

    async def start(self) -> None:
        self._task.start(self._run)

    async def stop(self) -> None:
        await self._task.stop()

    async def _run(self) -> None:
        need_list = True
        failures = 0
        relists = 0  # in a row, with no watch that delivered events between them
        loop = asyncio.get_running_loop()
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                    failures = 0
                began = loop.time()
                if await self._watch():
                    failures = relists = 0
                elif loop.time() - began < 1.0:
                    # An empty stream that ends at once must not become a busy loop.
                    failures += 1
                    await asyncio.sleep(backoff_delay(failures))
            except _Relist:
                # Like client-go's reflector, which waits a step of its backoff before every
                # ListAndWatch after the first (tools/cache/reflector.go RunWithContext); the
                # steps start over once a watch has worked (delivered events) again.
                relists += 1
                delay = backoff_delay(relists)
                self._client.metrics.watch_restarts.labels(self.name, "expired").inc()
                log.info(
                    "resourceVersion expired; relisting",
                    extra={
                        "reflector": self.name,
                        "resourceVersion": self.resource_version,
                        "delaySeconds": round(delay, 1),
                    },
                )
                need_list = True
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                delay = backoff_delay(failures)
                self._client.metrics.watch_restarts.labels(self.name, "error").inc()
                log.warning(
                    "list or watch failed; retrying",
                    extra={
                        "reflector": self.name,
                        "verb": "list" if need_list else "watch",
                        "err": exc if isinstance(exc, ApiStatusError) else repr(exc),
                        "delaySeconds": round(delay, 1),
                    },
                )
                await asyncio.sleep(delay)

    async def _list(self) -> None:
        try:
            answer = await self._client.get(self._path, self._params)
        except ApiStatusError as exc:
            if exc.status == 410:
                raise _Relist from exc
            raise
        listed = {object_key(item): item for item in list_items(answer)}
        changes = diff_relist(self._store, listed)
        self._store = listed
        self.resource_version = _rv(answer)
        for type_, obj in changes:
            await self._deliver(type_, obj)
        self.synced.set()
        if self._on_synced is not None:
            try:
                await self._on_synced()
            except Exception:
                log.exception("reflector synced handler failed", extra={"reflector": self.name})

    async def _watch(self) -> bool:
        """One watch request; True when at least one event arrived. Raises _Relist on 410."""
        params = dict(self._params)
        params.update(
            resourceVersion=self.resource_version,
            allowWatchBookmarks=True,
            timeoutSeconds=random.randint(*WATCH_TIMEOUT_RANGE),
        )
        got_any = False
        try:
            async with contextlib.aclosing(self._client.watch(self._path, params)) as stream:
                async for event in stream:
                    got_any = True
                    await self._apply(event)
        except ApiStatusError as exc:
            if exc.status == 410:
                raise _Relist from exc
            raise
        return got_any

    async def _apply(self, event: Mapping[str, Any]) -> None:
        type_ = str(event.get("type", ""))
        obj = event.get("object") or {}
        if type_ == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410:
                raise _Relist
            raise ApiStatusError(code, str(obj.get("reason", "")), str(obj.get("message", "")), dict(obj))
        rv = _rv(obj)
        if type_ == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        if type_ not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning(
                "ignoring a watch event of an unknown type", extra={"reflector": self.name, "type": type_}
            )
            return
        key = object_key(obj)
        if type_ == "DELETED":
            self._store.pop(key, None)
        else:
            self._store[key] = dict(obj)
        if rv:
            self.resource_version = rv
        await self._deliver(type_, dict(obj))

    async def _deliver(self, type_: str, obj: dict[str, Any]) -> None:
        try:
            await self._handler(type_, obj)
        except Exception:
            log.exception(
                "reflector handler failed",
                extra={"reflector": self.name, "type": type_, "object": object_key(obj)},
            )
