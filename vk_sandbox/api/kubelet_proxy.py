"""Proxying pod logs, exec, attach and port-forward from the sandbox API to a node's kubelet.

What lives here: `proxy_to_kubelet(request, node, path, pki)`, `kubelet_address(node)` and
`relay_response` (an upstream answer streamed back, also pods/proxy's: pod_proxy.py).
Plain requests (logs, with `follow`) are forwarded with aiohttp's client and their body is
streamed back chunk by chunk. Upgrade requests (WebSocket `Upgrade: websocket`, SPDY
`Upgrade: SPDY/3.1`) are forwarded over a raw TLS connection; the kubelet's `101 Switching
Protocols` head is relayed to the client and then bytes are copied both ways, untouched, until
either side closes, so the client and the kubelet speak their streaming protocol end to end
(upstream `staging/src/k8s.io/apimachinery/pkg/util/proxy/
upgradeaware.go`). Two exceptions: a WebSocket exec or attach the kubelet refuses is answered on
the WebSocket with the Status the real server's stream translator sends, and a WebSocket log
request is read from the kubelet as a plain one and written to the client's WebSocket, as the
real server's StreamObject does.
Must not: otherwise parse or translate WebSocket/SPDY frames, or look anything up in the store
(the caller resolves the pod, the node and the kubelet path).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from vk_common.logging import get_logger
from vk_common.tasks import cancel_and_wait
from vk_sandbox.api import errors
from vk_sandbox.api.errors import ApiError
from vk_sandbox.pki.authority import SandboxPKI

log = get_logger("sandbox.kubelet-proxy")

DEFAULT_KUBELET_PORT = 10250
CONNECT_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0
# kubeadm runs the apiserver with --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname
# (the built-in default, pkg/kubelet/client/kubelet_client.go, starts with Hostname, which a
# virtual node's name rarely resolves to); the node's InternalIP comes first here too.
ADDRESS_PREFERENCE = ("InternalIP", "InternalDNS", "Hostname", "ExternalIP", "ExternalDNS")
FALLBACK_HOST = "127.0.0.1"

# Never forwarded: the sandbox authenticates to the kubelet with its client certificate, and
# hop-by-hop or framing headers belong to each connection (RFC 9110 §7.6.1).
_DROP_REQUEST = {
    "host",
    "authorization",
    "proxy-authorization",
    "content-length",
    "transfer-encoding",
    "keep-alive",
    "te",
    "trailer",
    "impersonate-user",
    "impersonate-group",
    "impersonate-uid",
}
_DROP_PLAIN_REQUEST = _DROP_REQUEST | {"connection", "upgrade"}
_DROP_RESPONSE = {"content-length", "transfer-encoding", "connection", "keep-alive", "trailer"}
_QUEUE_HIGH = 32
_QUEUE_LOW = 4
_READ_CHUNK = 64 * 1024


def kubelet_address(node: dict[str, Any]) -> tuple[str, int]:
    """The host and port the API server dials for this node's kubelet."""
    status = node.get("status") or {}
    addresses = status.get("addresses") or []
    host = FALLBACK_HOST
    for kind in ADDRESS_PREFERENCE:
        found = [a.get("address") for a in addresses if a.get("type") == kind and a.get("address")]
        if found:
            host = str(found[0])
            break
    endpoint = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    port = endpoint.get("Port") or endpoint.get("port") or 0
    return host, int(port) if int(port) > 0 else DEFAULT_KUBELET_PORT


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _target(request: web.Request, path: str) -> str:
    """The kubelet request target: `path` as given if it has a query, else the client's query."""
    if "?" in path or not request.query_string:
        return path
    return f"{path}?{request.query_string}"


def _dial_error(exc: BaseException, hostport: str) -> str:
    """Describe a failed dial the way Go's net package does (`dial tcp H:P: connect: ...`)."""
    if isinstance(exc, ConnectionRefusedError):
        detail = "connect: connection refused"
    elif isinstance(exc, TimeoutError):
        detail = "i/o timeout"
    elif isinstance(exc, aiohttp.ClientConnectorError) and exc.os_error is not None:
        return _dial_error(exc.os_error, hostport)
    else:
        detail = str(exc) or type(exc).__name__
    return f"dial tcp {hostport}: {detail}"


def _status_response(code: int, message: str) -> web.Response:
    # The real server wraps a non-API error with ErrorToAPIStatus: code 500, no reason
    # (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/status.go).
    body = ApiError(code, "", message).status()
    body.pop("reason", None)
    return web.json_response(body, status=code)


