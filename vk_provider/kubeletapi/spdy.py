"""SPDY/3.1 framing and a server-side session, as Kubernetes streaming clients speak it.

What lives here: `SpdySession`, the server end of one SPDY/3.1 connection over any byte
channel (`ByteChannel`: an upgraded HTTP connection, or WebSocket binary messages for
`SPDY/3.1+portforward.k8s.io` tunnels): it reads frames, answers every SYN_STREAM with a
SYN_REPLY and hands the new `SpdyStream` (its headers, a reader, write/close) to the
caller, echoes client PINGs, and writes DATA frames with FIN. Header blocks are zlib
streams per direction with the SPDY/3 dictionary (draft-mbelshe-httpbis-spdy-00 §2.6.10;
the dictionary bytes are the specification's). Flow control is not enforced: WINDOW_UPDATE
and SETTINGS are ignored, as moby/spdystream (client-go's SPDY library) does.
Must not: know what the streams carry (exec.py and portforward.py decide).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
MAX_DATA = 32 * 1024
RST_CANCEL = 5

_DICTIONARY_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
    "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
    "cache-control", "connection", "content-base", "content-encoding", "content-language",
    "content-length", "content-location", "content-md5", "content-range", "content-type", "date",
    "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since", "if-none-match",
    "if-range", "if-unmodified-since", "last-modified", "location", "max-forwards", "pragma",
    "proxy-authenticate", "proxy-authorization", "range", "referer", "retry-after", "server", "te",
    "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
    "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url", "public",
    "set-cookie", "keep-alive", "origin",
)  # fmt: skip
_DICTIONARY_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauth"
    "orized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unava"
    "ilableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat,"
    " Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xm"
    "l,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-"
    "8859-1,utf-,*,enq=0."
)
DICTIONARY = (
    b"".join(struct.pack(">I", len(w)) + w.encode() for w in _DICTIONARY_WORDS) + _DICTIONARY_TAIL.encode()
)


class SpdyError(Exception):
    """The peer broke the framing; the session ends."""


@dataclass
class ByteChannel:
    """The transport under a session: `read()` returns b"" at EOF."""

    read: Callable[[], Awaitable[bytes]]
    write: Callable[[bytes], Awaitable[None]]
    close: Callable[[], Awaitable[None]]


class _Buffer:
    def __init__(self, read: Callable[[], Awaitable[bytes]]) -> None:
        self._read = read
        self._data = bytearray()

    async def exactly(self, n: int) -> bytes:
        while len(self._data) < n:
            chunk = await self._read()
            if not chunk:
                raise EOFError
            self._data += chunk
        out = bytes(self._data[:n])
        del self._data[:n]
        return out


def encode_headers(headers: dict[str, str]) -> bytes:
    block = struct.pack(">I", len(headers))
    for name, value in headers.items():
        n, v = name.lower().encode(), value.encode()
        block += struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v
    return block


def decode_headers(block: bytes) -> dict[str, str]:
    """Lower-case names; repeated values (NUL-separated on the wire) keep the first."""
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        pos = 4
        headers: dict[str, str] = {}
        for _ in range(count):
            (n,) = struct.unpack_from(">I", block, pos)
            name = block[pos + 4 : pos + 4 + n].decode("latin-1").lower()
            pos += 4 + n
            (m,) = struct.unpack_from(">I", block, pos)
            headers.setdefault(name, block[pos + 4 : pos + 4 + m].decode("latin-1").split("\x00")[0])
            pos += 4 + m
    except struct.error as exc:
        raise SpdyError(f"malformed header block: {exc}") from exc
    return headers


def control_frame(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def data_frame(stream_id: int, data: bytes, fin: bool = False) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data


@dataclass
class SpdyStream:
    id: int
    headers: dict[str, str]
    session: SpdySession
    reader: asyncio.StreamReader = field(default_factory=asyncio.StreamReader)
    closed: bool = False  # our side sent FIN (or reset)

    async def write(self, data: bytes) -> None:
        if self.closed:
            return
        for start in range(0, len(data), MAX_DATA):
            await self.session.send(data_frame(self.id, data[start : start + MAX_DATA]))

    async def close(self) -> None:
        """Half-close: FIN on our side (the peer's io.ReadAll / io.Copy ends)."""
        if not self.closed:
            self.closed = True
            await self.session.send(data_frame(self.id, b"", fin=True))

    async def reset(self) -> None:
        if not self.closed:
            self.closed = True
            await self.session.send(control_frame(RST_STREAM, 0, struct.pack(">II", self.id, RST_CANCEL)))


class SpdySession:
    """The server side of one SPDY/3.1 connection. Run `serve()`; new streams arrive in `streams`."""

    def __init__(self, channel: ByteChannel) -> None:
        self._channel = channel
        self._buffer = _Buffer(channel.read)
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)
        self._write_lock = asyncio.Lock()
        self._by_id: dict[int, SpdyStream] = {}
        self._last_id = 0
        self.streams: asyncio.Queue[SpdyStream | None] = asyncio.Queue()  # None: the session ended
        self.gone = False

    async def send(self, frame: bytes) -> None:
        if self.gone:
            return
        async with self._write_lock:
            await self._channel.write(frame)

    def _headers(self, compressed: bytes) -> dict[str, str]:
        try:
            return decode_headers(self._inflate.decompress(compressed))
        except zlib.error as exc:
            raise SpdyError(f"header block does not inflate: {exc}") from exc

    async def serve(self) -> None:
        """Read frames until the peer closes or goes away; then every stream sees EOF."""
        try:
            while True:
                head = await self._buffer.exactly(8)
                first, second = struct.unpack(">II", head)
                flags, length = second >> 24, second & 0xFFFFFF
                payload = await self._buffer.exactly(length)
                if first & 0x80000000:
                    if not await self._control((first >> 16) & 0x7FFF, first & 0xFFFF, flags, payload):
                        return
                else:
                    self._data(first & 0x7FFFFFFF, flags, payload)
        except (EOFError, ConnectionError):
            return
        finally:
            self.gone = True
            for stream in self._by_id.values():
                stream.reader.feed_eof()
            self.streams.put_nowait(None)

    async def _control(self, version: int, kind: int, flags: int, payload: bytes) -> bool:
        if version != VERSION:
            raise SpdyError(f"unsupported SPDY version {version}")
        if kind == SYN_STREAM:
            stream_id = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
            stream = SpdyStream(stream_id, self._headers(payload[10:]), self)
            self._last_id = max(self._last_id, stream_id)
            self._by_id[stream_id] = stream
            if flags & FLAG_FIN:
                stream.reader.feed_eof()
            reply = struct.pack(">I", stream_id) + self._compress({})
            await self.send(control_frame(SYN_REPLY, 0, reply))
            self.streams.put_nowait(stream)
        elif kind == RST_STREAM:
            stream_id = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
            gone = self._by_id.pop(stream_id, None)
            if gone is not None:
                gone.closed = True
                gone.reader.feed_eof()
        elif kind == PING:
            await self.send(control_frame(PING, 0, payload))
        elif kind == GOAWAY:
            return False
        elif kind == HEADERS:
            self._headers(payload[4:])  # keeps the inflate stream in step; the content is unused
        return True  # SETTINGS, WINDOW_UPDATE and unknown kinds are ignored

    def _compress(self, headers: dict[str, str]) -> bytes:
        return self._deflate.compress(encode_headers(headers)) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def _data(self, stream_id: int, flags: int, payload: bytes) -> None:
        stream = self._by_id.get(stream_id)
        if stream is None:
            return
        if payload:
            stream.reader.feed_data(payload)
        if flags & FLAG_FIN:
            stream.reader.feed_eof()

    def forget(self, stream: SpdyStream) -> None:
        self._by_id.pop(stream.id, None)

    async def close(self) -> None:
        """GOAWAY, then close the channel."""
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.send(control_frame(GOAWAY, 0, struct.pack(">II", self._last_id, 0)))
        self.gone = True
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._channel.close()
