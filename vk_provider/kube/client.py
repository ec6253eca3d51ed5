"""Dict-based access to the apiserver: GET/POST/PUT/PATCH/DELETE and watch, JSON in and out as dicts.

What lives here: `KubeClient` (one shared transport, a qps/burst token bucket, and views
of it with a bucket of their own for Events and heartbeats (`with_own_limit`), the
right Content-Type per patch type, `ApiStatusError` built from the metav1.Status body,
watch as an async iterator of raw event dicts, an `on_forbidden` hook called on every 403,
every request counted and timed by method and code in its `metrics`, the one choke point),
`make_kube_client(cfg)` which loads the
credentials (kubeconfig file or in-cluster, `load_configuration`) through kubernetes_asyncio,
`client_certificate_configuration` (the same apiserver with a client certificate as the only
credentials, for `kubernetes.credentials: node`), `KubeClient.swap_api_client` (new
credentials for the requests to come, without a restart), and the pure
helpers behind them (`TokenBucket`, `LineDecoder`, `status_error`, `retry_after`). The one
retry it makes is client-go's: an answer carrying `Retry-After` (429, or a 5xx) is sent again
after that many seconds, up to 10 times, one log line per retry. kubernetes_asyncio is
used only for its configuration loading, its auth (token refresh), its TLS context and its
aiohttp session (watches), under lean requests of ours (kube/transport.py: one-shot requests
written in one piece on kept-alive connections, no environment read per request, no walk of
the body); no generated model classes. Must not: retry anything else, cache, or interpret
objects; that is the callers' job (reflector, status manager, node agent).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import aiohttp
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import load_incluster_config, load_kube_config

from vk_common.logging import get_logger
from vk_provider import USER_AGENT
from vk_provider.config import KubernetesConfig
from vk_provider.kube.transport import ApiRequest, ApiTransport, api_client_for
from vk_provider.metrics import ProviderMetrics
from vk_provider.wire import Reply

log = get_logger("kube.client")

PATCH_CONTENT_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
}
DEFAULT_REQUEST_TIMEOUT = 30.0
# A watch with timeoutSeconds gets this much slack on the socket read before we call it dead.
WATCH_READ_SLACK = 30.0
# client-go's rest.Request: an answer with Retry-After is sent again at most this many times.
MAX_RETRIES = 10

_REASONS_BY_CODE = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def _namespace_terminating(error: ApiStatusError) -> bool:
    """A 403 of the NamespaceLifecycle admission ("unable to create new content in namespace ...
    because it is being terminated", cause NamespaceTerminating): no permission is missing."""
    causes = (error.body.get("details") or {}).get("causes") or []
    return any(isinstance(c, dict) and c.get("reason") == "NamespaceTerminating" for c in causes)


class ApiStatusError(Exception):
    """An error answer of the apiserver, from its metav1.Status body (or the bare HTTP status)."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body: dict[str, Any] = body or {}


class ApiConnectionError(ApiStatusError):
    """No answer at all (connection refused, reset, timeout); `status` is 0."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "ConnectionError", message)


def status_error(http_status: int, raw: bytes) -> ApiStatusError:
    """Build the error from an error response: the Status body when there is one, else the HTTP status."""
    body: dict[str, Any] = {}
    try:
        decoded = json.loads(raw) if raw else {}
        if isinstance(decoded, dict):
            body = decoded
    except ValueError:
        pass
    if body.get("kind") == "Status":
        code = body.get("code") or http_status
        return ApiStatusError(
            int(code),
            str(body.get("reason") or _REASONS_BY_CODE.get(int(code), "Unknown")),
            str(body.get("message", "")),
            body,
        )
    text = raw.decode("utf-8", "replace").strip()[:1000]
    return ApiStatusError(http_status, _REASONS_BY_CODE.get(http_status, "Unknown"), text, body)


class TokenBucket:
    """client-go's flowcontrol token bucket: `qps` tokens a second, at most `burst` saved up.

    `reserve()` takes one token and returns how long the caller must wait for it (0 when one
    was available); tokens may go negative so waiters queue up in order. qps <= 0 means unlimited.
    """

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()

    def reserve(self) -> float:
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)