def _is_upgrade(request: web.Request) -> bool:
    connection = request.headers.get("Connection", "")
    return "upgrade" in connection.lower() and bool(request.headers.get("Upgrade"))


async def proxy_to_kubelet(
    request: web.Request, node: dict[str, Any], path: str, pki: SandboxPKI
) -> web.StreamResponse:
    """Forward `request` to the kubelet of `node` at `path` (e.g. `/containerLogs/ns/pod/c`).

    `path` may carry its own query string (the caller's translation of the API parameters to
    the kubelet's); without one, the client's query string is forwarded unchanged.
    """
    host, port = kubelet_address(node)
    target = _target(request, path)
    if _is_upgrade(request) and not _log_over_websocket(request, target):
        return await _proxy_upgrade(request, host, port, target, pki)
    return await _proxy_plain(request, host, port, target, pki)


# -- plain requests -------------------------------------------------------------------------------


async def _proxy_plain(
    request: web.Request, host: str, port: int, target: str, pki: SandboxPKI
) -> web.StreamResponse:
    url = f"https://{_hostport(host, port)}{target}"
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP_PLAIN_REQUEST}
    body = await request.read() if request.can_read_body else None
    # The client certificate is presented and the kubelet's serving certificate is not verified,
    # as kube-apiserver does without --kubelet-certificate-authority (kubernetes/kubernetes
    # pkg/kubelet/client/kubelet_client.go, MakeTransport: TLSClientConfig.Insecure).
    connector = aiohttp.TCPConnector(ssl=pki.ssl_client_context(), force_close=True)
    timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT, sock_connect=CONNECT_TIMEOUT)
    async with aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        auto_decompress=False,
        skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
    ) as session:
        try:
            upstream = await session.request(
                request.method, url, headers=headers, data=body, allow_redirects=False
            )
        except (TimeoutError, aiohttp.ClientConnectorError, aiohttp.InvalidURL, OSError) as exc:
            message = f'{request.method.capitalize()} "{url}": {_dial_error(exc, _hostport(host, port))}'
            log.warning("kubelet unreachable", extra={"err": message})
            return _status_response(500, message)
        async with upstream:
            checked = await _check_log_response(upstream, target)
            if checked is not None:
                return checked
            if _log_over_websocket(request, target):
                return await _log_to_websocket(request, upstream)
            return await relay_response(request, upstream)


async def relay_response(
    request: web.Request, upstream: aiohttp.ClientResponse, *, abort_cut_short: bool = False
) -> web.StreamResponse:
    """An upstream answer streamed back to the client as it comes: its status and headers but the
    hop-by-hop ones, its body chunk by chunk.

    By default a stream cut short (the upstream's or the client's) ends the client's answer as if
    complete, as the real server's StreamObject ends a log stream (io.Copy's error ignored). With
    `abort_cut_short` (pods/proxy) the error is raised instead: aiohttp drops the connection and
    the client sees the body incomplete, as the real server's ReverseProxy aborts a proxied
    answer (panic(http.ErrAbortHandler)).
    """
    response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
    for key, value in upstream.headers.items():
        if key.lower() not in _DROP_RESPONSE:
            response.headers.add(key, value)
    await response.prepare(request)
    try:
        async for chunk in upstream.content.iter_any():
            await response.write(chunk)
    except (ConnectionResetError, aiohttp.ClientError) as exc:
        if abort_cut_short:
            raise
        log.debug("log stream ended early", extra={"err": str(exc)})
        return response
    await response.write_eof()
    return response


def _log_over_websocket(request: web.Request, target: str) -> bool:
    """A WebSocket GET of pods/log: the real server reads the log from the kubelet over plain
    HTTP and writes it to the client's WebSocket itself (wsstream.IsWebSocketRequest in
    responsewriters.StreamObject), where exec and attach are proxied as upgrades."""
    return request.headers.get("Upgrade", "").lower() == "websocket" and target.startswith("/containerLogs/")


