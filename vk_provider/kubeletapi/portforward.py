"""`/portForward/{namespace}/{pod}`: over SPDY/3.1, a WebSocket SPDY tunnel, or WebSocket channels.

What lives here: `port_forward_handler` and the two ways a forwarded connection is carried:

- SPDY/3.1 (`X-Stream-Protocol-Version: portforward.k8s.io`, as the kubelet's
  `pkg/kubelet/cri/streaming/portforward/httpstream.go`), also inside binary WebSocket
  messages when the client asks for `SPDY/3.1+portforward.k8s.io` (kubectl >= 1.31's tunnel,
  which a real apiserver unwraps and the sandbox passes through): the client opens an
  `error` and a `data` stream per connection, paired by their `requestID` header and naming
  the `port`; this kubelet dials the port and copies bytes until either side is done,
  reporting a failure as text on the error stream.
- WebSocket channels (`v4.channel.k8s.io`, or no subprotocol; `websocket.go`): ports from the
  query (`port`, as the apiserver sends it, or `ports`; repeated or comma-separated); channel
  `2i` carries port i's data both ways and `2i+1` its errors, and the first message on each
  is the port as 2 little-endian bytes.

Every connection goes to the pod's address as the runtime gives it (`Runtime.pod_address`),
or the node IP when the pod shares the node's network. Must not: frame SPDY (spdy.py) or
upgrade connections (upgrade.py).
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import WSMsgType, web

from vk_provider.kubeletapi import channels as ch
from vk_provider.kubeletapi.lookup import BadRequest, find_pod
from vk_provider.kubeletapi.spdy import ByteChannel, SpdySession, SpdyStream
from vk_provider.kubeletapi.upgrade import (
    http_upgrade,
    is_spdy_upgrade,
    negotiate,
    negotiation_failure,
    websocket_channel,
    websocket_response,
)
from vk_provider.runtime.protocol import Runtime

PORTFORWARD_PROTOCOL = "portforward.k8s.io"
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
WEBSOCKET_PROTOCOLS = (TUNNEL_PROTOCOL, ch.V4)
CONNECT_TIMEOUT = 10.0
_READ_CHUNK = 64 * 1024


def parse_ports(values: list[str]) -> list[int]:
    ports: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if not part.isdigit() or not 0 < int(part) < 65536:
                raise BadRequest(f"invalid port {part!r}: ports must be between 1 and 65535")
            ports.append(int(part))
    if not ports:
        raise BadRequest("at least one port must be specified")
    return ports


class _Target:
    """Where a pod's ports are dialled, and how failures are worded (the kubelet's message)."""

    def __init__(self, host: str, pod_name: str, uid: str) -> None:
        self.host, self.pod_name, self.uid = host, pod_name, uid

    async def dial(self, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.wait_for(asyncio.open_connection(self.host, port), CONNECT_TIMEOUT)

    def failure(self, port: int | str, exc: BaseException) -> bytes:
        reason = "i/o timeout" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
        detail = f"dial tcp {self.host}:{port}: {reason}"  # Go's net.Dial wording
        return f"error forwarding port {port} to pod {self.pod_name}, uid {self.uid}: {detail}".encode()


async def port_forward_handler(request: web.Request, runtime: Runtime, node_ip: str) -> web.StreamResponse:
    info = request.match_info
    pod = await find_pod(runtime, info["namespace"], info["pod"])
    host = runtime.pod_address(pod) or node_ip
    target = _Target(host, f"{pod.name}_{pod.namespace}", pod.uid)
    if is_spdy_upgrade(request):
        protocol = negotiate(request, (PORTFORWARD_PROTOCOL,))
        if protocol is None:
            return negotiation_failure(request, (PORTFORWARD_PROTOCOL,))
        response, channel = await http_upgrade(request, protocol)
        await _serve_spdy(channel, target)
        return response
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise BadRequest("port-forward needs a SPDY/3.1 or WebSocket upgrade")
    ws = websocket_response(WEBSOCKET_PROTOCOLS)
    ready = ws.can_prepare(request)
    offered = request.headers.get("Sec-WebSocket-Protocol", "").strip()
    if not ready.ok or (offered and ready.protocol is None):
        raise BadRequest(
            f"unsupported WebSocket subprotocol; this kubelet speaks {', '.join(WEBSOCKET_PROTOCOLS)}"
        )
    if ready.protocol == TUNNEL_PROTOCOL:
        await ws.prepare(request)
        await _serve_spdy(websocket_channel(ws), target)
        return ws
    ports = parse_ports(request.query.getall("port", []) + request.query.getall("ports", []))
    await ws.prepare(request)
    await _serve_channels(ws, ports, target)
    return ws


# -- SPDY -----------------------------------------------------------------------------------------


async def _serve_spdy(channel: ByteChannel, target: _Target) -> None:
    spdy = SpdySession(channel)
    serving = asyncio.ensure_future(spdy.serve())
    pending: dict[str, dict[str, SpdyStream]] = {}
    forwards: set[asyncio.Future[None]] = set()
    try:
        while (stream := await spdy.streams.get()) is not None:
            pair = pending.setdefault(stream.headers.get("requestid", ""), {})
            pair[stream.headers.get("streamtype", "")] = stream
            if "data" in pair and "error" in pair:
                pending.pop(stream.headers.get("requestid", ""))
                task = asyncio.ensure_future(_forward_pair(spdy, pair["data"], pair["error"], target))
                forwards.add(task)
                task.add_done_callback(forwards.discard)
    finally:
        for forward in list(forwards):
            forward.cancel()
        await asyncio.gather(*forwards, return_exceptions=True)
        await spdy.close()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


async def _forward_pair(spdy: SpdySession, data: SpdyStream, error: SpdyStream, target: _Target) -> None:
    port_text = data.headers.get("port", "")
    try:
        try:
            port = parse_ports([port_text])[0]
            reader, writer = await target.dial(port)
        except (BadRequest, OSError, TimeoutError) as exc:
            await error.write(target.failure(port_text, exc))
            return

        async def to_pod() -> None:
            while chunk := await data.reader.read(_READ_CHUNK):
                writer.write(chunk)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()

        upstream = asyncio.ensure_future(to_pod())
        try:
            while chunk := await reader.read(_READ_CHUNK):
                await data.write(chunk)
        except OSError as exc:
            await error.write(target.failure(port, exc))
        finally:
            upstream.cancel()
            await asyncio.gather(upstream, return_exceptions=True)
            writer.close()
    finally:
        await data.close()
        await error.close()
        spdy.forget(data)
        spdy.forget(error)


# -- WebSocket channels ---------------------------------------------------------------------------


async def _serve_channels(ws: web.WebSocketResponse, ports: list[int], target: _Target) -> None:
    loop = asyncio.get_running_loop()
    # Each port's connection, once dialled (None if it failed): the client may send before that.
    writers: list[asyncio.Future[asyncio.StreamWriter | None]] = [loop.create_future() for _ in ports]

    async def forward(index: int, port: int) -> None:
        header = port.to_bytes(2, "little")
        await ws.send_bytes(ch.frame(2 * index, header))
        await ws.send_bytes(ch.frame(2 * index + 1, header))
        try:
            reader, writer = await target.dial(port)
        except (OSError, TimeoutError) as exc:
            writers[index].set_result(None)
            await ws.send_bytes(ch.frame(2 * index + 1, target.failure(port, exc)))
            return
        writers[index].set_result(writer)
        try:
            while data := await reader.read(_READ_CHUNK):
                await ws.send_bytes(ch.frame(2 * index, data))
        finally:
            writer.close()

    async def from_client() -> None:
        async for msg in ws:
            if msg.type != WSMsgType.BINARY or not msg.data:
                continue
            index, rest = divmod(msg.data[0], 2)
            if rest != 0 or index >= len(writers):
                continue
            writer = await writers[index]
            if writer is not None and not writer.is_closing():
                writer.write(msg.data[1:])
                await writer.drain()

    incoming = asyncio.ensure_future(from_client())
    outgoing = asyncio.ensure_future(asyncio.gather(*(forward(i, p) for i, p in enumerate(ports))))
    try:
        await asyncio.wait((incoming, outgoing), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (incoming, outgoing):
            task.cancel()
        await asyncio.gather(incoming, outgoing, return_exceptions=True)
        for future in writers:
            if future.done() and (writer := future.result()) is not None:
                writer.close()
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.close()