class LineDecoder:
    """Splits a byte stream into newline-terminated lines, whatever the chunking."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        self._buffer.extend(chunk)
        lines: list[bytes] = []
        while True:
            index = self._buffer.find(b"\n")
            if index < 0:
                return lines
            line = bytes(self._buffer[:index]).strip()
            del self._buffer[: index + 1]
            if line:
                lines.append(line)

    def flush(self) -> list[bytes]:
        """What is left at end of stream (an event without its final newline)."""
        rest = bytes(self._buffer).strip()
        self._buffer.clear()
        return [rest] if rest else []


def retry_after(http_status: int, header: str | None) -> int | None:
    """The seconds to wait before sending a request again, when its answer asks for that: a 429
    or any 5xx carrying an integer `Retry-After` (client-go's rest `checkWait`); else None."""
    if http_status != 429 and http_status < 500:
        return None
    try:
        return max(0, int(header)) if header is not None else None
    except ValueError:
        return None


def encode_params(params: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """Query parameters as the apiserver expects them: booleans lower-case, None dropped."""
    result: list[tuple[str, str]] = []
    for key, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, bool):
            result.append((key, "true" if value else "false"))
        else:
            result.append((key, str(value)))
    return result


def decode_event(line: bytes) -> dict[str, Any]:
    event = json.loads(line)
    if not isinstance(event, dict) or "type" not in event:
        raise ValueError(f"not a watch event: {line[:200]!r}")
    return event


class _Answered(Protocol):
    """What `KubeClient._send` reads of an answer: a `Reply`, or a watch's aiohttp response."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


_Sent = TypeVar("_Sent", bound=_Answered)

Forbidden = Callable[[str, str, Mapping[str, Any] | None, str], None]


@dataclass
class _Connection:
    """What every rate-limited view of one client shares: the transport and its credentials,
    the watches under way, the 403 hook."""

    api: ApiTransport
    # The watches under way (their responses), and those `swap_api_client` ended.
    watches: set[aiohttp.ClientResponse] = field(default_factory=set)
    ended: set[aiohttp.ClientResponse] = field(default_factory=set)
    on_forbidden: Forbidden | None = None


class KubeClient:
    """JSON-over-HTTP to one apiserver; every method takes an absolute API path like `/api/v1/nodes/x`."""

    def __init__(
        self,
        api_client: ApiTransport,
        *,
        qps: float = 50.0,
        burst: int = 100,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        api_client.user_agent = USER_AGENT
        self._connection = _Connection(api_client)
        # Requests by method and code; the reflectors count their watch restarts here too.
        self.metrics = metrics or ProviderMetrics()
        self._bucket = TokenBucket(qps, burst)
        self._timeout = request_timeout

    def with_own_limit(self, qps: float, burst: int) -> KubeClient:
        """This client (its connections, credentials, watches, metrics and 403 hook) with a
        token bucket of its own, as the kubelet's separate clientsets: its EventClient
        (eventRecordQPS / eventBurst) and its HeartbeatClient (no limit), so that Events and
        the node's heartbeats neither wait behind nor hold up the pods' requests
        (k8s.io/kubernetes cmd/kubelet/app/server.go, eventClientConfig, heartbeatClientConfig).
        qps <= 0: no limit."""
        view = copy.copy(self)
        view._bucket = TokenBucket(qps, burst)
        return view

    @property
    def on_forbidden(self) -> Forbidden | None:
        """Called with (method, path, params, message) on every 403 (kube/permissions.py)."""
        return self._connection.on_forbidden

    @on_forbidden.setter
    def on_forbidden(self, hook: Forbidden | None) -> None:
        self._connection.on_forbidden = hook

    @property
    def _api(self) -> ApiTransport:
        return self._connection.api

    def _refused(
        self, method: str, path: str, params: Mapping[str, Any] | None, error: ApiStatusError
    ) -> None:
        if error.status == 403 and self.on_forbidden is not None and not _namespace_terminating(error):
            self.on_forbidden(method, path, params, error.message)

    async def _send(self, method: str, path: str, send: Callable[[], Awaitable[_Sent]]) -> _Sent:
        """One request, made by `send`; an answer asking to come back later (`retry_after`) is
        made again after the wait it names, at most MAX_RETRIES times, each time through the
        token bucket (client-go's rest.Request with its withRetry)."""
        retries = 0
        while True:
            await self._bucket.acquire()
            began = time.monotonic()
            code = "<error>"  # client-go's code label when there is no answer
            try:
                answer = await send()
                code = str(answer.status)
            except (aiohttp.ClientError, OSError) as exc:
                raise ApiConnectionError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
            finally:
                self.metrics.rest_client_requests.labels(method, code).inc()
                self.metrics.rest_client_request_duration.labels(method).observe(time.monotonic() - began)
            wait = retry_after(answer.status, answer.headers.get("retry-after"))
            if wait is None or retries >= MAX_RETRIES:
                return answer
            if isinstance(answer, aiohttp.ClientResponse):
                answer.release()
            retries += 1
            log.info(
                "apiserver answered with Retry-After; sending the request again",
                extra={
                    "verb": method,
                    "path": path,
                    "code": answer.status,
                    "retryAfterSeconds": wait,
                    "retry": retries,
                    "maxRetries": MAX_RETRIES,
                },
            )
            await asyncio.sleep(wait)

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        query = encode_params(params)

        request = ApiRequest(method, path, query, content_type, data)

        def send() -> Awaitable[Reply]:
            return self._api.exchange(request, self._timeout)

        reply = await self._send(method, path, send)
        if not 200 <= reply.status <= 299:
            error = status_error(reply.status, reply.body)
            self._refused(method, path, params, error)
            raise error
        if not reply.body:
            return {}
        decoded = json.loads(reply.body)
        return decoded if isinstance(decoded, dict) else {"items": decoded}

    async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._request("GET", path, params=params)

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._request("POST", path, body=body)

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._request("PUT", path, body=body)

    async def patch(
        self, path: str, body: dict[str, Any] | list[Any], patch_type: str = "strategic"
    ) -> dict[str, Any]:
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            known = sorted(PATCH_CONTENT_TYPES)
            raise ValueError(f"unknown patch type {patch_type!r}; use one of {known}") from None
        return await self._request("PATCH", path, body=body, content_type=content_type)

    async def delete(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._request("DELETE", path, body=body)

    async def watch(
        self, path: str, params: dict[str, Any] | None = None
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Raw watch events `{"type", "object"}` until the server ends the stream.

        ERROR events are yielded as they come (the reflector turns a 410 into a relist);
        an error answer before the stream starts raises `ApiStatusError`, a broken stream
        `ApiConnectionError`. Close early with `contextlib.aclosing(...)`.
        """
        query = dict(params or {})
        query["watch"] = True
        server_timeout = query.get("timeoutSeconds")
        timeout = aiohttp.ClientTimeout(
            sock_connect=self._timeout,
            sock_read=float(server_timeout) + WATCH_READ_SLACK if server_timeout else None,
        )
        request = ApiRequest("GET", path, encode_params(query))

        def send() -> Awaitable[aiohttp.ClientResponse]:
            return self._api.send(request, timeout)

        response = await self._send("GET", path, send)
        self._connection.watches.add(response)
        try:
            if not 200 <= response.status <= 299:
                error = status_error(response.status, await response.read())
                self._refused("GET", path, query, error)
                raise error
            decoder = LineDecoder()
            try:
                async for chunk in response.content.iter_any():
                    for line in decoder.feed(chunk):
                        yield decode_event(line)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                if response in self._connection.ended:
                    return  # new credentials (swap_api_client): the stream ends as at its timeout
                raise ApiConnectionError(f"watch {path}: {type(exc).__name__}: {exc}") from exc
            if response in self._connection.ended:
                return
            for line in decoder.flush():
                yield decode_event(line)
        finally:
            self._connection.watches.discard(response)
            self._connection.ended.discard(response)
            response.close()

    def swap_api_client(self, api_client: ApiTransport) -> ApiTransport:
        """Send every request from now on through `api_client` (new credentials: a renewed
        client certificate) and return the one used until now, for the caller to close once
        the requests under way on it are done. The watches under way end now, as a watch ends
        at its timeout (their readers watch again, with the new credentials), as the kubelet
        closes its connections when its certificate rotates (k8s.io/kubernetes
        pkg/kubelet/certificate/transport.go); closing the old session under a reader would
        leave it waiting forever (aiohttp drops the payload of a closed connection)."""
        api_client.user_agent = USER_AGENT
        old, self._connection.api = self._connection.api, api_client
        for response in self._connection.watches:
            self._connection.ended.add(response)
            response.close()
        return old

    async def close(self) -> None:
        await self._api.close()


def kubeconfig_path(cfg: KubernetesConfig) -> str | None:
    """`kubernetes.kubeconfig`, else `$KUBECONFIG`; None means in-cluster (or ~/.kube/config outside one)."""
    if cfg.kubeconfig:
        return cfg.kubeconfig
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    default = Path.home() / ".kube" / "config"
    return str(default) if default.exists() else None


async def load_configuration(cfg: KubernetesConfig) -> Configuration:
    """The apiserver's address and credentials: the kubeconfig file, else in-cluster."""
    configuration = Configuration()
    path = kubeconfig_path(cfg)
    if path is not None:
        await load_kube_config(config_file=path, client_configuration=configuration, persist_config=False)
        log.info("apiserver from kubeconfig", extra={"host": configuration.host, "kubeconfig": str(path)})
    else:
        load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        log.info("apiserver from the in-cluster service account", extra={"host": configuration.host})
    return configuration


def client_certificate_configuration(base: Configuration, pem_file: Path) -> Configuration:
    """`base`'s apiserver (address, CA, TLS server name, proxy) with the client certificate and
    key of `pem_file` as the only credentials: no token, no basic auth."""
    configuration = Configuration(host=base.host)
    configuration.ssl_ca_cert = base.ssl_ca_cert
    configuration.verify_ssl = base.verify_ssl
    configuration.tls_server_name = base.tls_server_name
    configuration.proxy = base.proxy
    configuration.cert_file = str(pem_file)
    configuration.key_file = str(pem_file)
    return configuration


async def make_kube_client(
    cfg: KubernetesConfig,
    *,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    metrics: ProviderMetrics | None = None,
    configuration: Configuration | None = None,
) -> KubeClient:
    """Build the client for `configuration`, by default the one `load_configuration` loads."""
    if configuration is None:
        configuration = await load_configuration(cfg)
    return KubeClient(
        api_client_for(configuration),
        qps=cfg.qps,
        burst=cfg.burst,
        request_timeout=request_timeout,
        metrics=metrics,
    )
