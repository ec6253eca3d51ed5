"""Clients that misbehave on purpose, over TLS to 127.0.0.1: for the listener and WebSocket abuse tests.

What lives here: `insecure_context`, `connect` (a TLS connection that verifies nothing), `half_open` (many
connections that send `first` and then nothing), `closed_within` (when each was closed by the
server), `raw_request` (one request's bytes, the server's answer), `websocket` (a raw
WebSocket upgrade offering permessage-deflate, with the response head) and `ws_frame` (a
masked client frame, optionally fragmented or with RSV1, the compressed bit). Must not:
assert anything about the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
import zlib

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def insecure_context() -> ssl.SSLContext:
    """A TLS client context that verifies nothing (the provider's self-signed certificate)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def connect(port: int) -> Connection:
    return await asyncio.open_connection("127.0.0.1", port, ssl=insecure_context())


async def half_open(port: int, count: int, first: bytes) -> list[Connection]:
    """`count` connections (20 handshakes at a time) that sent `first` and nothing more."""
    out: list[Connection] = []
    gate = asyncio.Semaphore(20)

    async def one() -> None:
        async with gate:
            reader, writer = await connect(port)
            if first:
                writer.write(first)
                await writer.drain()
            out.append((reader, writer))

    await asyncio.gather(*(one() for _ in range(count)))
    return out


async def closed_within(connections: list[Connection], deadline: float) -> list[float | None]:
    """Seconds until the server closed each connection (EOF or reset), None if still open at `deadline`."""
    start = time.monotonic()

    async def one(reader: asyncio.StreamReader) -> float | None:
        try:
            async with asyncio.timeout(deadline):
                while await reader.read(65536):
                    pass
        except TimeoutError:
            return None
        except (ConnectionError, ssl.SSLError):
            pass
        return time.monotonic() - start

    try:
        return await asyncio.gather(*(one(reader) for reader, _ in connections))
    finally:
        for _, writer in connections:
            writer.close()


async def raw_request(port: int, data: bytes) -> bytes:
    """Send `data` on a new connection and read until the server closes it (at most 30 s)."""
    reader, writer = await connect(port)
    try:
        writer.write(data)
        await writer.drain()
        chunks = []
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            async with asyncio.timeout(30):
                while chunk := await reader.read(65536):
                    chunks.append(chunk)
        return b"".join(chunks)
    finally:
        writer.close()


async def websocket(port: int, path: str, protocol: str) -> tuple[bytes, Connection]:
    """A WebSocket upgrade of `path` offering `protocol` and permessage-deflate: the response head
    and the connection."""
    reader, writer = await connect(port)
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Protocol: {protocol}\r\n"
            "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    return head, (reader, writer)


def ws_frame(payload: bytes, *, opcode: int = 2, fin: bool = True, rsv1: bool = False) -> bytes:
    """A client frame, masked with a zero key (so the payload reads as it is)."""
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    n = len(payload)
    if n < 126:
        head = bytes((first, 0x80 | n))
    elif n < 1 << 16:
        head = bytes((first, 0x80 | 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((first, 0x80 | 127)) + n.to_bytes(8, "big")
    return head + bytes(4) + payload


def deflated(payload: bytes) -> bytes:
    """`payload` as one permessage-deflate message body (RFC 7692: raw deflate, the tail removed)."""
    compress = zlib.compressobj(9, zlib.DEFLATED, -15)
    return (compress.compress(payload) + compress.flush(zlib.Z_SYNC_FLUSH))[:-4]


async def flood(connection: Connection, frames: bytes, budget: int) -> int:
    """Write `frames` until `budget` bytes went out or the server closed; the bytes written."""
    reader, writer = connection
    sent = 0
    with contextlib.suppress(ConnectionError, ssl.SSLError, RuntimeError):
        while sent < budget and not reader.at_eof() and not writer.is_closing():
            writer.write(frames)
            await asyncio.wait_for(writer.drain(), 30)
            sent += len(frames)
    writer.close()
    return sent
