"""The watch handler: a resource's changes streamed as newline-delimited JSON watch events.

What lives here: `watch_objects`, the wire format of reference §4 (headers sent at once,
chunked, one JSON document plus newline per event, flushed each time), `timeoutSeconds` (the
real server's random 30-60 min when absent), bookmarks (`allowWatchBookmarks`), streaming lists
(`sendInitialEvents=true` with the `k8s.io/initial-events-end` bookmark), watching one named
object, and Table events for `kubectl get -w` (column definitions on the first row only).
Must not: decide which events a watcher sees (store.py does: replay, 410, selector transitions).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator

from aiohttp import web

from vk_provider.sandbox import errors
from vk_provider.sandbox.handlers import JSON, ApiContext, list_options_invalid, table_of, wants_table
from vk_provider.sandbox.requestinfo import RequestInfo
from vk_provider.sandbox.resources import ResourceInfo
from vk_provider.sandbox.store import WatchEvent

BOOKMARK_EVERY = 60.0


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
    stream = ctx.store.watch(
        info.key,
        ri.namespace if info.namespaced else None,
        resource_version=None if initial_events else (rv or None),
        label_selector=q.get("labelSelector", ""),
        field_selector=field_selector,
        bookmark_interval=max(1.0, min(BOOKMARK_EVERY, timeout - 2)) if bookmarks else None,
        initial_events_end=initial_events and bookmarks,
    )
    table = wants_table(request)
    response = web.StreamResponse(status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    first_row = True
    try:
        async with asyncio.timeout(timeout):
            async for event in stream:
                obj = event.object
                if table and event.type in ("ADDED", "MODIFIED", "DELETED"):
                    obj = table_of(request, info, [obj], obj["metadata"]["resourceVersion"], first_row)
                    first_row = False
                line = json.dumps({"type": event.type, "object": obj}, separators=(",", ":")) + "\n"
                await response.write(line.encode())
    except (TimeoutError, ConnectionResetError):
        pass
    finally:
        await _close_stream(stream)
    return response


async def _close_stream(stream: AsyncIterator[WatchEvent]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
