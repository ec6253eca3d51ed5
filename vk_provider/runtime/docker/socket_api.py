"""The engine's one-shot JSON calls on the event loop, over kept-alive connections to its Unix socket.

What lives here: `SocketApi`, connections to the engine's socket (vk_provider/wire.py: at most
`limit` kept alive between calls; a GET whose kept connection the engine had closed is sent
again once on a new one) that send one versioned Engine API request and give back its decoded
JSON answer, or None for an empty one; `engine_path`, a path with its arguments quoted as
docker-py quotes them. An error answer raises the docker-py error of it (`NotFound`,
`ImageNotFound`, `APIError`, made by docker-py's own `create_api_error_from_http_exception`) and
a broken connection raises requests' `ConnectionError` with the socket's error as its cause (an
answer that is not JSON, requests' `InvalidJSONError`), so a caller handles them exactly as it
handles the same call made with docker-py.

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
from collections.abc import Callable
from typing import Any

import requests

from docker.errors import DockerException, create_api_error_from_http_exception
from vk_provider import USER_AGENT
from vk_provider.wire import Answer, Connections, request_bytes


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


class SocketApi:
    def __init__(self, socket_path: str, limit: int, timeout: float | None) -> None:
        self._socket_path = socket_path
        self._timeout = timeout
        self._connections = Connections(self._connect, limit)

    async def _connect(self, factory: Callable[[], Answer]) -> tuple[asyncio.BaseTransport, Answer]:
        return await asyncio.get_running_loop().create_unix_connection(factory, self._socket_path)

    def _failure(self, exc: OSError) -> str:
        """What went wrong, never empty (a timeout's own message is)."""
        if isinstance(exc, TimeoutError) and self._timeout is not None:
            return f"no answer within {self._timeout:g} s"
        return str(exc) or type(exc).__name__

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
        headers = {"Host": "docker", "User-Agent": USER_AGENT}
        data = None
        if body is not None:
            data = json.dumps(json_body(body)).encode()
            headers["Content-Type"] = "application/json"
        try:
            request = request_bytes(method, target, headers, data)
            reply = await self._connections.exchange(request, resend=method == "GET", within=self._timeout)
        except OSError as exc:
            raise requests.exceptions.ConnectionError(
                f"{method} {path} on unix://{self._socket_path}: {self._failure(exc)}"
            ) from exc
        status, content = reply.status, reply.body
        if status >= 400:
            raise api_error(status, reply.reason, f"http+docker://localhost{target}", content)
        try:
            return json.loads(content) if content else None
        except ValueError as exc:  # as docker-py's response.json(): a RequestException
            raise requests.exceptions.InvalidJSONError(
                f"{method} {path}: the engine's answer is not JSON: {exc}"
            ) from exc

    async def close(self) -> None:
        self._connections.close()
