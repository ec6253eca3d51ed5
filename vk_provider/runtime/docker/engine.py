"""The connection to one Docker engine: the SDK client, the bounded pool every blocking call uses,
and the calls of a new container made on the event loop.

What lives here: `Engine`, which builds the docker-py client (`DockerConfig.host`, else
`$DOCKER_HOST`, else the local socket; the Docker CLI context is ignored) with a connection
pool at least as large as the thread pool plus the long-lived streams; `Engine.call`, the
one way blocking SDK calls reach a thread, and `Engine.request`, one JSON call of the Engine
API (`create_container`, `start_container`, `inspect_container`, `inspect_image` are made so,
counted as `create_container`, `start`, `inspect_container`, `inspect_image`): on a Unix
socket an awaited request on the loop over kept-alive connections (`socket_api`), on any other
engine the same request through docker-py in the pool. Both wait their turn in
`runtime.call_order`'s order (oldest pod first, calls outside a pod before any), and so are
the one place runtime operations are counted and timed (`kubelet_runtime_operations_*`, by the
called function's name or the request's operation);
`Engine.check_kind`, which refuses an engine other than the configured one (Docker or Podman, by
its `version` answer); `engine_is_local`, whether the engine shares
this host's filesystem. On a Unix socket neither client reads requests' proxy and netrc
environment per request. Must not: know about pods or labels.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from requests.exceptions import RequestException

import docker
from docker.errors import DockerException
from vk_provider.config import DockerConfig
from vk_provider.metrics import ProviderMetrics
from vk_provider.runtime.call_order import PriorityGate, call_priority
from vk_provider.runtime.docker.hostinfo import engine_name
from vk_provider.runtime.docker.socket_api import SocketApi, engine_path
from vk_provider.runtime.types import RuntimeUnavailable

T = TypeVar("T")

LOCAL_SOCKET = "unix:///var/run/docker.sock"
# Follow-mode streams (events, logs) pin a pool connection each, beyond the one-shot calls.
# What a call through the engine may raise: docker-py's errors and requests' transport ones.
EngineErrors = (DockerException, RequestException)
STREAM_CONNECTIONS = 8


def engine_url(config: DockerConfig) -> str:
    """`docker.host`, then `$DOCKER_HOST`, then the local socket."""
    return config.host or os.environ.get("DOCKER_HOST", "") or LOCAL_SOCKET


def engine_is_local(location: str, url: str) -> bool:
    """`docker.engineLocation`: "local" or "remote" as configured; "auto": only a `unix://`
    socket is taken for an engine on this host (a TCP or SSH endpoint may be anywhere)."""
    if location == "auto":
        return url.startswith("unix://")
    return location == "local"


def root_cause(exc: BaseException) -> str:
    """The innermost error of a chain (docker-py wraps requests wraps urllib3 wraps the socket's
    OSError): `[Errno 2] No such file or directory`, `[Errno 111] Connection refused`."""
    while (inner := exc.__cause__ or exc.__context__) is not None:
        exc = inner
    return str(exc) or type(exc).__name__


def _tune_unix_client(client: docker.DockerClient) -> None:
    """No per-request look-up of proxy variables and ~/.netrc (requests' `trust_env`): they mean
    nothing on a Unix socket, and cost about a quarter of the client's CPU per call. docker-py's
    pool per request URL is kept for the calls still made with it (a shared pool of kept-alive
    connections made pods restart twice after an engine restart in
    tests/resilience/test_docker_outage.py, `df4c7dd`)."""
    client.api.trust_env = False


def _blocking_request(
    client: docker.DockerClient, method: str, path: str, params: dict[str, str] | None, body: Any
) -> Any:
    """`Engine.request` through docker-py (an engine not on a Unix socket: TCP, TLS, SSH)."""
    api = client.api
    url = f"{api.base_url}/v{api._version}{path}"
    if method == "GET":
        response = api._get(url, params=params)
    elif body is not None:
        response = api._post_json(url, data=body, params=params)
    else:
        response = api._post(url, params=params)
    api._raise_for_status(response)
    return response.json() if response.content else None


class Engine:
    def __init__(self, config: DockerConfig, metrics: ProviderMetrics | None = None) -> None:
        self.url = engine_url(config)
        self.metrics = metrics or ProviderMetrics()
        self.max_concurrency = max(1, config.max_concurrency)
        self._executor = ThreadPoolExecutor(
            max_workers=self.max_concurrency, thread_name_prefix="docker-call"
        )
        # Calls queue here, not in the executor's FIFO queue: a free thread takes the most urgent.
        self._gate = PriorityGate(self.max_concurrency)
        self._client: docker.DockerClient | None = None
        self._stream_client: docker.DockerClient | None = None
        self._socket: SocketApi | None = None

    def _connect(self, timeout: int | None = 60) -> docker.DockerClient:
        # from_env with an explicit DOCKER_HOST: TLS settings (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH)
        # apply as for the Docker CLI, and the CLI context is not consulted (docker-py 7.2 would).
        client = docker.DockerClient.from_env(
            environment=dict(os.environ, DOCKER_HOST=self.url),
            use_context=False,
            version="auto",
            max_pool_size=self.max_concurrency + STREAM_CONNECTIONS,
            timeout=timeout,
        )
        if self.url.startswith("unix://"):
            _tune_unix_client(client)
        return client

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            raise RuntimeUnavailable(f"not connected to the Docker engine at {self.url}")
        return self._client

    @property
    def stream_client(self) -> docker.DockerClient:
        """A client without a read timeout, for follow-mode streams (events, logs) that may idle."""
        if self._stream_client is None:
            raise RuntimeUnavailable(f"not connected to the Docker engine at {self.url}")
        return self._stream_client

    async def connect(self) -> None:
        """Build the clients (they ask the engine for its API version); raises RuntimeUnavailable."""
        if self._client is not None:
            return
        loop = asyncio.get_running_loop()
        try:
            self._stream_client = await loop.run_in_executor(self._executor, self._connect, None)
            self._client = await loop.run_in_executor(self._executor, self._connect)
        except DockerException as exc:
            raise RuntimeUnavailable(
                f"cannot connect to the Docker engine at {self.url}: {root_cause(exc)}"
            ) from exc
        if self.url.startswith("unix://"):
            # As many connections as calls may run at once (the gate's bound); docker-py's read
            # timeout of one-shot calls.
            self._socket = SocketApi(self.url.removeprefix("unix://"), self.max_concurrency, 60)

    @contextlib.asynccontextmanager
    async def _operation(self, operation: str) -> AsyncIterator[None]:
        """Wait for a turn at the gate; count and time the operation (from its turn), and count
        its error."""
        self.metrics.runtime_operations.labels(operation).inc()
        await self._gate.acquire(call_priority.get())
        began = time.monotonic()
        try:
            yield
        except Exception:
            self.metrics.runtime_operations_errors.labels(operation).inc()
            raise
        finally:
            self._gate.release()
            self.metrics.runtime_operations_duration.labels(operation).observe(time.monotonic() - began)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one blocking SDK call in the bounded pool, once a thread is free for it
        (`call_order.call_priority` of the caller's context decides who is next); counted and
        timed (from when a thread took it) under its function's name (`inspect_container`,
        `start`, `_read_message` as `read_message`, ...)."""
        operation = getattr(fn, "__name__", type(fn).__name__).lstrip("_")
        loop = asyncio.get_running_loop()
        async with self._operation(operation):
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def request(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """One JSON call of the Engine API (`path` unversioned, quoted by
        `socket_api.engine_path`): its decoded answer, or None for an empty one. Raises what
        docker-py raises for the same call (`NotFound`, `APIError`, requests' `ConnectionError`).
        Waits its turn as `call` does, and is counted and timed as `operation`."""
        client = self.client
        async with self._operation(operation):
            if self._socket is not None:
                return await self._socket.request(method, path, client.api._version, params, body)
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(
                self._executor, _blocking_request, client, method, path, params, body
            )

    async def create_container(self, params: dict[str, str], body: dict[str, Any]) -> str:
        """`POST /containers/create` with `create.create_request`'s query and body; the new ID."""
        created = await self.request(
            "create_container", "POST", "/containers/create", params=params, body=body
        )
        return str(created["Id"])

    async def start_container(self, container_id: str) -> None:
        await self.request("start", "POST", engine_path("/containers/{0}/start", container_id))

    async def inspect_container(self, container_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "inspect_container", "GET", engine_path("/containers/{0}/json", container_id)
        )
        return result

    async def inspect_image(self, ref: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "inspect_image", "GET", engine_path("/images/{0}/json", ref)
        )
        return result

    async def check_kind(self, expected: str) -> None:
        """The engine on the socket is `expected` ("docker" or "podman", `docker.engine`) by its
        own `version` answer; else RuntimeUnavailable, which names the one that answered."""
        try:
            version: dict[str, Any] = await self.call(self.client.version)
        except EngineErrors as exc:
            raise RuntimeUnavailable(f"the engine at {self.url} does not answer: {exc}") from exc
        found = engine_name(version)
        if found != expected:
            raise RuntimeUnavailable(
                f"the engine at {self.url} is {found} {version.get('Version', '')}, not {expected}: "
                f"set docker.engine: {found}"
            )

    async def close(self) -> None:
        for client in (self._client, self._stream_client):
            if client is not None:
                await self.call(client.close)
        if self._socket is not None:
            await self._socket.close()
        self._client = self._stream_client = None
        self._socket = None
        self._executor.shutdown(wait=False, cancel_futures=True)
