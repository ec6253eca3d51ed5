"""SPDY/3.1 framing and a server-side session, as Kubernetes streaming clients speak it.

What lives here: `SpdySession`, the server end of one SPDY/3.1 connection over any byte
channel (`ByteChannel`: an upgraded HTTP connection, or WebSocket binary messages for
`SPDY/3.1+portforward.k8s.io` tunnels): it reads frames, answers every SYN_STREAM with a
SYN_REPLY and hands the new `SpdyStream` (its headers, a reader, write/close) to the
caller, echoes client PINGs, and writes DATA frames with FIN. Header blocks are zlib
streams per direction with the SPDY/3 dictionary (draft-mbelshe-httpbis-spdy-00 §2.6.10;
the dictionary bytes are the specification's). Flow control is not enforced: WINDOW_UPDATE
and SETTINGS are ignored, as moby/spdystream (client-go's SPDY library) does.

`FrameParser` turns one frame's bytes into a `Frame` and raises nothing but `SpdyError`:
a frame's payload may have at most `MAX_FRAME` bytes (1 MiB and 4 KiB: a header block at its
bound, compressed; the session refuses a longer frame from its head, before reading it;
clients send data in 32 KiB frames), a header block may inflate to at most
`HEADER_BLOCK_LIMIT` (1 MiB; zlib is asked for no more, so a zlib bomb costs 1 MiB) and hold
at most `MAX_HEADERS` (1000, spdystream's default count), fixed-size frames must have their
size, and the version must be 3. On a `SpdyError` the session answers GOAWAY with
PROTOCOL_ERROR and closes the channel (its streams see EOF); a SYN_STREAM reusing an old
stream id is refused with RST_STREAM PROTOCOL_ERROR, as spdystream does, and data after the
peer's FIN is dropped. A session holds at most `MAX_STREAMS` (256) open streams and
`MAX_OPEN_HEADERS` (4 MiB) of their headers; a SYN_STREAM beyond either is refused with
RST_STREAM REFUSED_STREAM. A stream buffers at most twice `STREAM_BUFFER` (256 KiB) of data
its reader has not taken: beyond that the session stops reading frames until the reader
drains it (as spdystream's bounded frame queues block its reader), and ends with GOAWAY when
nothing was read for `STALL_TIMEOUT` (4 h, the kubelet's streaming idle timeout).
Must not: know what the streams carry (exec.py and portforward.py decide).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from vk_common.logging import get_logger

log = get_logger("kubeletapi.spdy")

VERSION = 3
DATA = 0  # `Frame.kind` of a data frame
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
MAX_DATA = 32 * 1024
RST_PROTOCOL_ERROR, RST_REFUSED_STREAM, RST_CANCEL = 1, 3, 5
GOAWAY_OK, GOAWAY_PROTOCOL_ERROR = 0, 1
HEADER_BLOCK_LIMIT = 1 << 20  # inflated bytes of one header block (spdystream: 1 MiB per field)
MAX_HEADERS = 1000  # spdystream's defaultMaxHeaderCount
MAX_FRAME = HEADER_BLOCK_LIMIT + 4096  # payload bytes of one frame read here
MAX_STREAMS = 256  # open streams of one session (kubectl port-forward: two per connection)
MAX_OPEN_HEADERS = 4 * HEADER_BLOCK_LIMIT  # decoded header bytes of a session's open streams
STREAM_BUFFER = 256 * 1024  # a stream's reader pauses the session above twice this
STALL_TIMEOUT = 4 * 3600.0  # the kubelet's --streaming-connection-idle-timeout default
_FIXED_SIZE = {RST_STREAM: 8, PING: 4, GOAWAY: 8}  # payload bytes of the fixed-size frames read here
_MIN_SIZE = {SYN_STREAM: 10, SYN_REPLY: 4, HEADERS: 4}  # stream id (+ associated id, priority), block

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
    """The peer broke the framing; the session ends. The only error `FrameParser` raises."""


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


def _u32(block: bytes, pos: int) -> int:
    if pos + 4 > len(block):
        raise SpdyError(f"malformed header block: truncated at byte {pos} of {len(block)}")
    return int.from_bytes(block[pos : pos + 4], "big")


def _field(block: bytes, pos: int) -> tuple[str, int]:
    """One length-prefixed name or value at `pos`, and the position after it."""
    start = pos + 4
    end = start + _u32(block, pos)
    if end > len(block):
        raise SpdyError(f"malformed header block: a field of {end - start} bytes at byte {pos}")
    return block[start:end].decode("latin-1"), end


def decode_headers(block: bytes) -> dict[str, str]:
    """Lower-case names; repeated values (NUL-separated on the wire) keep the first."""
    count, pos = _u32(block, 0), 4
    if count > MAX_HEADERS:
        raise SpdyError(f"malformed header block: {count} headers (at most {MAX_HEADERS})")
    headers: dict[str, str] = {}
    for _ in range(count):
        name, pos = _field(block, pos)
        value, pos = _field(block, pos)
        headers.setdefault(name.lower(), value.split("\x00")[0])
    return headers


def control_frame(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def data_frame(stream_id: int, data: bytes, fin: bool = False) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data


def payload_length(head: bytes) -> int:
    """The payload length an 8-byte frame head announces (24 bits)."""
    if len(head) != 8:
        raise SpdyError(f"a frame head has 8 bytes, not {len(head)}")
    return int.from_bytes(head[5:8], "big")


def bounded_payload_length(head: bytes) -> int:
    """`payload_length`, refused above `MAX_FRAME`."""
    length = payload_length(head)
    if length > MAX_FRAME:
        raise SpdyError(f"a frame of {length} bytes (at most {MAX_FRAME})")
    return length


@dataclass(frozen=True)
class Frame:
    """One parsed frame. `kind` is DATA or a control type; `data` is a DATA payload, a PING's id,
    RST_STREAM's or GOAWAY's status; `headers` come with SYN_STREAM and HEADERS."""

    kind: int
    flags: int
    stream_id: int = 0
    data: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def _check_size(kind: int, payload: bytes) -> None:
    size = _FIXED_SIZE.get(kind)
    if size is not None and len(payload) != size:
        raise SpdyError(f"control frame {kind} has {len(payload)} bytes, not {size}")
    if len(payload) < _MIN_SIZE.get(kind, 0):
        raise SpdyError(f"control frame {kind} has only {len(payload)} bytes")


class FrameParser:
    """Frames of one direction of a connection (the header blocks share one zlib stream)."""

    def __init__(self, header_limit: int = HEADER_BLOCK_LIMIT) -> None:
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self.header_limit = header_limit
        self.inflated = 0  # header block bytes inflated so far

    def parse(self, head: bytes, payload: bytes) -> Frame:
        """The frame of an 8-byte head and its payload. Raises `SpdyError`, nothing else."""
        announced = bounded_payload_length(head)
        if announced != len(payload):
            raise SpdyError(f"the head announces {announced} bytes, the payload has {len(payload)}")
        first, flags = int.from_bytes(head[:4], "big"), head[4]
        if not first & 0x80000000:
            return Frame(DATA, flags, first & 0x7FFFFFFF, payload)
        version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise SpdyError(f"unsupported SPDY version {version}")
        _check_size(kind, payload)
        return self._control(kind, flags, payload)

    def _control(self, kind: int, flags: int, payload: bytes) -> Frame:
        if kind == PING:
            return Frame(kind, flags, data=payload)
        if kind not in (SYN_STREAM, SYN_REPLY, HEADERS, RST_STREAM, GOAWAY):
            return Frame(kind, flags)  # SETTINGS, WINDOW_UPDATE and unknown kinds: ignored
        stream_id = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
        if kind in (RST_STREAM, GOAWAY):
            return Frame(kind, flags, stream_id, payload[4:])
        block = self.inflate(payload[_MIN_SIZE[kind] :])
        return Frame(kind, flags, stream_id, headers=decode_headers(block))

    def inflate(self, compressed: bytes) -> bytes:
        """One header block, refused once it would inflate beyond `header_limit` (zlib stops there)."""
        try:
            block = self._inflate.decompress(compressed, self.header_limit + 1)
        except zlib.error as exc:
            raise SpdyError(f"header block does not inflate: {exc}") from exc
        self.inflated += len(block)
        if len(block) > self.header_limit:
            raise SpdyError(f"header block inflates beyond {self.header_limit} bytes")
        return block


class _Backpressure(asyncio.ReadTransport):
    """What a stream's reader pauses once it holds more than twice `STREAM_BUFFER`: the session."""

    def __init__(self, session: SpdySession, stream_id: int) -> None:
        super().__init__()
        self._session, self._id = session, stream_id

    def pause_reading(self) -> None:
        self._session.pause(self._id)

    def resume_reading(self) -> None:
        self._session.resume(self._id)


