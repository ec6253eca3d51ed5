"""Proxies to the real Docker socket: a Unix socket a test can stop and start (Docker "goes away"),
and `DockerTcpProxy`, the same engine on tcp://127.0.0.1:<port>, which a provider takes for a
remote engine (it does not share our filesystem).

Used by the node tests to make the engine unreachable for one provider without touching dockerd,
and by the remote engine tests. Must not: change what goes through (bytes are piped as they are).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

DOCKER_SOCKET = "/var/run/docker.sock"


class DockerSocketProxy:
    def __init__(self, path: Path, target: str = DOCKER_SOCKET) -> None:
        self.path = path
        self.target = target
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path))

    async def stop(self) -> None:
        """Refuse new connections and cut the open ones (the socket file stays: connect is refused)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.target)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()


class DockerTcpProxy(DockerSocketProxy):
    """The Docker socket on plain TCP at 127.0.0.1 (`url`: tcp://127.0.0.1:<port>)."""

    def __init__(self, target: str = DOCKER_SOCKET) -> None:
        super().__init__(Path(), target)
        self.port = 0

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, host="127.0.0.1", port=self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])
