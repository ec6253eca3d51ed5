"""The HTTPS listener of the kubelet API and of the sandbox API, guarded against idle clients.

What lives here: `GuardedSite`, the aiohttp site both servers listen with, and `listener_log`,
the logger they hand aiohttp's request handler. Through the site every connection passes a
`ConnectionGuard`, which counts a connection as *unauthenticated* while it waits for a
request's headers and no request on it has been authenticated yet (the server's own
`authenticated(request)` says so once a request's handlers have run; a request in progress,
such as a watch or an exec stream, is never counted):

- `TLS_HANDSHAKE_TIMEOUT` (32 s): the handshake must end within it (asyncio's default is 60 s);
- `HEADER_TIMEOUT` (32 s, the kube-apiserver's `ReadHeaderTimeout`; the kubelet has none): an
  unauthenticated connection is closed when it has not sent a request's headers within it of
  the handshake or of its last response, and an authenticated one when a request it started
  sending (after an idle keep-alive wait, aiohttp's `keepalive_timeout`) has no complete headers
  within it;
- `MAX_UNAUTHENTICATED` (1024): a connection is closed as soon as it would be one more
  unauthenticated connection than that, with one WARNING per `LOG_INTERVAL` saying how many
  were refused. Authenticated connections (watches, exec, writers) never count, so the cap
  holds against anonymous clients only; it leaves room for hundreds of clients that connect at
  the same moment and send their credentials right away.

`listener_log` turns aiohttp's `Error handling request` traceback for a request that is not
HTTP (an oversized header line, a garbage request line: aiohttp answers 400 and closes) into
one WARNING line per `LOG_INTERVAL` (60 s), with how many more there were since the last
one; every other record passes as aiohttp logs it. Must not: decide who is authenticated
(the servers' auth does), or answer requests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

TLS_HANDSHAKE_TIMEOUT = 32.0
HEADER_TIMEOUT = 32.0  # k8s.io/apiserver pkg/server/secure_serving.go: ReadHeaderTimeout
MAX_UNAUTHENTICATED = 1024
LOG_INTERVAL = 60.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Authenticated = Callable[[web.Request], bool]


class RateLimit:
    """At most one event per `interval` seconds passes; `passes()` returns how many were held back
    since the last one that passed (None: this one is held back too)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._next = 0.0
        self._held = 0

    def passes(self) -> int | None:
        now = time.monotonic()
        if now < self._next:
            self._held += 1
            return None
        self._next, held, self._held = now + self.interval, self._held, 0
        return held


class _MalformedRequests(logging.Filter):
    def __init__(self, interval: float) -> None:
        super().__init__()
        self._limit = RateLimit(interval)

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, HttpProcessingError) or record.levelno < logging.WARNING:
            return True
        held = self._limit.passes()
        if held is None:
            return False
        remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        reason = " ".join(str(exc.message).split())[:200]  # one line, whatever the client sent
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.msg, record.args = "refused a malformed HTTP request", ()
        # The line's keys, as `extra=` would set them (logging.py writes every one).
        record.remote, record.code, record.reason = remote, exc.code, reason
        record.suppressed = held or None  # lines held back since the last one
        record.exc_info, record.exc_text = None, None
        return True


def listener_log(parent: logging.Logger) -> logging.Logger:
    """aiohttp's server logger for one listener (`<parent>.http`), with malformed requests rate-limited."""
    logger = logging.Logger(f"{parent.name}.http")  # one per listener: its own rate limit
    logger.parent = parent
    logger.addFilter(_MalformedRequests(LOG_INTERVAL))
    return logger


class _Connection(asyncio.Protocol):
    """aiohttp's protocol for one connection, with the guard's view of it."""

    def __init__(self, guard: ConnectionGuard, inner: asyncio.Protocol) -> None:
        self._guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.in_request = False
        self.authenticated = False
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.inner.connection_made(transport)
        self._guard.connected(self)

    def data_received(self, data: bytes) -> None:
        if not self.in_request and self.timer is None:  # an authenticated client's next request
            self._guard.wait_for_headers(self)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard.lost(self)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class ConnectionGuard:
    """The header timeout and the cap on unauthenticated connections of one listener."""

    def __init__(self, authenticated: Authenticated, log: logging.Logger) -> None:
        self._authenticated = authenticated
        self._log = log
        self.header_timeout = HEADER_TIMEOUT  # the module's values when the listener starts
        self.max_unauthenticated = MAX_UNAUTHENTICATED
        self._by_transport: dict[asyncio.BaseTransport, _Connection] = {}
        self.unauthenticated: set[_Connection] = set()
        self._refusals = RateLimit(LOG_INTERVAL)

    def protocol_factory(self, make: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        return lambda: _Connection(self, make())

    def connected(self, conn: _Connection) -> None:
        if conn.transport is not None:
            self._by_transport[conn.transport] = conn
        self._idle(conn)

    def lost(self, conn: _Connection) -> None:
        self._disarm(conn)
        self.unauthenticated.discard(conn)
        if conn.transport is not None:
            self._by_transport.pop(conn.transport, None)

    def wait_for_headers(self, conn: _Connection) -> None:
        loop = asyncio.get_running_loop()
        conn.timer = loop.call_later(self.header_timeout, self._expired, conn)

    def _disarm(self, conn: _Connection) -> None:
        if conn.timer is not None:
            conn.timer.cancel()
            conn.timer = None

    def _expired(self, conn: _Connection) -> None:
        conn.timer = None
        if not conn.in_request:
            conn.close()

    def _idle(self, conn: _Connection) -> None:
        """The connection waits for a request's headers again."""
        conn.in_request = False
        if conn.authenticated:
            return
        if len(self.unauthenticated) >= self.max_unauthenticated:
            held = self._refusals.passes()
            if held is not None:
                self._log.warning(
                    "closed a connection: too many connections have not authenticated yet",
                    extra={
                        "unauthenticated": len(self.unauthenticated),
                        "max": self.max_unauthenticated,
                        "suppressed": held or None,
                    },
                )
            conn.close()
            return
        self.unauthenticated.add(conn)
        if conn.timer is None:
            self.wait_for_headers(conn)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The first of the application's: a request's headers are in; after its handlers ran,
        whether it authenticated its connection."""
        conn = self._by_transport.get(request.transport) if request.transport is not None else None
        if conn is None:
            return await handler(request)
        self._disarm(conn)
        self.unauthenticated.discard(conn)
        conn.in_request = True
        try:
            return await handler(request)
        finally:
            conn.authenticated = conn.authenticated or self._authenticated(request)
            if conn.transport is not None and not conn.transport.is_closing():
                self._idle(conn)


class GuardedSite(web.BaseSite):
    """A TCP site whose connections pass through `guard` (`port` is the bound port once started)."""

    def __init__(
        self, runner: web.BaseRunner, host: str, port: int, *, ssl_context: Any, guard: ConnectionGuard
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host, self.port, self._guard = host, port, guard

    @property
    def name(self) -> str:
        return f"https://{self._host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        handlers = self._runner.server
        assert handlers is not None
        self._server = server = await asyncio.get_running_loop().create_server(
            self._guard.protocol_factory(handlers),
            self._host,
            self.port,
            ssl=self._ssl_context,
            backlog=self._backlog,
            ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT,
        )
        self.port = int(server.sockets[0].getsockname()[1])