@dataclass
class SpdyStream:
    id: int
    headers: dict[str, str]
    session: SpdySession
    reader: asyncio.StreamReader = field(init=False)
    closed: bool = False  # our side sent FIN (or reset)
    remote_closed: bool = False  # the peer sent FIN (or reset), or the session ended

    def __post_init__(self) -> None:
        self.reader = asyncio.StreamReader(limit=STREAM_BUFFER)
        self.reader.set_transport(_Backpressure(self.session, self.id))

    @property
    def header_bytes(self) -> int:
        return sum(len(name) + len(value) for name, value in self.headers.items())

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

    def end_remote(self) -> None:
        """The peer's side is done: readers see EOF, later data is dropped."""
        if not self.remote_closed:
            self.remote_closed = True
            self.reader.feed_eof()


class SpdySession:
    """The server side of one SPDY/3.1 connection. Run `serve()`; new streams arrive in `streams`."""

    def __init__(self, channel: ByteChannel) -> None:
        self._channel = channel
        self._buffer = _Buffer(channel.read)
        self._parser = FrameParser()
        self._deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)
        self._write_lock = asyncio.Lock()
        self._by_id: dict[int, SpdyStream] = {}
        self._open_headers = 0  # header_bytes of the streams in _by_id
        self._paused: set[int] = set()  # streams whose reader is full
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._last_id = 0
        self._closed = False
        self.streams: asyncio.Queue[SpdyStream | None] = asyncio.Queue()  # None: the session ended
        self.gone = False

    async def send(self, frame: bytes) -> None:
        if self.gone:
            return
        async with self._write_lock:
            await self._channel.write(frame)

    async def serve(self) -> None:
        """Read frames until the peer closes or goes away, or breaks the framing (GOAWAY
        PROTOCOL_ERROR, channel closed); then every stream sees EOF. Returns normally."""
        try:
            while True:
                if not self._flowing.is_set():
                    await self._stalled()
                head = await self._buffer.exactly(8)
                payload = await self._buffer.exactly(bounded_payload_length(head))
                if not await self._handle(self._parser.parse(head, payload)):
                    return
        except (EOFError, ConnectionError):
            return
        except SpdyError as exc:
            log.info("SPDY session ended", extra={"reason": str(exc)})
            await self.close(GOAWAY_PROTOCOL_ERROR)
        finally:
            self.gone = True
            for stream in self._by_id.values():
                stream.end_remote()
            self.streams.put_nowait(None)

    async def _handle(self, frame: Frame) -> bool:
        """Act on one frame; False when the peer goes away."""
        if frame.kind == DATA:
            self._data(frame)
        elif frame.kind == SYN_STREAM:
            await self._open(frame)
        elif frame.kind == RST_STREAM:
            gone = self._drop(frame.stream_id)
            if gone is not None:
                gone.closed = True
                gone.end_remote()
        elif frame.kind == PING:
            await self.send(control_frame(PING, 0, frame.data))
        elif frame.kind == GOAWAY:
            return False
        return True  # SYN_REPLY, HEADERS (inflated to keep zlib in step), SETTINGS, WINDOW_UPDATE: ignored

    async def _open(self, frame: Frame) -> None:
        if frame.stream_id == 0 or frame.stream_id <= self._last_id:  # spdystream's validateStreamId
            rst = struct.pack(">II", frame.stream_id, RST_PROTOCOL_ERROR)
            await self.send(control_frame(RST_STREAM, 0, rst))
            return
        stream = SpdyStream(frame.stream_id, frame.headers, self)
        self._last_id = frame.stream_id
        if len(self._by_id) >= MAX_STREAMS or self._open_headers + stream.header_bytes > MAX_OPEN_HEADERS:
            rst = struct.pack(">II", frame.stream_id, RST_REFUSED_STREAM)
            await self.send(control_frame(RST_STREAM, 0, rst))
            return
        self._by_id[frame.stream_id] = stream
        self._open_headers += stream.header_bytes
        if frame.flags & FLAG_FIN:
            stream.end_remote()
        reply = struct.pack(">I", frame.stream_id) + self._compress({})
        await self.send(control_frame(SYN_REPLY, 0, reply))
        self.streams.put_nowait(stream)

    def _compress(self, headers: dict[str, str]) -> bytes:
        return self._deflate.compress(encode_headers(headers)) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def _data(self, frame: Frame) -> None:
        stream = self._by_id.get(frame.stream_id)
        if stream is None or stream.remote_closed:
            return
        if frame.data:
            stream.reader.feed_data(frame.data)
        if frame.flags & FLAG_FIN:
            stream.end_remote()

    def forget(self, stream: SpdyStream) -> None:
        self._drop(stream.id)

    def _drop(self, stream_id: int) -> SpdyStream | None:
        stream = self._by_id.pop(stream_id, None)
        if stream is not None:
            self._open_headers -= stream.header_bytes
        self.resume(stream_id)  # nobody reads it any more
        return stream

    def pause(self, stream_id: int) -> None:
        if stream_id in self._by_id:
            self._paused.add(stream_id)
            self._flowing.clear()

    def resume(self, stream_id: int) -> None:
        self._paused.discard(stream_id)
        if not self._paused:
            self._flowing.set()

    async def _stalled(self) -> None:
        """Wait until every stream's reader has room again; a SpdyError after STALL_TIMEOUT."""
        try:
            await asyncio.wait_for(self._flowing.wait(), STALL_TIMEOUT)
        except TimeoutError:
            raise SpdyError(
                f"streams {sorted(self._paused)} were not read for {STALL_TIMEOUT:.0f} s"
            ) from None

    async def close(self, status: int = GOAWAY_OK) -> None:
        """GOAWAY (unless the peer is gone), then close the channel; once."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.send(control_frame(GOAWAY, 0, struct.pack(">II", self._last_id, status)))
        self.gone = True
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._channel.close()
