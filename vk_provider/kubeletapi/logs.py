"""`GET /containerLogs/{namespace}/{pod}/{container}`: a container's log, streamed.

What lives here: `parse_log_options` (pure: the kubelet's query parameters and their rules,
virtual-kubelet `node/api/logs.go`) and `container_logs_handler`, which streams the
runtime's log bytes to the client, flushing each chunk (so `follow` works), cutting at
`limitBytes`, after the kubelet's checks of the pod's spec and status (podstate.check_logs)
when the app gave it the node's pods. Must not: read Docker directly (the runtime's
`container_logs` does).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import web

from vk_common.objects import parse_time
from vk_provider.kubeletapi.lookup import BadRequest, find_container, find_pod
from vk_provider.kubeletapi.podstate import KnownPods, check_logs
from vk_provider.runtime.protocol import Runtime


@dataclass(frozen=True)
class LogOptions:
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail: int | None = None
    limit_bytes: int | None = None
    since: float | None = None  # unix seconds


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False", ""}


def _bool(query: Mapping[str, str], key: str) -> bool:
    # strconv.ParseBool's spellings.
    value = query.get(key, "")
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise BadRequest(f"{key}: invalid boolean value {value!r}")


def _int(query: Mapping[str, str], key: str, minimum: int) -> int | None:
    if key not in query:
        return None
    try:
        value = int(query[key])
    except ValueError:
        raise BadRequest(f"{key}: invalid integer value {query[key]!r}") from None
    if value < minimum:
        raise BadRequest(f"{key}: must be greater than or equal to {minimum}")
    return value


def parse_log_options(query: Mapping[str, str], now: float) -> LogOptions:
    since_seconds = _int(query, "sinceSeconds", 1)
    since: float | None = None
    if "sinceTime" in query:
        if since_seconds is not None:
            raise BadRequest("sinceTime: at most one of sinceTime or sinceSeconds may be specified")
        since_time = parse_time(query["sinceTime"])
        if since_time is None:
            raise BadRequest(f"sinceTime: invalid RFC 3339 time {query['sinceTime']!r}")
        since = since_time.timestamp()
    elif since_seconds is not None:
        since = now - since_seconds
    return LogOptions(
        follow=_bool(query, "follow"),
        previous=_bool(query, "previous"),
        timestamps=_bool(query, "timestamps"),
        tail=_int(query, "tailLines", 0),
        limit_bytes=_int(query, "limitBytes", 1),
        since=since,
    )


async def container_logs_handler(
    request: web.Request, runtime: Runtime, pods: KnownPods | None
) -> web.StreamResponse:
    opts = parse_log_options(request.query, time.time())
    info = request.match_info
    if pods is not None:
        check_logs(pods.pod(info["namespace"], info["pod"]), info["pod"], info["container"], opts.previous)
    pod = await find_pod(runtime, info["namespace"], info["pod"])
    instance = find_container(pod, info["container"], previous=opts.previous)
    stream = await runtime.container_logs(
        instance.container_id,
        follow=opts.follow,
        timestamps=opts.timestamps,
        tail=opts.tail,
        since=opts.since,
    )
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    left = opts.limit_bytes
    try:
        async for chunk in stream:
            if left is not None:
                chunk = chunk[:left]
                left -= len(chunk)
            await response.write(chunk)
            if left == 0:
                break
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()  # ends the runtime's reader thread now, not at garbage collection
    await response.write_eof()
    return response
