"""Proxies to the real Docker socket: a Unix socket a test can stop and start (Docker "goes away"),
and `DockerTcpProxy`, the same engine on tcp://127.0.0.1:<port>, which a provider takes for a
remote engine (it does not share our filesystem).

Used by the node tests to make the engine unreachable for one provider without touching dockerd,
and by the remote engine tests. The piping (and a count of the requests) is bench's
`DockerCountingProxy`; what differs here is that the proxy can be stopped and started again
on the same path. Must not: change what goes through (bytes are piped as they are).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from bench.docker_engine import DOCKER_SOCKET, DockerCountingProxy


class DockerSocketProxy(DockerCountingProxy):
    """`stop` refuses new connections and cuts the open ones (the socket file stays: connect is
    refused); `start` serves on the same path again."""

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        await super().start()


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
