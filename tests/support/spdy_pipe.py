"""An in-memory SPDY connection for tests of the kubelet API's SPDY session: `Pipe`.

The session under test reads what the test puts in `to_server` and writes into `from_server`;
`frames()` splits what it wrote into SPDY frames. Must not: encode or compress frames (tests
use vk_provider.kubeletapi.spdy's own encoders) or run a session itself.
"""

from __future__ import annotations

import asyncio
import struct

from vk_provider.kubeletapi.spdy import ByteChannel


class Pipe:
    """The server's channel; the test plays the client on the other end."""

    def __init__(self) -> None:
        self.to_server: asyncio.Queue[bytes] = asyncio.Queue()
        self.from_server = bytearray()
        self.closed = False

    def channel(self) -> ByteChannel:
        async def write(data: bytes) -> None:
            self.from_server += data

        async def close() -> None:
            self.closed = True

        return ByteChannel(read=self.to_server.get, write=write, close=close)

    def frames(self) -> list[tuple[bool, int, int, bytes]]:
        """(control?, type or stream id, flags, payload) of everything the server wrote."""
        out, data = [], bytes(self.from_server)
        while data:
            first, second = struct.unpack(">II", data[:8])
            length = second & 0xFFFFFF
            control = bool(first & 0x80000000)
            out.append((control, (first & 0xFFFF) if control else first, second >> 24, data[8 : 8 + length]))
            data = data[8 + length :]
        return out