async def _log_to_websocket(request: web.Request, upstream: aiohttp.ClientResponse) -> web.StreamResponse:
    """The log stream as wsstream.Reader writes it (k8s.io/apimachinery pkg/util/httpstream/
    wsstream/stream.go, NewDefaultReaderProtocols): binary messages for `binary.k8s.io` or no
    protocol, base64 text messages for `base64.k8s.io`; the socket is closed at the log's end."""
    ws = web.WebSocketResponse(protocols=("binary.k8s.io", "base64.k8s.io"))
    await ws.prepare(request)
    try:
        async for chunk in upstream.content.iter_any():
            if ws.ws_protocol == "base64.k8s.io":
                await ws.send_str(base64.b64encode(chunk).decode())
            else:
                await ws.send_bytes(chunk)
    except (ConnectionResetError, aiohttp.ClientError) as exc:
        log.debug("log stream ended early", extra={"err": str(exc)})
    await ws.close()
    return ws


# The messages of NewGenericServerResponse (staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go).
_GENERIC_RESPONSES = {
    409: ("Conflict", "the server reported a conflict"),
    404: ("NotFound", "the server could not find the requested resource"),
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted,"
        " but may still be processing the request",
    ),
    429: ("TooManyRequests", "the server has received too many requests and has asked us to try again later"),
}
_MAX_ERROR_BODY = 50000


def kubelet_error(code: int, body: str, pod: str) -> ApiError:
    """A kubelet's non-2xx answer to a log request as the API error the real server returns
    (GenericHttpResponseChecker for pods/log, staging/src/k8s.io/apiserver/pkg/registry/generic/
    rest/response_checker.go): 500 and 400 keep the kubelet's text, the rest get the generic message."""
    if code == 500:
        return errors.internal_error(body)
    if code == 400:
        return errors.bad_request(body)
    if code == 403:
        reason, message = "Forbidden", body
    elif code in _GENERIC_RESPONSES:
        reason, message = _GENERIC_RESPONSES[code]
    elif code >= 500:
        # %q in Go; JSON string quoting agrees for the text a kubelet sends.
        reason = "InternalError"
        message = f"an error on the server ({json.dumps(body)}) has prevented the request from succeeding"
    else:
        reason = ""
        message = f"the server responded with the status code {code} but did not return more information"
    return ApiError(code, reason, f"{message} ( pods/log {pod})", {"name": pod, "kind": "pods/log"})


async def _check_log_response(upstream: aiohttp.ClientResponse, target: str) -> web.Response | None:
    parts = target.split("?", 1)[0].split("/")
    if len(parts) < 4 or parts[1] != "containerLogs" or 200 <= upstream.status <= 206:
        return None
    body = (await upstream.content.read(_MAX_ERROR_BODY)).decode("utf-8", "replace")
    error = kubelet_error(upstream.status, body, parts[3])
    return web.json_response(error.status(), status=error.code)


# -- upgrade requests -----------------------------------------------------------------------------


class _ClientFeed:
    """Receives the client's bytes after the upgrade from aiohttp's protocol (`set_parser`)."""

    def __init__(self, transport: asyncio.Transport | None) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._transport = transport
        self._paused = False

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.queue.put_nowait(bytes(data))
        if not self._paused and self.queue.qsize() >= _QUEUE_HIGH and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        return False, b""

    def feed_eof(self) -> None:
        self.queue.put_nowait(None)

    async def get(self) -> bytes | None:
        data = await self.queue.get()
        if self._paused and self.queue.qsize() <= _QUEUE_LOW and self._transport is not None:
            self._paused = False
            with contextlib.suppress(RuntimeError):
                self._transport.resume_reading()
        return data


