"""SPDY/3.1 framing and the server session, driven by a hand-written client over an in-memory channel."""

from __future__ import annotations

import asyncio
import hashlib
import struct
import zlib

from tests.support.spdy_pipe import Pipe
from vk_provider.kubeletapi.spdy import (
    DICTIONARY,
    FLAG_FIN,
    GOAWAY,
    PING,
    SYN_REPLY,
    SYN_STREAM,
    SpdySession,
    control_frame,
    data_frame,
    decode_headers,
    encode_headers,
)


def test_dictionary_is_the_specifications() -> None:
    assert len(DICTIONARY) == 1423
    assert (
        hashlib.sha256(DICTIONARY).hexdigest()
        == "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02"
    )


def test_header_blocks_round_trip_lower_case() -> None:
    block = encode_headers({"streamType": "error", "Port": "8080"})
    assert decode_headers(block) == {"streamtype": "error", "port": "8080"}
    assert decode_headers(encode_headers({"a": "x\x00y"})) == {"a": "x"}


async def test_session_replies_streams_data_fin_ping_and_goaway() -> None:
    pipe = Pipe()
    session = SpdySession(pipe.channel())
    serving = asyncio.ensure_future(session.serve())
    deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)
    for stream_id, kind in ((1, "error"), (3, "stdin")):
        block = deflate.compress(encode_headers({"streamType": kind})) + deflate.flush(zlib.Z_SYNC_FLUSH)
        pipe.to_server.put_nowait(control_frame(SYN_STREAM, 0, struct.pack(">IIH", stream_id, 0, 0) + block))
    first, second = await session.streams.get(), await session.streams.get()
    assert first is not None and second is not None
    assert (first.id, first.headers, second.headers) == (1, {"streamtype": "error"}, {"streamtype": "stdin"})

    pipe.to_server.put_nowait(data_frame(3, b"hello") + data_frame(3, b"", fin=True))
    pipe.to_server.put_nowait(control_frame(PING, 0, struct.pack(">I", 1)))
    assert await second.reader.read() == b"hello"
    await first.write(b'{"status":"Success"}')
    await first.close()
    await session.close()
    pipe.to_server.put_nowait(b"")  # the connection is gone
    await asyncio.wait_for(serving, 5)
    assert await session.streams.get() is None

    frames = pipe.frames()
    inflate = zlib.decompressobj(zdict=DICTIONARY)
    replies = [f for f in frames if f[0] and f[1] == SYN_REPLY]
    assert [struct.unpack(">I", f[3][:4])[0] for f in replies] == [1, 3]
    assert decode_headers(inflate.decompress(replies[0][3][4:])) == {}
    assert (True, PING, 0, struct.pack(">I", 1)) in frames
    assert (False, 1, 0, b'{"status":"Success"}') in frames and (False, 1, FLAG_FIN, b"") in frames
    assert frames[-1][:2] == (True, GOAWAY) and pipe.closed
