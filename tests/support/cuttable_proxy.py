"""`CuttableProxy`: a TCP proxy on 127.0.0.1 that a test cuts and restores (a network outage).

A client given `address` reaches `target` through it, bytes piped as they are (TLS goes
through end to end, so the target's certificate must name 127.0.0.1). `cut()` closes the
listening socket (new connections are refused) and resets every open connection; `restore()`
listens on the same port again. Used by the apiserver outage test to make the apiserver
unreachable for one provider while the control plane keeps running.
Must not: look into or change what goes through.
"""

from __future__ import annotations

import asyncio

from tests.support.byte_pipe import pipe

Pair = tuple[asyncio.StreamWriter, asyncio.StreamWriter]


class CuttableProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.dropped = 0  # connections open when cut, over all cuts
        self._server: asyncio.AbstractServer | None = None
        self._open: set[Pair] = set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen on a free port; `port` says which."""
        await self.restore()

    async def restore(self) -> None:
        """Listen again (on the port of the first start); nothing to do while listening."""
        if self._server is not None:
            return
        self._server = await asyncio.start_server(self._serve, host="127.0.0.1", port=self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    def cut(self) -> None:
        """Refuse new connections and reset the open ones (the peer is gone, no polite FIN)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        self.dropped += len(self._open)
        for pair in self._open:
            for writer in pair:
                writer.transport.abort()
        self._open.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        pair = (writer, up_writer)
        if self._server is None:  # cut while this connection was being made
            for end in pair:
                end.transport.abort()
            return
        self._open.add(pair)
        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._open.discard(pair)
