"""The kubelet API's and the sandbox API's listener against clients that misbehave (issue 30 items 2-4):
malformed requests get a 400 and one WARNING line per interval without a traceback; connections
that do not authenticate are capped while authenticated streams are not counted; a WebSocket
refuses permessage-deflate and closes with 1009 on a message of 1 MiB or more, fragmented or not.
In-process servers on 127.0.0.1; timeouts shortened through the listener's constants.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import types
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.support.abuse_server import SinkRuntime
from tests.support.raw_clients import closed_within, half_open, raw_request, websocket, ws_frame
from tests.support.sandbox import running_sandbox
from vk_common import guarded_listener as listener
from vk_provider.config import KubeletServerConfig
from vk_provider.kubeletapi import KubeletServer

EXEC = "/exec/default/web/app?command=sh&input=1&output=1"
OVERSIZED_LINE = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n"
GARBAGE_LINE = b"\x16\x03 what is this\r\n\r\n"


@contextlib.asynccontextmanager
async def _kubelet() -> AsyncIterator[int]:
    config = KubeletServerConfig(listen="127.0.0.1:0", auth="none")
    server = KubeletServer(config, "node-a", SinkRuntime(), "127.0.0.1")  # type: ignore[arg-type]
    await server.start()
    try:
        yield server.port
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def _sandbox(tmp_path: Path) -> AsyncIterator[int]:
    async with running_sandbox(tmp_path, controllers=False) as sandbox:
        yield sandbox.port


@pytest.fixture(params=["kubelet", "sandbox"])
async def port(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[int]:
    """The kubelet API (auth none) or the sandbox API, with a 1 s header timeout, at most 10
    unauthenticated connections and a 2 s log interval."""
    monkeypatch.setattr(listener, "HEADER_TIMEOUT", 1.0)
    monkeypatch.setattr(listener, "MAX_UNAUTHENTICATED", 10)
    monkeypatch.setattr(listener, "LOG_INTERVAL", 2.0)
    async with _kubelet() if request.param == "kubelet" else _sandbox(tmp_path) as bound:
        yield bound


@pytest.fixture
async def kubelet_port(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[int]:
    monkeypatch.setattr(listener, "HEADER_TIMEOUT", 1.0)
    monkeypatch.setattr(listener, "MAX_UNAUTHENTICATED", 10)
    async with _kubelet() as bound:
        yield bound


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.endswith(".http") and r.levelno >= logging.WARNING]


async def test_malformed_requests_get_400_and_one_warning_line_per_interval(
    port: int, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = types.SimpleNamespace(now=1000.0)  # the rate limit's clock: still until moved on
    monkeypatch.setattr(listener, "time", types.SimpleNamespace(monotonic=lambda: clock.now))
    caplog.set_level(logging.INFO)
    answers = [await raw_request(port, OVERSIZED_LINE if i % 2 else GARBAGE_LINE) for i in range(20)]
    assert {_status(a) for a in answers} == {400}, {a[:40] for a in answers}
    [line] = _warnings(caplog)
    assert line.levelno == logging.WARNING and line.exc_info is None and "\n" not in line.getMessage()
    assert line.getMessage() == "refused a malformed HTTP request" and line.remote == "127.0.0.1"
    assert line.code == 400 and line.reason
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    clock.now += 2.5  # the interval (2 s) is over: the next one is logged, with the count
    assert _status(await raw_request(port, OVERSIZED_LINE)) == 400
    # the 9 other oversized lines; aiohttp logs a first request that is not HTTP at all at DEBUG
    assert _warnings(caplog)[-1].suppressed == 9


async def test_unauthenticated_connections_are_capped_and_closed_after_the_header_timeout(
    kubelet_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    streams = []  # authenticated exec streams (auth none): never counted
    for _ in range(15):
        head, connection = await websocket(kubelet_port, EXEC, "v5.channel.k8s.io")
        assert head.startswith(b"HTTP/1.1 101")
        streams.append(connection)
    waiting = await half_open(kubelet_port, 10, b"GET /healthz HTTP/1.1\r\n")
    refused = await half_open(kubelet_port, 5, b"")
    assert await closed_within(refused, 0.5) != [None] * 5  # refused at once, long before the timeout
    assert None not in await closed_within(waiting, 10)  # closed by the 1 s header timeout
    closed = [r for r in caplog.records if "not authenticated" in r.getMessage()]
    assert [(r.unauthenticated, r.max) for r in closed] == [
        (10, 10)
    ]  # once in the interval, for 5 connections
    assert await closed_within(streams, 0.5) == [None] * 15  # the streams are still open
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http,
        http.get(f"https://127.0.0.1:{kubelet_port}/healthz") as response,
    ):
        assert response.status == 200  # room again


async def test_a_websocket_refuses_compression_and_messages_of_1_mib(kubelet_port: int) -> None:
    for frames in (
        ws_frame(b"\x00" + bytes(1 << 20)),  # one message of 1 MiB + 1
        ws_frame(b"\x00", fin=False) + ws_frame(bytes(64 * 1024), opcode=0, fin=False) * 17,  # fragmented
        ws_frame(b"\x00" + b"x", rsv1=True),  # compressed, which was not negotiated
    ):
        head, (reader, writer) = await websocket(kubelet_port, EXEC, "v5.channel.k8s.io")
        assert head.startswith(b"HTTP/1.1 101") and b"sec-websocket-extensions" not in head.lower()
        writer.write(frames)
        async with asyncio.timeout(10):
            data = await reader.read()  # the server's close frame, then EOF
        code = int.from_bytes(data[2:4], "big")
        assert data[0] == 0x88 and code == (1002 if frames[0] & 0x40 else 1009), data[:40]
        writer.close()
