"""`/portForward/{namespace}/{pod}` over the WebSocket port-forward protocol.

What lives here: `parse_ports` (pure) and `port_forward_handler`. Per requested port `i`
(query `port`, as the apiserver sends it, or `ports`; repeated or comma-separated) channel
`2i` carries data both ways and channel `2i+1` errors from the kubelet; the first message
on each channel is the port number as 2 little-endian bytes (upstream
`pkg/kubelet/cri/streaming/portforward/websocket.go`). Each port gets one TCP connection to
the pod's IP (its sandbox's address on the Docker network, or the node IP with host
networking); the session ends when every connection has ended or the client closes.
Must not: know other streaming protocols (SPDY is not implemented).
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import WSMsgType, web

from vk_provider.kubeletapi import channels as ch
from vk_provider.kubeletapi.lookup import BadRequest, find_pod
from vk_provider.runtime.protocol import Runtime

SUBPROTOCOLS = (ch.V4, "portforward.k8s.io")
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


async def port_forward_handler(request: web.Request, runtime: Runtime, node_ip: str) -> web.StreamResponse:
    ports = parse_ports(request.query.getall("port", []) + request.query.getall("ports", []))
    info = request.match_info
    pod = await find_pod(runtime, info["namespace"], info["pod"])
    host = pod.sandbox.ip if pod.sandbox is not None and pod.sandbox.ip else node_ip
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise BadRequest(
            "port-forward needs a WebSocket upgrade (v4.channel.k8s.io);"
            " SPDY/3.1 is not implemented by this kubelet"
        )
    ws = web.WebSocketResponse(protocols=SUBPROTOCOLS, autoping=True, max_msg_size=0)
    ready = ws.can_prepare(request)
    offered = request.headers.get("Sec-WebSocket-Protocol", "").strip()
    if not ready.ok or (offered and ready.protocol is None):
        raise BadRequest(f"unsupported WebSocket subprotocol; this kubelet speaks {', '.join(SUBPROTOCOLS)}")
    await ws.prepare(request)
    loop = asyncio.get_running_loop()
    # Each port's connection, once dialled (None if it failed): the client may send before that.
    writers: list[asyncio.Future[asyncio.StreamWriter | None]] = [loop.create_future() for _ in ports]

    async def forward(index: int, port: int) -> None:
        header = port.to_bytes(2, "little")
        await ws.send_bytes(ch.frame(2 * index, header))
        await ws.send_bytes(ch.frame(2 * index + 1, header))
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            writers[index].set_result(None)
            message = f"error forwarding port {port} to pod {pod.uid}: dial tcp {host}:{port}: {exc}"
            await ws.send_bytes(ch.frame(2 * index + 1, message.encode()))
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
    return ws
