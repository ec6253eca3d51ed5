"""SPDY under hostile input (issue 13, item 6): a bounded header inflation, malformed frames end cleanly.

`FrameParser` may raise `SpdyError` and nothing else; a session that meets one answers GOAWAY
with PROTOCOL_ERROR, closes its channel and returns. No wall-clock asserts: the bomb is shown to
stop at the bound by the bytes inflated and by tracemalloc's peak.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import struct
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.spdy_pipe import Pipe
from vk_provider.kubeletapi import spdy
from vk_provider.kubeletapi.spdy import (
    DICTIONARY,
    FLAG_FIN,
    GOAWAY,
    HEADERS,
    PING,
    RST_STREAM,
    SETTINGS,
    SYN_REPLY,
    SYN_STREAM,
    WINDOW_UPDATE,
    SpdyError,
    SpdySession,
    control_frame,
    data_frame,
    encode_headers,
)

BOMB_SIZE = 32 << 20  # what the bomb inflates to: 32 times the 1 MiB bound
MIB = 1 << 20


def deflater() -> zlib._Compress:
    return zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)


def header_block(raw: bytes, deflate: zlib._Compress | None = None) -> bytes:
    deflate = deflate or deflater()
    return deflate.compress(raw) + deflate.flush(zlib.Z_SYNC_FLUSH)


def zlib_bomb() -> bytes:
    """A header block of BOMB_SIZE zero bytes (a count of 0, then padding), ~32 KB compressed."""
    deflate, chunk = deflater(), bytes(MIB)
    parts = [deflate.compress(chunk) for _ in range(BOMB_SIZE // MIB)]
    return b"".join(parts) + deflate.flush(zlib.Z_SYNC_FLUSH)


def syn_stream(stream_id: int, block: bytes, flags: int = 0) -> bytes:
    return control_frame(SYN_STREAM, flags, struct.pack(">IIH", stream_id, 0, 0) + block)


def split(frame: bytes) -> tuple[bytes, bytes]:
    return frame[:8], frame[8:]


def versioned(version: int, kind: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | version, kind, len(payload)) + payload


async def run_session(*chunks: bytes) -> tuple[Pipe, SpdySession, list[spdy.SpdyStream]]:
    """Feed `chunks` then EOF to a session; serve() must return (not raise) within 5 s."""
    pipe = Pipe()
    session = SpdySession(pipe.channel())
    for chunk in chunks:
        pipe.to_server.put_nowait(chunk)
    pipe.to_server.put_nowait(b"")
    await asyncio.wait_for(session.serve(), 5)
    streams = []
    while (stream := session.streams.get_nowait()) is not None:
        streams.append(stream)
    return pipe, session, streams


def goaway_status(pipe: Pipe) -> int | None:
    frames = [f for f in pipe.frames() if f[0] and f[1] == GOAWAY]
    return struct.unpack(">II", frames[-1][3])[1] if frames else None


# -- the zlib bomb ---------------------------------------------------------------------------


def test_a_zlib_bomb_stops_inflating_at_the_bound() -> None:
    parser = spdy.FrameParser()
    head, payload = split(syn_stream(1, zlib_bomb()))
    assert len(payload) < 64 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(SpdyError, match="beyond 1048576 bytes"):
            parser.parse(head, payload)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert spdy.HEADER_BLOCK_LIMIT == MIB
    assert parser.inflated == spdy.HEADER_BLOCK_LIMIT + 1  # zlib was asked for no more
    assert peak < 4 * MIB  # not the 32 MiB the block inflates to


async def test_a_session_refuses_a_zlib_bomb_with_goaway_and_bounded_memory() -> None:
    bomb = syn_stream(1, zlib_bomb())
    tracemalloc.start()
    try:
        pipe, session, streams = await run_session(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert streams == []  # today's code: the stream is opened with a 32 MiB block behind it
    assert goaway_status(pipe) == 1 and pipe.closed and session.gone
    assert peak < 6 * MIB


def test_a_header_block_at_the_bound_is_accepted() -> None:
    value = "x" * (spdy.HEADER_BLOCK_LIMIT - 4 - 4 - 1 - 4)  # count, name length, "a", value length
    raw = encode_headers({"a": value})
    assert len(raw) == spdy.HEADER_BLOCK_LIMIT
    frame = spdy.FrameParser().parse(*split(syn_stream(1, header_block(raw))))
    assert frame.headers == {"a": value}


# -- malformed frames ------------------------------------------------------------------------


def _headers(count: int, *fields: bytes) -> bytes:
    return struct.pack(">I", count) + b"".join(struct.pack(">I", len(f)) + f for f in fields)


Build = Callable[[Any], bytes]  # a frame, its header block (if any) from this deflater


def _syn(raw: bytes) -> Build:
    return lambda deflate: syn_stream(5, header_block(raw, deflate))


def _fixed(frame: bytes) -> Build:
    return lambda _: frame


# name: (the frame, what the SpdyError says)
MALFORMED: dict[str, tuple[Build, str]] = {
    "SYN_STREAM shorter than its ids": (
        _fixed(control_frame(SYN_STREAM, 0, b"\x00\x00\x01")),
        "control frame 1 has only 3 bytes",
    ),
    "SYN_STREAM without a header block": (
        _fixed(control_frame(SYN_STREAM, 0, struct.pack(">IIH", 5, 0, 0))),
        "truncated at byte 0 of 0",
    ),
    "a header block that is not zlib": (
        _fixed(syn_stream(5, b"\xff" * 16)),
        "does not inflate",
    ),
    "a header block cut in its count": (_syn(b"\x00\x00"), "truncated at byte 0 of 2"),
    "a header block cut in a name": (_syn(_headers(1, b"streamtype")[:-3]), "a field of 10 bytes at byte 4"),
    "a header block without the value": (_syn(_headers(1, b"streamtype")), "truncated at byte 18 of 18"),
    "a header block with a value too long": (
        _syn(_headers(1, b"port") + struct.pack(">I", 99) + b"80"),
        "a field of 99 bytes at byte 12",
    ),
    "a header block counting more headers than it has": (
        _syn(_headers(2, b"port", b"80")),
        "truncated at byte 18 of 18",
    ),
    "a header block counting 1001 headers": (
        _syn(_headers(1001, *[b"h", b"v"] * 1001)),
        "1001 headers \\(at most 1000\\)",
    ),
    "a name length of 2^32-1": (_syn(struct.pack(">II", 1, 0xFFFFFFFF)), "a field of 4294967295 bytes"),
    "a count of 2^32-1": (_syn(struct.pack(">I", 0xFFFFFFFF)), "4294967295 headers"),
    "HEADERS shorter than its stream id": (
        _fixed(control_frame(HEADERS, 0, b"\x00\x01")),
        "control frame 8 has only 2 bytes",
    ),
    "RST_STREAM of 4 bytes": (
        _fixed(control_frame(RST_STREAM, 0, struct.pack(">I", 1))),
        "control frame 3 has 4 bytes, not 8",
    ),
    "RST_STREAM of 12 bytes": (
        _fixed(control_frame(RST_STREAM, 0, struct.pack(">III", 1, 5, 0))),
        "control frame 3 has 12 bytes, not 8",
    ),
    "PING of 3 bytes": (_fixed(control_frame(PING, 0, b"\x00\x00\x01")), "control frame 6 has 3 bytes"),
    "PING of 8 bytes": (
        _fixed(control_frame(PING, 0, struct.pack(">II", 1, 2))),
        "control frame 6 has 8 bytes",
    ),
    "GOAWAY of 4 bytes": (
        _fixed(control_frame(GOAWAY, 0, struct.pack(">I", 1))),
        "control frame 7 has 4 bytes",
    ),
    "SPDY/2": (
        lambda d: versioned(2, SYN_STREAM, struct.pack(">IIH", 5, 0, 0) + header_block(_headers(0), d)),
        "unsupported SPDY version 2",
    ),
    "SPDY/0 PING": (_fixed(versioned(0, PING, struct.pack(">I", 1))), "unsupported SPDY version 0"),
    "version 0x7fff": (
        _fixed(versioned(0x7FFF, SETTINGS, struct.pack(">I", 0))),
        "unsupported SPDY version 32767",
    ),
}


@pytest.mark.parametrize(("build", "message"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_frame_raises_only_spdy_error(build: Build, message: str) -> None:
    with pytest.raises(SpdyError, match=message):
        spdy.FrameParser().parse(*split(build(deflater())))


@pytest.mark.parametrize(("build", "message"), MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_frame_ends_the_session_cleanly(
    build: Build, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="vk_provider.kubeletapi.spdy")
    deflate = deflater()  # the client's one zlib stream, as a real client has
    opened = syn_stream(1, header_block(encode_headers({"streamtype": "data"}), deflate))
    pipe, session, streams = await run_session(opened, build(deflate), data_frame(1, b"never read"))
    [stream] = streams
    assert await stream.reader.read() == b""  # the open stream sees EOF
    assert goaway_status(pipe) == 1 and pipe.closed and session.gone
    ended = [r.reason for r in caplog.records if r.getMessage() == "SPDY session ended"]
    assert len(ended) == 1 and re.search(message, ended[0]), ended  # for the reason named


def test_the_parser_rejects_a_payload_that_does_not_match_its_head() -> None:
    head, payload = split(control_frame(PING, 0, struct.pack(">I", 1)))
    for bad_head, bad_payload in ((head, payload[:3]), (head, payload + b"x"), (head[:7], payload)):
        with pytest.raises(SpdyError):
            spdy.FrameParser().parse(bad_head, bad_payload)


def test_the_frames_that_are_read_parse() -> None:
    parser = spdy.FrameParser()
    deflate = deflater()
    block = header_block(encode_headers({"streamType": "error", "Port": "80"}), deflate)
    syn = parser.parse(*split(syn_stream(5, block, FLAG_FIN)))
    assert (syn.kind, syn.stream_id, syn.flags, syn.headers) == (
        SYN_STREAM,
        5,
        FLAG_FIN,
        {"streamtype": "error", "port": "80"},
    )
    more = header_block(encode_headers({"x": "y"}), deflate)  # the same zlib stream goes on
    assert parser.parse(*split(control_frame(HEADERS, 0, struct.pack(">I", 5) + more))).headers == {"x": "y"}
    reply = header_block(encode_headers({"r": "1"}), deflate)  # a client's SYN_REPLY keeps zlib in step too
    syn_reply = control_frame(SYN_REPLY, 0, struct.pack(">I", 5) + reply)
    assert parser.parse(*split(syn_reply)).headers == {"r": "1"}
    last = header_block(encode_headers({"z": "2"}), deflate)
    assert parser.parse(*split(syn_stream(7, last))).headers == {"z": "2"}
    rst = parser.parse(*split(control_frame(RST_STREAM, 0, struct.pack(">II", 5, 5))))
    assert (rst.kind, rst.stream_id, rst.data) == (RST_STREAM, 5, struct.pack(">I", 5))
    assert parser.parse(*split(control_frame(PING, 0, b"\x00\x00\x00\x07"))).data == b"\x00\x00\x00\x07"
    assert parser.parse(*split(data_frame(5, b"hi", fin=True))).data == b"hi"
    for ignored in (SETTINGS, WINDOW_UPDATE, 0x42):
        assert parser.parse(*split(control_frame(ignored, 0, b"\x01" * 7))).kind == ignored


# -- stream-level misbehaviour ----------------------------------------------------------------


async def test_data_after_fin_is_dropped_and_an_old_stream_id_is_reset() -> None:
    deflate = deflater()
    first = syn_stream(3, header_block(encode_headers({"streamtype": "data"}), deflate))
    again = syn_stream(3, header_block(encode_headers({"streamtype": "error"}), deflate))
    lower = syn_stream(1, header_block(encode_headers({"streamtype": "error"}), deflate))
    pipe, _, streams = await run_session(
        first, data_frame(3, b"one", fin=True), data_frame(3, b"after FIN"), again, lower
    )
    [stream] = streams  # today's code: AssertionError (feed_data after feed_eof) out of serve()
    assert await stream.reader.read() == b"one"
    resets = [struct.unpack(">II", f[3]) for f in pipe.frames() if f[0] and f[1] == RST_STREAM]
    assert resets == [(3, 1), (1, 1)]  # PROTOCOL_ERROR, as spdystream's validateStreamId
    assert [f[1] for f in pipe.frames() if f[0] and f[1] == SYN_REPLY] == [SYN_REPLY]
    assert goaway_status(pipe) is None and not pipe.closed  # the session itself was fine


# -- random input ----------------------------------------------------------------------------


def _random_frame(rng: random.Random, deflate: zlib._Compress) -> bytes:
    kind = rng.choice([SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE])
    choice = rng.random()
    if choice < 0.2:  # a well-formed SYN_STREAM, maybe cut or bit-flipped below
        fields = [rng.randbytes(rng.randrange(8)) for _ in range(2 * rng.randrange(3))]
        raw = _headers(len(fields) // 2, *fields) if rng.random() < 0.7 else rng.randbytes(rng.randrange(12))
        frame = syn_stream(rng.randrange(1 << 31), header_block(raw, deflate), rng.randrange(256))
    elif choice < 0.5:
        frame = control_frame(kind, rng.randrange(256), rng.randbytes(rng.randrange(20)))
    elif choice < 0.6:
        frame = versioned(rng.randrange(1 << 15), kind, rng.randbytes(rng.randrange(20)))
    elif choice < 0.7:
        frame = data_frame(rng.randrange(1 << 31), rng.randbytes(rng.randrange(20)), rng.random() < 0.5)
    else:
        frame = rng.randbytes(8 + rng.randrange(24))
    if rng.random() < 0.3:
        data = bytearray(frame)
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        frame = bytes(data)
    return frame


def test_random_frames_raise_only_spdy_error() -> None:
    rng = random.Random(13)
    parser, deflate = spdy.FrameParser(), deflater()
    outcomes = {"parsed": 0, "refused": 0}
    for i in range(4000):
        if i % 50 == 0:  # a fresh zlib stream now and then (a refused block may break one)
            parser, deflate = spdy.FrameParser(), deflater()
        frame = _random_frame(rng, deflate)
        head, payload = frame[:8], frame[8:]
        if len(head) == 8 and rng.random() < 0.8:
            payload = payload[: spdy.payload_length(head)].ljust(spdy.payload_length(head), b"\x00")
        try:
            parser.parse(head, payload)
            outcomes["parsed"] += 1
        except SpdyError:
            outcomes["refused"] += 1
    assert outcomes["parsed"] > 500 and outcomes["refused"] > 500  # both paths were exercised


async def test_random_byte_streams_end_sessions_cleanly() -> None:
    rng = random.Random(1313)
    for _ in range(400):
        deflate = deflater()
        frames = [_random_frame(rng, deflate) for _ in range(rng.randrange(1, 6))]
        data = b"".join(frames)
        cuts = sorted(rng.sample(range(len(data) + 1), k=min(3, len(data) + 1)))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True) if data[a:b]]
        _, session, streams = await run_session(*chunks)  # raises nothing, returns
        assert session.gone and all(stream.remote_closed for stream in streams)


# -- issue 30: frames, streams and unread data are bounded ------------------------------------


async def test_a_frame_above_the_bound_is_refused_from_its_head() -> None:
    head = struct.pack(">II", 1, spdy.MAX_FRAME + 1)  # a DATA frame announcing MAX_FRAME + 1 bytes
    pipe, session, _ = await run_session(head)  # no payload follows: refused before reading one
    assert goaway_status(pipe) == 1 and pipe.closed and session.gone


async def test_streams_beyond_the_bound_are_refused() -> None:
    deflate = deflater()
    frames = [
        syn_stream(2 * i + 1, header_block(encode_headers({"streamtype": "data"}), deflate))
        for i in range(spdy.MAX_STREAMS + 3)
    ]
    pipe, _, streams = await run_session(*frames)
    assert len(streams) == spdy.MAX_STREAMS
    resets = [struct.unpack(">II", f[3])[1] for f in pipe.frames() if f[0] and f[1] == RST_STREAM]
    assert resets == [spdy.RST_REFUSED_STREAM] * 3


async def test_a_stream_nobody_reads_stops_the_session_reading_until_it_is_read() -> None:
    pipe = Pipe()
    session = SpdySession(pipe.channel())
    serving = asyncio.ensure_future(session.serve())
    opened = syn_stream(1, header_block(encode_headers({"streamtype": "data"}), deflater()))
    chunk = data_frame(1, bytes(32 * 1024))
    for frame in [opened] + [chunk] * 64:  # 2 MiB for a reader that takes nothing yet
        pipe.to_server.put_nowait(frame)
    stream = await session.streams.get()
    assert stream is not None
    await asyncio.sleep(0.2)
    assert pipe.to_server.qsize() > 40  # the session stopped reading at twice STREAM_BUFFER
    received = 0
    while received < 64 * 32 * 1024:
        received += len(await asyncio.wait_for(stream.reader.read(1 << 20), 5))
    assert pipe.to_server.empty()  # reading resumed the session
    pipe.to_server.put_nowait(b"")
    await asyncio.wait_for(serving, 5)
