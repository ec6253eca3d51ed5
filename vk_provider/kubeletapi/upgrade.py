"""Byte channels for SPDY sessions: an upgraded HTTP connection, or a WebSocket tunnel.

What lives here: `negotiate` (the `X-Stream-Protocol-Version` handshake of
`k8s.io/apimachinery/pkg/util/httpstream`: the first protocol the client offers that the
server supports), `http_upgrade`, which answers `101 Switching Protocols` with
`Upgrade: SPDY/3.1` and takes the raw connection over from aiohttp, and `websocket_channel`,
which carries a byte stream in binary WebSocket messages (client-go's
`SPDY/3.1+portforward.k8s.io` tunnel), and `websocket_response`, the WebSocket every stream
of this kubelet is served on: no permessage-deflate (a compressed frame is a protocol error
that closes it), and a message of `MAX_MESSAGE` (1 MiB) or more closes it with 1009 before
its payload is buffered, fragmented or not (kubectl sends at most 32 KiB and a channel byte
per message: client-go's io.Copy chunks). Must not: parse SPDY (spdy.py).
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import WSMsgType, web

from vk_provider.kubeletapi.spdy import ByteChannel

PROTOCOL_HEADER = "X-Stream-Protocol-Version"
MAX_MESSAGE = 1 << 20
_HIGH_WATER = 64


def offered_protocols(request: web.Request) -> list[str]:
    return [p.strip() for h in request.headers.getall(PROTOCOL_HEADER, []) for p in h.split(",") if p.strip()]


def negotiate(request: web.Request, supported: tuple[str, ...]) -> str | None:
    for protocol in offered_protocols(request):
        if protocol in supported:
            return protocol
    return None


def negotiation_failure(request: web.Request, supported: tuple[str, ...]) -> web.Response:
    # httpstream.Handshake's answer when nothing matches.
    offered = offered_protocols(request)
    return web.Response(
        status=403,
        text="unable to upgrade: unable to negotiate protocol: "
        f"client supports {offered}, server supports {list(supported)}\n",
    )


def is_spdy_upgrade(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower().startswith("spdy/")


class _Feed:
    """Receives the client's bytes after the upgrade (aiohttp's `set_parser` protocol)."""

    def __init__(self, transport: asyncio.Transport | None) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._transport = transport
        self._paused = False

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.queue.put_nowait(bytes(data))
        if not self._paused and self.queue.qsize() >= _HIGH_WATER and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        return False, b""

    def feed_eof(self) -> None:
        self.queue.put_nowait(b"")

    async def read(self) -> bytes:
        data = await self.queue.get()
        if self._paused and self.queue.qsize() < _HIGH_WATER // 4 and self._transport is not None:
            self._paused = False
            with contextlib.suppress(RuntimeError):
                self._transport.resume_reading()
        return data


async def http_upgrade(request: web.Request, protocol: str) -> tuple[web.StreamResponse, ByteChannel]:
    response = web.StreamResponse(status=101, reason="Switching Protocols")
    response.headers.update({"Connection": "Upgrade", "Upgrade": "SPDY/3.1", PROTOCOL_HEADER: protocol})
    response.force_close()
    await response.prepare(request)
    await response.write(b"")  # the 101 head now
    feed = _Feed(request.transport)
    request.protocol.set_parser(feed)  # type: ignore[arg-type]

    async def close() -> None:
        if request.transport is not None:
            request.transport.close()

    return response, ByteChannel(read=feed.read, write=response.write, close=close)


def websocket_response(protocols: tuple[str, ...]) -> web.WebSocketResponse:
    return web.WebSocketResponse(protocols=protocols, autoping=True, max_msg_size=MAX_MESSAGE, compress=False)


def websocket_channel(ws: web.WebSocketResponse) -> ByteChannel:
    async def read() -> bytes:
        while True:
            msg = await ws.receive()
            if msg.type == WSMsgType.BINARY:
                if msg.data:
                    return bytes(msg.data)
            elif msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                return b""

    async def close() -> None:
        await ws.close()

    return ByteChannel(read=read, write=ws.send_bytes, close=close)