def _request_head(request: web.Request, hostport: str, target: str) -> bytes:
    lines = [f"{request.method} {target} HTTP/1.1", f"Host: {hostport}"]
    lines += [f"{k}: {v}" for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _parse_head(head: bytes) -> tuple[int, str, CIMultiDict[str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ValueError(f"malformed status line {lines[0]!r}")
    headers: CIMultiDict[str] = CIMultiDict()
    for line in lines[1:]:
        if line:
            key, _, value = line.partition(":")
            headers.add(key.strip(), value.strip())
    return int(parts[1]), (parts[2] if len(parts) > 2 else ""), headers


async def _read_body(reader: asyncio.StreamReader, headers: CIMultiDict[str]) -> bytes:
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return bytes(body)
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    if "Content-Length" in headers:
        return await reader.readexactly(int(headers["Content-Length"]))
    return await reader.read()


async def _proxy_upgrade(
    request: web.Request, host: str, port: int, target: str, pki: SandboxPKI
) -> web.StreamResponse:
    hostport = _hostport(host, port)
    try:
        reader, writer = await asyncio.wait_for(  # same TLS as above: client cert, no verification
            asyncio.open_connection(host, port, ssl=pki.ssl_client_context()), CONNECT_TIMEOUT
        )
    except (TimeoutError, OSError) as exc:
        # UpgradeAwareHandler's dial failure (upgradeaware.go: "error dialing backend").
        message = f"error dialing backend: {_dial_error(exc, hostport)}"
        log.warning("kubelet unreachable", extra={"err": message})
        return _status_response(500, message)
    try:
        writer.write(_request_head(request, hostport, target))
        await writer.drain()
        status, reason, headers = _parse_head((await reader.readuntil(b"\r\n\r\n"))[:-4])
        if status != 101:
            body = await asyncio.wait_for(_read_body(reader, headers), CONNECT_TIMEOUT * 3)
            if _translated_stream(request, target):
                return await _websocket_status(request, _upgrade_failure(body))
            plain = web.Response(status=status, reason=reason or None, body=body)
            for key, value in headers.items():
                if key.lower() not in _DROP_RESPONSE:
                    plain.headers.add(key, value)
            return plain
        return await _pipe(request, reader, writer, reason, headers)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        message = f"error proxying to backend: {exc}"
        log.warning("kubelet upgrade failed", extra={"err": message})
        return _status_response(500, message)
    finally:
        writer.close()
        # A kubelet that never answers the TLS close_notify must not hold the handler for long.
        with contextlib.suppress(OSError, TimeoutError):  # ssl.SSLError is an OSError
            await asyncio.wait_for(writer.wait_closed(), CLOSE_TIMEOUT)


def _translated_stream(request: web.Request, target: str) -> bool:
    """Whether the real apiserver would translate this request: a WebSocket exec or attach,
    which it serves itself and turns into SPDY towards the kubelet (StreamTranslatorHandler,
    TranslateStreamCloseWebsocketRequests, on by default since 1.30)."""
    path = target.split("?", 1)[0]
    return request.headers.get("Upgrade", "").lower() == "websocket" and path.startswith(
        ("/exec/", "/attach/")
    )


def _upgrade_failure(body: bytes) -> dict[str, Any]:
    """The Status of a refused kubelet upgrade as the translator reports it: a Status body as
    it is, otherwise client-go's SPDY round tripper's `unable to upgrade connection: <body>`
    (spdy/roundtripper.go) as an InternalError (streamtranslator.go ServeHTTP)."""
    with contextlib.suppress(ValueError):
        status = json.loads(body)
        if isinstance(status, dict) and status.get("kind") == "Status":
            return status
    text = body.decode("utf-8", "replace").strip()
    return errors.internal_error(f"unable to upgrade connection: {text}").status()


async def _websocket_status(request: web.Request, status: dict[str, Any]) -> web.StreamResponse:
    """Accept the client's WebSocket, send `status` on the error channel (3), close.

    Upstream: staging/src/k8s.io/apiserver/pkg/util/proxy/streamtranslator.go (the WebSocket is
    upgraded before the SPDY dial, so a refused dial is a Status on the stream, not an HTTP error).
    """
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    ws = web.WebSocketResponse(
        protocols=[p for p in offered if p.endswith(".channel.k8s.io") and "base64" not in p]
    )
    await ws.prepare(request)
    await ws.send_bytes(b"\x03" + json.dumps(status, separators=(",", ":")).encode())
    await ws.close()
    return ws


async def _pipe(
    request: web.Request,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    reason: str,
    headers: CIMultiDict[str],
) -> web.StreamResponse:
    response = web.StreamResponse(status=101, reason=reason or "Switching Protocols")
    for key, value in headers.items():
        response.headers.add(key, value)
    response.force_close()
    await response.prepare(request)
    await response.write(b"")  # send the 101 head now; aiohttp may buffer it until the first body write
    feed = _ClientFeed(request.transport)
    request.protocol.set_parser(feed)  # type: ignore[arg-type]

    async def kubelet_to_client() -> None:
        while data := await reader.read(_READ_CHUNK):
            await response.write(data)

    async def client_to_kubelet() -> None:
        while (data := await feed.get()) is not None:
            writer.write(data)
            await writer.drain()

    tasks = [asyncio.ensure_future(kubelet_to_client()), asyncio.ensure_future(client_to_kubelet())]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.debug("upgraded stream ended", extra={"err": str(task.exception())})
    finally:
        await cancel_and_wait(*tasks)
    return response
