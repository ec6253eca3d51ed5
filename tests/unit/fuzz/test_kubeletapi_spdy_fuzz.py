"""Fuzzing the kubelet API's SPDY/3.1 framing (vk_provider.kubeletapi.spdy).

What is fuzzed: `FrameParser.parse` on arbitrary frame heads and payloads and on sequences
of valid frames (SYN_STREAM and HEADERS with zlib header blocks sharing one stream, DATA,
PING, RST_STREAM, GOAWAY, SETTINGS) with their bytes mutated; header blocks that are zlib
bombs, mutated; and a whole `SpdySession` fed arbitrary and mutated byte streams in
arbitrary chunks. The properties: the parser returns a Frame or raises `SpdyError`, nothing
else; no header block inflates beyond the parser's limit (+1 byte, where zlib is stopped) nor
yields more than MAX_HEADERS headers; a bomb's memory peak stays a few MiB; a session's
`serve()` returns (never raises) once its input ends.
"""

from __future__ import annotations

import asyncio
import struct
import tracemalloc
import zlib

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzzing import budget, mutated_bytes
from tests.support.spdy_pipe import Pipe
from vk_provider.kubeletapi.spdy import (
    DICTIONARY,
    GOAWAY,
    HEADER_BLOCK_LIMIT,
    HEADERS,
    MAX_HEADERS,
    PING,
    RST_STREAM,
    SETTINGS,
    SYN_STREAM,
    FrameParser,
    SpdyError,
    SpdySession,
    control_frame,
    data_frame,
    encode_headers,
)

MIB = 1 << 20
SMALL_LIMIT = 4096  # a parser with a small bound, so mutated bombs cross it cheaply


def _deflater() -> zlib._Compress:
    return zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)


def _valid_frames() -> list[bytes]:
    """One client direction of a session, header blocks on one zlib stream."""
    deflate = _deflater()

    def block(headers: dict[str, str]) -> bytes:
        return deflate.compress(encode_headers(headers)) + deflate.flush(zlib.Z_SYNC_FLUSH)

    return [
        control_frame(SYN_STREAM, 0, struct.pack(">IIH", 1, 0, 0) + block({"streamType": "error"})),
        control_frame(
            SYN_STREAM, 1, struct.pack(">IIH", 3, 0, 0) + block({"streamType": "stdin", "port": "80"})
        ),
        data_frame(3, b"hello"),
        control_frame(HEADERS, 0, struct.pack(">I", 3) + block({"x": "y" * 40})),
        control_frame(PING, 0, struct.pack(">I", 7)),
        control_frame(SETTINGS, 0, struct.pack(">I", 0)),
        data_frame(3, b"", fin=True),
        control_frame(RST_STREAM, 0, struct.pack(">II", 1, 5)),
        control_frame(GOAWAY, 0, struct.pack(">II", 3, 0)),
    ]


VALID_FRAMES = _valid_frames()
VALID_STREAM = b"".join(VALID_FRAMES)


def _bomb(size: int) -> bytes:
    deflate, chunk = _deflater(), bytes(64 * 1024)
    return b"".join(deflate.compress(chunk) for _ in range(size // len(chunk))) + deflate.flush(
        zlib.Z_SYNC_FLUSH
    )


BOMB = control_frame(SYN_STREAM, 0, struct.pack(">IIH", 1, 0, 0) + _bomb(8 * MIB))


def _honest(frame: bytes) -> bytes:
    """`frame` with its head announcing the payload it has (what a mutated frame often breaks)."""
    if len(frame) < 8:
        return frame
    return frame[:5] + ((len(frame) - 8) & 0xFFFFFF).to_bytes(3, "big") + frame[8:]


def _parse_bounded(parser: FrameParser, frame: bytes) -> None:
    """Parse one frame's bytes (head, then the rest as its payload): a Frame or SpdyError, and
    at most the parser's limit (+1) inflated for it."""
    before = parser.inflated
    try:
        parsed = parser.parse(frame[:8], frame[8:])
    except SpdyError:
        pass
    else:
        assert len(parsed.headers) <= MAX_HEADERS
    assert parser.inflated - before <= parser.header_limit + 1


@budget(1500)
@given(head=st.binary(min_size=8, max_size=8), payload=st.binary(max_size=64), fit=st.booleans())
def test_arbitrary_frames_parse_or_raise_spdy_error(head: bytes, payload: bytes, fit: bool) -> None:
    if fit:  # the announced length matches, so the parser looks past the head
        head = head[:5] + len(payload).to_bytes(3, "big")
    _parse_bounded(FrameParser(), head + payload)


@budget(600)
@given(frames=st.lists(st.sampled_from(range(len(VALID_FRAMES))), min_size=1, max_size=12), data=st.data())
def test_mutated_frame_sequences_parse_or_raise_spdy_error(frames: list[int], data: st.DataObject) -> None:
    parser = FrameParser(header_limit=SMALL_LIMIT)
    for index in frames:
        frame = VALID_FRAMES[index]
        if data.draw(st.booleans()):
            frame = data.draw(mutated_bytes(frame))
            if data.draw(st.booleans()):
                frame = _honest(frame)
        _parse_bounded(parser, frame)


@budget(150)
@given(bomb=mutated_bytes(BOMB, max_mutations=3))
def test_mutated_bombs_inflate_at_most_the_limit(bomb: bytes) -> None:
    _parse_bounded(FrameParser(header_limit=SMALL_LIMIT), _honest(bomb))


@budget(20)
@given(bomb=mutated_bytes(BOMB, max_mutations=2))
def test_mutated_bombs_keep_memory_bounded(bomb: bytes) -> None:
    parser = FrameParser()
    tracemalloc.start()
    try:
        _parse_bounded(parser, _honest(bomb))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert parser.header_limit == HEADER_BLOCK_LIMIT
    assert peak < 6 * MIB, peak  # the block inflates to 8 MiB unbounded


async def _serve(stream: bytes, cuts: list[int]) -> None:
    pipe = Pipe()
    session = SpdySession(pipe.channel())
    start = 0
    for cut in sorted(c % (len(stream) + 1) for c in cuts):
        pipe.to_server.put_nowait(stream[start:cut])
        start = cut
    pipe.to_server.put_nowait(stream[start:])
    pipe.to_server.put_nowait(b"")
    await asyncio.wait_for(session.serve(), 10)
    assert session.gone


@budget(400)
@given(
    stream=mutated_bytes(VALID_STREAM, max_mutations=6) | st.binary(max_size=300),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_sessions_end_cleanly_on_any_byte_stream(stream: bytes, cuts: list[int]) -> None:
    asyncio.run(_serve(stream, cuts))
