"""The engine's one-shot JSON calls on the event loop, over kept-alive connections to its Unix socket.

What lives here: `SocketApi`, connections to the engine's socket (at most `limit` kept alive
between calls; a GET whose kept connection the engine had closed is sent again once on a new
one) that send one versioned Engine API request and give back its decoded JSON answer, or None
for an empty one; `engine_path`, a path with its
arguments quoted as docker-py quotes them. An error answer raises the docker-py error of it
(`NotFound`, `ImageNotFound`, `APIError`, made by docker-py's own
`create_api_error_from_http_exception`) and a broken connection raises requests'
`ConnectionError` with the socket's error as its cause (an answer that is not JSON, requests'
`InvalidJSONError`), so a caller handles them exactly as it handles the same call made with
docker-py.

Why not docker-py for these: a docker-py call is a thread hand-off, requests and urllib3
preparing the request, http.client and the email parser reading the answer's headers, and a new
connection to the socket for every container (docker-py keeps one pool per request URL, ten
pools at most); in a 100-pod burst that was 8-9 ms of the provider's CPU per pod for the seven
calls of a new pod (docs/performance.md, 2026-12-06, night). Why not aiohttp, which these calls
went through until 2026-12-07: its request and response objects, headers, URL and cookie work
cost about twice this module's request written in one piece and an answer parsed by httptools
(the C parser uvicorn uses): docs/performance.md, 2026-12-07, night.
Must not: stream (logs, events, attach stay docker-py's, on their own threads), or know about
pods.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import Any

import httptools
import requests

from docker.errors import DockerException, create_api_error_from_http_exception
from vk_provider import USER_AGENT


def engine_path(fmt: str, *args: str) -> str:
    """`fmt` with `args` quoted as docker-py's `APIClient._url` quotes them (`/` and `:` kept,
    so `registry.k8s.io/pause:3.10` stays as it is; `@` of a digest becomes `%40`)."""
    return fmt.format(*(urllib.parse.quote(a, safe="/:") for a in args))


def api_error(status: int, reason: str, url: str, content: bytes) -> DockerException:
    """The docker-py error an answer with this error status and body would raise."""
    response = requests.Response()
    response.status_code = status
    response.reason = reason
    response.url = url
    response._content = content
    try:
        create_api_error_from_http_exception(requests.HTTPError(response=response))
    except DockerException as error:  # it raises the error it makes
        return error
    raise AssertionError("create_api_error_from_http_exception returned")


def json_body(data: dict[str, Any]) -> dict[str, Any]:
    """The body docker-py's `_post_json` sends: the top level's None values left out."""
    return {k: v for k, v in data.items() if v is not None}


class _Answer(asyncio.Protocol):
    """One kept-alive connection to the engine's socket: writes a request, parses its answer
    (httptools: status, body, chunked or not) and hands it to the waiting caller."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[tuple[int, str, bytes, bool]] | None = None
        self._parts: list[bytes] = []
        self._reason = b""
        self.closed = False
        self.reused = False  # answered a request before this one

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("the engine closed the connection"))

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(exc)
            self.abort()

    def on_status(self, reason: bytes) -> None:
        self._reason = reason

    def on_body(self, body: bytes) -> None:
        self._parts.append(body)

    def on_message_complete(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            answer = (self._parser.get_status_code(), self._reason.decode("latin-1"), b"".join(self._parts))
            waiter.set_result((*answer, self._parser.should_keep_alive()))

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    async def exchange(self, request: bytes) -> tuple[int, str, bytes, bool]:
        """Send one request; its status, reason, body and whether the connection may be kept."""
        assert self._transport is not None
        self._parts = []
        self._reason = b""
        self._waiter = self._loop.create_future()
        self._transport.write(request)
        return await self._waiter

    def abort(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.abort()


class SocketApi:
    def __init__(self, socket_path: str, limit: int, timeout: float | None) -> None:
        self._socket_path = socket_path
        self._limit = limit
        self._timeout = timeout
        self._idle: list[_Answer] = []

    async def _connection(self, *, fresh: bool = False) -> _Answer:
        while self._idle and not fresh:
            conn = self._idle.pop()
            if not conn.closed:
                conn.reused = True
                return conn
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_unix_connection(lambda: _Answer(loop), self._socket_path)
        return conn

    def _release(self, conn: _Answer, keep: bool) -> None:
        if keep and not conn.closed and len(self._idle) < self._limit:
            self._idle.append(conn)
        else:
            conn.abort()

    async def request(
        self,
        method: str,
        path: str,
        version: str,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """One request to `/v<version><path>`; its JSON answer, or None when it has no body."""
        target = f"/v{version}{path}"
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if query:
            target += "?" + urllib.parse.urlencode(query)
        head = f"{method} {target} HTTP/1.1\r\nHost: docker\r\nUser-Agent: {USER_AGENT}\r\n"
        data = b""
        if body is not None:
            data = json.dumps(json_body(body)).encode()
            head += "Content-Type: application/json\r\n"
        if data or method in ("POST", "PUT"):
            head += f"Content-Length: {len(data)}\r\n"
        request = (head + "\r\n").encode() + data
        conn: _Answer | None = None
        try:
            async with asyncio.timeout(self._timeout):
                conn = await self._connection()
                try:
                    status, reason, content, keep = await conn.exchange(request)
                except ConnectionResetError:
                    if not conn.reused or method != "GET":
                        raise
                    conn = await self._connection(fresh=True)  # the engine had closed it while it was kept
                    status, reason, content, keep = await conn.exchange(request)
        except (TimeoutError, OSError, httptools.HttpParserError) as exc:
            if conn is not None:
                conn.abort()
            raise requests.exceptions.ConnectionError(
                f"{method} {path} on unix://{self._socket_path}: {exc or type(exc).__name__}"
            ) from exc
        except BaseException:  # cancelled mid-answer: the connection's state is unknown
            if conn is not None:
                conn.abort()
            raise
        self._release(conn, keep)
        if status >= 400:
            raise api_error(status, reason, f"http+docker://localhost{target}", content)
        try:
            return json.loads(content) if content else None
        except ValueError as exc:  # as docker-py's response.json(): a RequestException
            raise requests.exceptions.InvalidJSONError(
                f"{method} {path}: the engine's answer is not JSON: {exc}"
            ) from exc

    async def close(self) -> None:
        while self._idle:
            self._idle.pop().abort()
