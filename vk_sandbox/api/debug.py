"""Test and benchmark aids of the sandbox: fault injection and request counters (off unless enabled).

What lives here: `SandboxDebug`, with a Python API (`fail_next`, `add_latency`, `clear_faults`,
`close_watches`, `counters`, `reset_counters`, and `fired`: each injected fault answered, with
its time, so a test can see how a client paced its retries), the aiohttp middleware that counts every API
request by verb, resource and subresource and applies the injected faults, and the HTTP
endpoints under /debug/sandbox/ (GET counters, DELETE counters to reset, POST faults, POST
latency, DELETE faults, POST close-watches). Must not: change stored objects.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from vk_sandbox.api import errors
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.requestinfo import RequestInfo, parse_request
from vk_sandbox.api.responses import error_response
from vk_sandbox.storage.registry_rules import OPTIMISTIC_LOCK_MSG
from vk_sandbox.storage.store import Store

PREFIX = "/debug/sandbox"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Fault:
    verb: str  # a Kubernetes verb (get, list, watch, create, update, patch, delete) or "*"
    path: re.Pattern[str]  # searched in the request path
    code: int  # 500, 409, 429 or 410
    remaining: int

    def matches(self, ri: RequestInfo, path: str) -> bool:
        return self.remaining > 0 and self.verb in ("*", ri.verb) and self.path.search(path) is not None


@dataclass(frozen=True)
class FiredFault:
    at: float  # time.monotonic() when the fault answered
    verb: str
    path: str
    code: int


@dataclass
class Latency:
    seconds: float
    verb: str
    path: re.Pattern[str]


def _key(ri: RequestInfo) -> str:
    resource = ri.resource_key + (f"/{ri.subresource}" if ri.subresource else "")
    return f"{ri.verb} {resource}"


def _fault_error(fault: Fault, ri: RequestInfo) -> ApiError:
    if fault.code == 409:
        return errors.conflict(ri.resource or "resource", ri.name, OPTIMISTIC_LOCK_MSG, ri.group)
    if fault.code == 410:  # a list or watch from a resourceVersion the server no longer has
        return errors.expired("too old resource version (injected fault)")
    if fault.code == 429:
        return errors.too_many_requests(
            "the server has received too many requests and has asked us to try again later"
        )
    return ApiError(fault.code, "InternalError", f"Internal error occurred: injected fault ({fault.code})")


class SandboxDebug:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._counts: Counter[str] = Counter()
        self._faults: list[Fault] = []
        self._latencies: list[Latency] = []
        self.fired: list[FiredFault] = []  # every injected fault answered, oldest first

    # ------------------------------------------------------------ Python API

    def fail_next(self, verb: str, path: str, code: int = 500, count: int = 1) -> None:
        """Answer the next `count` requests of `verb` whose path matches the regex `path` with `code`."""
        self._faults.append(Fault(verb, re.compile(path), code, count))

    def add_latency(self, seconds: float, verb: str = "*", path: str = "") -> None:
        self._latencies.append(Latency(seconds, verb, re.compile(path)))

    def clear_faults(self) -> None:
        self._faults.clear()
        self._latencies.clear()

    def close_watches(self) -> int:
        return self._store.close_all_watches()

    def counters(self) -> dict[str, Any]:
        """{"requests": {"<verb> <resource>[/<subresource>]": n}, "total": n}."""
        return {"requests": dict(sorted(self._counts.items())), "total": sum(self._counts.values())}

    def reset_counters(self) -> None:
        self._counts.clear()

    # ------------------------------------------------------------ HTTP

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        ri = parse_request(request.method, request.path, request.query)
        if ri.is_resource:
            self._counts[_key(ri)] += 1
            for latency in self._latencies:
                if latency.verb in ("*", ri.verb) and latency.path.search(request.path):
                    await asyncio.sleep(latency.seconds)
            for fault in self._faults:
                if fault.matches(ri, request.path):
                    fault.remaining -= 1
                    self.fired.append(FiredFault(time.monotonic(), ri.verb, request.path, fault.code))
                    return error_response(_fault_error(fault, ri))
            self._faults = [f for f in self._faults if f.remaining > 0]
        return await handler(request)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(f"{PREFIX}/counters", self._get_counters),
            web.delete(f"{PREFIX}/counters", self._reset_counters),
            web.post(f"{PREFIX}/faults", self._post_fault),
            web.delete(f"{PREFIX}/faults", self._delete_faults),
            web.post(f"{PREFIX}/latency", self._post_latency),
            web.post(f"{PREFIX}/close-watches", self._close_watches),
        ]

    async def _get_counters(self, request: web.Request) -> web.Response:
        return web.json_response(self.counters())

    async def _reset_counters(self, request: web.Request) -> web.Response:
        self.reset_counters()
        return web.json_response(self.counters())

    async def _post_fault(self, request: web.Request) -> web.Response:
        body = await request.json()
        code = int(body.get("code", 500))
        if code not in (409, 410, 429, 500):
            return web.json_response({"error": "code must be 409, 410, 429 or 500"}, status=400)
        self.fail_next(str(body.get("verb", "*")), str(body.get("path", "")), code, int(body.get("count", 1)))
        return web.json_response({"faults": len(self._faults)})

    async def _delete_faults(self, request: web.Request) -> web.Response:
        self.clear_faults()
        return web.json_response({"faults": 0})

    async def _post_latency(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.add_latency(float(body["seconds"]), str(body.get("verb", "*")), str(body.get("path", "")))
        return web.json_response({"latencies": len(self._latencies)})

    async def _close_watches(self, request: web.Request) -> web.Response:
        return web.json_response({"closed": self.close_watches()})
