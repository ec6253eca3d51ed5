"""The watch handler: a resource's changes streamed as newline-delimited JSON watch events.

What lives here: `watch_objects`, the watch wire format of
k8s.io/apiserver/pkg/endpoints/handlers/watch.go (headers sent at once,
chunked, one JSON document plus newline per event, flushed each time), `timeoutSeconds` (the
real server's random 30-60 min when absent), bookmarks (`allowWatchBookmarks`), streaming lists
(`sendInitialEvents=true` with the `k8s.io/initial-events-end` bookmark), watching one named
object, and Table events for `kubectl get -w` (column definitions on the first row only).
Memory: an event's object JSON is the one the store made once for every watcher; it is written
in slices of `SLICE` bytes, each awaiting the client, so a connection buffers at most about one
slice; when the store terminates the watch (its buffer overflowed: a client that does not read)
while a write waits for that client, the connection is dropped and the client re-watches.
Must not: decide which events a watcher sees (storage/store.py does: replay, 410, selector transitions).
"""

from __future__ import annotations

import asyncio
import json
import random

from aiohttp import web

from vk_sandbox.api import errors
from vk_sandbox.api.handlers.context import ApiContext
from vk_sandbox.api.handlers.reads import list_options_invalid
from vk_sandbox.api.requestinfo import RequestInfo
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.api.responses import JSON, table_of, wants_table

BOOKMARK_EVERY = 60.0
SLICE = 64 * 1024  # aiohttp's StreamWriter drains above 64 KiB


class _Sender:
    """Writes the watch lines of one response, and drops the connection when asked while a write
    waits for a client that does not read."""

    def __init__(self, request: web.Request) -> None:
        self._request = request
        self._writing = False
        self.response = web.StreamResponse(
            status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"}
        )
        self.response.enable_chunked_encoding()

    async def send(self, type_: str, body: bytes) -> None:
        """One `{"type":...,"object":...}` line; body is the object's JSON."""
        head = b'{"type":' + json.dumps(type_).encode() + b',"object":'
        self._writing = True
        try:
            if len(body) <= SLICE:
                await self.response.write(head + body + b"}\n")
                return
            await self.response.write(head)
            view = memoryview(body)
            for start in range(0, len(view), SLICE):
                await self.response.write(view[start : start + SLICE])
            await self.response.write(b"}\n")
        finally:
            self._writing = False

    def drop_if_blocked(self) -> None:
        transport = self._request.transport
        if self._writing and transport is not None:
            transport.abort()


async def watch_objects(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.StreamResponse:
    q = request.query
    field_selector = q.get("fieldSelector", "")
    if ri.name:  # GET .../pods/x?watch=true watches one object
        field_selector = ",".join(s for s in (f"metadata.name={ri.name}", field_selector) if s)
    rv = q.get("resourceVersion", "")
    send_initial = q.get("sendInitialEvents", "")
    if send_initial and q.get("resourceVersionMatch") != "NotOlderThan":
        raise list_options_invalid(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
        )
    initial_events = send_initial == "true"
    if send_initial == "false" and rv in ("", "0"):
        rv = ctx.store.resource_version
    try:
        timeout = float(q.get("timeoutSeconds") or 0)
        if timeout <= 0:  # unset or 0: the real server's minRequestTimeout * (1 + rand)
            timeout = 1800.0 * (1 + random.random())
    except ValueError:
        raise errors.bad_request(f"invalid timeoutSeconds: {q['timeoutSeconds']}") from None
    bookmarks = q.get("allowWatchBookmarks", "").lower() == "true"
    sender = _Sender(request)
    stream = ctx.store.watch(
        info.key,
        ri.namespace if info.namespaced else None,
        resource_version=None if initial_events else (rv or None),
        label_selector=q.get("labelSelector", ""),
        field_selector=field_selector,
        bookmark_interval=max(1.0, min(BOOKMARK_EVERY, timeout - 2)) if bookmarks else None,
        initial_events_end=initial_events and bookmarks,
        on_terminate=sender.drop_if_blocked,
    )
    table = wants_table(request)
    first_row = True
    try:
        await sender.response.prepare(request)
        async with asyncio.timeout(timeout):
            async for event in stream:
                if table and event.type in ("ADDED", "MODIFIED", "DELETED"):
                    obj = event.object
                    obj = table_of(request, info, [obj], obj["metadata"]["resourceVersion"], first_row)
                    first_row = False
                    await sender.send(event.type, json.dumps(obj, separators=(",", ":")).encode())
                else:
                    await sender.send(event.type, event.encoded())
    except (TimeoutError, ConnectionResetError):
        pass
    finally:
        await stream.aclose()
    return sender.response
