"""The engine's one-shot JSON calls on the event loop, over kept-alive connections to its Unix socket.

What lives here: `SocketApi`, an aiohttp session on the engine's socket (at most `limit`
connections, kept alive between calls) that sends one versioned Engine API request and gives
back its decoded JSON answer, or None for an empty one; `engine_path`, a path with its
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
calls of a new pod (docs/performance.md, 2026-12-06, night). Must not: stream (logs, events,
attach stay docker-py's, on their own threads), or know about pods.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import aiohttp
import requests

from docker.errors import DockerException, create_api_error_from_http_exception


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
        self._limit = limit
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.UnixConnector(path=self._socket_path, limit=self._limit)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout, trust_env=False)
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        version: str,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """One request to `/v<version><path>`; its JSON answer, or None when it has no body."""
        url = f"http://docker/v{version}{path}"  # the host is ignored on a Unix socket
        kwargs: dict[str, Any] = {}
        if params:
            kwargs["params"] = {k: v for k, v in params.items() if v is not None}
        if body is not None:
            kwargs["data"] = json.dumps(json_body(body))
            kwargs["headers"] = {"Content-Type": "application/json"}
        try:
            async with self._open().request(method, url, **kwargs) as response:
                content = await response.read()
                status, reason = response.status, response.reason or ""
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise requests.exceptions.ConnectionError(
                f"{method} {path} on unix://{self._socket_path}: {exc or type(exc).__name__}"
            ) from exc
        if status >= 400:
            raise api_error(status, reason, f"http+docker://localhost/v{version}{path}", content)
        try:
            return json.loads(content) if content else None
        except ValueError as exc:  # as docker-py's response.json(): a RequestException
            raise requests.exceptions.InvalidJSONError(
                f"{method} {path}: the engine's answer is not JSON: {exc}"
            ) from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
