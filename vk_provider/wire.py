"""HTTP/1.1 one-shot exchanges on kept-alive connections, the answers parsed with httptools.

What lives here: `Connections`, the connections to one server (a Unix socket, or a TCP address
with TLS or without, as its `connect` opens them), at most `limit` kept alive between exchanges;
`Connections.exchange` writes one request already in bytes and gives back its `Reply` (status,
reason, headers, body); `request_bytes` writes a request's head and body in one piece, and refuses
a target or a header value that would split it (a line break). A request that may be sent twice
(`resend`) whose kept connection the server had closed is sent again once on a new connection, as
Go's net/http does for a replayable request on a reused connection. A broken connection, a timeout
or an answer that is not HTTP raises `OSError` (`TimeoutError` is one); the callers turn it into
their own error. Why: an aiohttp or docker-py request object, its headers and its response cost
about twice a request written in one piece and an answer parsed by httptools (the C parser uvicorn
uses); docs/performance.md, 2026-12-07, night, and 2026-12-07, late night.
Must not: stream (watches, logs, attach stay on aiohttp or docker-py), choose a request's headers,
or know what the server is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import httptools

# Methods whose request carries a Content-Length even without a body (Go's net/http does the same).
BODY_METHODS = frozenset(("POST", "PUT", "PATCH"))


def request_bytes(method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
    """One HTTP/1.1 request in one piece: the request line, `headers` in their order, a
    Content-Length for a body (or a method that carries one), then the body. A target or a
    header value holding a line break or a space raises `ConnectionError` (nothing is sent): it
    would end the head early and let a value write a request of its own."""
    if not target.isprintable() or " " in target:
        raise ConnectionError(f"the request target {target!r} holds a space or a line break")
    lines = [f"{method} {target} HTTP/1.1"]
    for name, value in headers.items():
        if "\n" in value or "\r" in value:
            raise ConnectionError(f"the header {name} holds a line break")
        lines.append(f"{name}: {value}")
    if body is not None or method in BODY_METHODS:
        lines.append(f"Content-Length: {len(body or b'')}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


@dataclass(slots=True)
class Reply:
    """One answer: status, reason, headers (names lower-case; an answer of status 300 and over
    only: Retry-After, Location) and the whole body."""

    status: int
    reason: str
    headers: dict[str, str]
    body: bytes


class Answer(asyncio.Protocol):
    """One kept-alive connection: writes a request, parses its answer (httptools: status,
    headers, body, chunked or not) and hands it to the waiting caller."""

    def __init__(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[tuple[Reply, bool]] | None = None
        self._parts: list[bytes] = []
        self._headers: dict[str, str] = {}
        self._reason = b""
        self._keep_headers = False
        self.closed = False
        self.reused = False  # answered a request before this one

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("the server closed the connection"))

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionError(f"the answer is not HTTP/1.1: {exc}"))
            self.abort()

    def on_status(self, reason: bytes) -> None:
        self._reason = reason
        self._keep_headers = self._parser.get_status_code() >= 300

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._keep_headers:  # a success's headers are never read
            self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._parts.append(body)

    def on_message_complete(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            reason = self._reason.decode("latin-1")
            reply = Reply(self._parser.get_status_code(), reason, self._headers, b"".join(self._parts))
            waiter.set_result((reply, self._parser.should_keep_alive()))

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    async def exchange(self, request: bytes) -> tuple[Reply, bool]:
        """Send one request; its answer and whether the connection may be kept."""
        assert self._transport is not None
        self._parts = []
        self._headers = {}
        self._reason = b""
        self._waiter = asyncio.get_running_loop().create_future()
        self._transport.write(request)
        return await self._waiter

    def abort(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.abort()


Connect = Callable[[Callable[[], Answer]], Awaitable[tuple[asyncio.BaseTransport, Answer]]]


class Connections:
    """The kept-alive connections to one server. `connect(factory)` opens one (for instance
    `functools.partial(loop.create_unix_connection, path=...)`)."""

    def __init__(self, connect: Connect, limit: int) -> None:
        self._connect = connect
        self._limit = limit
        self._idle: list[Answer] = []

    async def _connection(self, *, fresh: bool = False) -> Answer:
        while self._idle and not fresh:
            conn = self._idle.pop()
            if not conn.closed:
                conn.reused = True
                return conn
        _, conn = await self._connect(Answer)
        return conn

    def _release(self, conn: Answer, keep: bool) -> None:
        if keep and not conn.closed and len(self._idle) < self._limit:
            self._idle.append(conn)
        else:
            conn.abort()

    async def exchange(self, request: bytes, *, resend: bool, within: float | None) -> Reply:
        """`request` sent on a kept connection (or a new one) and its answer, all within
        `within` seconds; `resend`: the request may be sent twice (no change on the server)."""
        conn: Answer | None = None
        try:
            async with asyncio.timeout(within):
                conn = await self._connection()
                try:
                    reply, keep = await conn.exchange(request)
                except ConnectionResetError:
                    if not conn.reused or not resend:
                        raise
                    conn = await self._connection(fresh=True)  # the server had closed it while it was kept
                    reply, keep = await conn.exchange(request)
        except BaseException:  # broken, timed out, or cancelled mid-answer: its state is unknown
            if conn is not None:
                conn.abort()
            raise
        self._release(conn, keep)
        return reply

    def close(self) -> None:
        while self._idle:
            self._idle.pop().abort()
