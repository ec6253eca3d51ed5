"""Interactive Docker streams for exec and attach: a hijacked engine connection on asyncio.

What lives here: `DockerStreams`, which creates an exec (or finds an attach target) with
one-shot SDK calls through the engine's bounded pool, then upgrades its own HTTP connection
to the engine (`Connection: Upgrade`, `Upgrade: tcp`, as the Docker CLI does) with asyncio
streams, so an interactive session holds no thread; `DockerSession` reads the engine's
output (demultiplexing the 8-byte frame headers unless there is a TTY), writes stdin,
half-closes stdin, resizes and reads the exit code (the Runtime protocol's
`InteractiveSession`). Engine errors become `StreamError`. Must not: know the kubelet's
channel protocol (the kubelet API does) or look pods up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from docker.errors import DockerException
from vk_provider.runtime.docker.engine import Engine
from vk_provider.runtime.protocol import STDERR, STDOUT
from vk_provider.runtime.types import RuntimeFailure, StreamError

EXIT_POLL_FIRST, EXIT_POLL_MAX = 0.02, 1.0
_READ_CHUNK = 64 * 1024


@dataclass
class DockerSession:
    """One upgraded engine connection: output in, stdin out."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    tty: bool
    exec_id: str | None  # None for attach
    container_id: str
    engine: Engine

    async def output(self) -> AsyncIterator[tuple[int, bytes]]:
        """(stream, data) until the engine closes: 1 stdout, 2 stderr (everything is 1 with a TTY)."""
        if self.tty:
            while data := await self.reader.read(_READ_CHUNK):
                yield STDOUT, data
            return
        while True:
            try:
                header = await self.reader.readexactly(8)
            except asyncio.IncompleteReadError:
                return
            size = int.from_bytes(header[4:8], "big")
            try:
                data = await self.reader.readexactly(size)
            except asyncio.IncompleteReadError as exc:
                data = exc.partial
            if data:
                yield (STDERR if header[0] == STDERR else STDOUT), data

    async def write_stdin(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    def close_stdin(self) -> None:
        if self.writer.can_write_eof() and not self.writer.is_closing():
            with contextlib.suppress(OSError):
                self.writer.write_eof()

    async def resize(self, width: int, height: int) -> None:
        with contextlib.suppress(DockerException, RuntimeFailure):
            api = self.engine.client.api
            if self.exec_id is not None:
                await self.engine.call(api.exec_resize, self.exec_id, height=height, width=width)
            else:
                await self.engine.call(api.resize, self.container_id, height, width)

    async def exit_code(self) -> int | None:
        """The exec's exit code once the process has ended (None for attach).

        The output can end before the process does (it may close its stdout); like the
        kubelet, wait for the process. Raises StreamError when the engine cannot say."""
        if self.exec_id is None:
            return None
        delay = EXIT_POLL_FIRST
        while True:
            try:
                result = await self.engine.call(self.engine.client.api.exec_inspect, self.exec_id)
            except (DockerException, RuntimeFailure) as exc:
                raise StreamError(f"cannot read the exit code of exec {self.exec_id[:12]}: {exc}") from exc
            if not result.get("Running"):
                code = result.get("ExitCode")
                return None if code is None else int(code)
            await asyncio.sleep(delay)
            delay = min(delay * 2, EXIT_POLL_MAX)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


class DockerStreams:
    """Opens exec and attach sessions on the engine behind `engine`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        url = urlsplit(self.engine.url)
        if url.scheme == "unix":
            return await asyncio.open_unix_connection(url.path)
        if url.scheme in ("tcp", "http") and url.hostname:
            if self.engine.client.api.base_url.startswith("https://"):
                raise StreamError(
                    f"interactive streams over TLS to the engine at {self.engine.url} are not supported"
                )
            return await asyncio.open_connection(url.hostname, url.port or 2375)
        raise StreamError(f"interactive streams to the engine at {self.engine.url} are not supported")

    async def _hijack(
        self, path: str, body: dict[str, Any] | None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        version = self.engine.client.api.api_version
        payload = json.dumps(body).encode() if body is not None else b""
        reader, writer = await self._connect()
        head = (
            f"POST /v{version}{path} HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
        )
        try:
            writer.write(head.encode("latin-1") + payload)
            await writer.drain()
            try:
                status_head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                raise StreamError(f"engine closed {path} before answering") from exc
            status_line = status_head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or parts[1] not in ("101", "200"):
                raise StreamError(f"engine refused {path}: {status_line} {await _error_body(reader)}".strip())
        except BaseException:
            writer.close()
            raise
        return reader, writer

    async def exec(
        self, container_id: str, command: list[str], *, stdin: bool, stdout: bool, stderr: bool, tty: bool
    ) -> DockerSession:
        try:
            await self.engine.connect()  # a no-op once connected; the engine may have been down at start
            api = self.engine.client.api
            created = await self.engine.call(
                api.exec_create, container_id, command, stdin=stdin, stdout=stdout, stderr=stderr, tty=tty
            )
        except (DockerException, RuntimeFailure) as exc:
            raise StreamError(str(getattr(exc, "explanation", None) or exc)) from exc
        exec_id = str(created["Id"])
        reader, writer = await self._hijack(f"/exec/{exec_id}/start", {"Detach": False, "Tty": tty})
        return DockerSession(reader, writer, tty, exec_id, container_id, self.engine)

    async def attach(self, container_id: str, *, stdin: bool, stdout: bool, stderr: bool) -> DockerSession:
        try:
            await self.engine.connect()
            inspect = await self.engine.call(self.engine.client.api.inspect_container, container_id)
        except (DockerException, RuntimeFailure) as exc:
            raise StreamError(str(getattr(exc, "explanation", None) or exc)) from exc
        tty = bool((inspect.get("Config") or {}).get("Tty"))
        query = f"stream=1&stdin={int(stdin)}&stdout={int(stdout)}&stderr={int(stderr)}"
        reader, writer = await self._hijack(f"/containers/{container_id}/attach?{query}", None)
        return DockerSession(reader, writer, tty, None, container_id, self.engine)


async def _error_body(reader: asyncio.StreamReader) -> str:
    with contextlib.suppress(Exception):
        data = await asyncio.wait_for(reader.read(4096), 2.0)
        text = data.decode("utf-8", "replace")
        start = text.find("{")
        if start >= 0:
            with contextlib.suppress(ValueError):
                return str(json.loads(text[start:]).get("message", text))
        return text.strip()
    return ""
