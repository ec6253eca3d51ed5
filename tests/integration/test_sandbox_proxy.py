"""The sandbox's kubelet proxy against small HTTPS 'kubelets' that demand the sandbox's client cert.

A plain aiohttp app stands in for the API server route; each test checks what a client sees
through it: streamed logs, a WebSocket session and a raw SPDY-style upgrade piped byte for byte,
a refused upgrade relayed as is, and the Status the real server answers when the kubelet is down.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.support.stand_in_kubelet import serving_context
from vk_common.ports import free_port
from vk_sandbox.api.kubelet_proxy import kubelet_address, proxy_to_kubelet
from vk_sandbox.pki.authority import SandboxPKI

SPDY_HEAD_END = b"\r\n\r\n"


@dataclass
class Seen:
    """What the fake kubelet observed: client certificate CNs, paths and headers."""

    client_cns: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _peer_cn(transport: Any) -> str:
    peer = transport.get_extra_info("peercert") or {}
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""


def _node(port: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "fake"},
        "status": {
            "addresses": [
                {"type": "Hostname", "address": "fake-node-does-not-resolve"},
                {"type": "InternalIP", "address": "127.0.0.1"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        },
    }


@dataclass
class Env:
    api: str
    seen: Seen


async def _aiohttp_kubelet(pki: SandboxPKI, tmp: Path, seen: Seen) -> tuple[web.AppRunner, int]:
    async def logs(request: web.Request) -> web.StreamResponse:
        seen.client_cns.append(_peer_cn(request.transport))
        seen.paths.append(request.path_qs)
        seen.headers.append(dict(request.headers))
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        for i in range(3):
            await resp.write(f"line {i}\n".encode())
            if request.query.get("follow") == "true":
                await asyncio.sleep(0.05)
        return resp

    async def exec_ws(request: web.Request) -> web.StreamResponse:
        seen.client_cns.append(_peer_cn(request.transport))
        seen.paths.append(request.path_qs)
        ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io",))
        await ws.prepare(request)
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                await ws.send_bytes(b"\x01" + msg.data[1:])
                if msg.data[1:] == b"bye":
                    await ws.send_bytes(b'\x03{"metadata":{},"status":"Success"}')
                    await ws.close()
        return ws

    async def log_errors(request: web.Request) -> web.Response:
        code = int(request.match_info["pod"].removeprefix("status-"))
        return web.Response(
            status=code, text=f'previous terminated container "app" in pod "x" not found ({code})'
        )

    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "status": "Failure", "code": 400}, status=400)

    app = web.Application()
    app.router.add_get("/containerLogs/{ns}/{pod:status-.*}/{ctr}", log_errors)
    app.router.add_get("/containerLogs/{ns}/{pod}/{ctr}", logs)
    app.router.add_get("/exec/{ns}/{pod}/{ctr}", exec_ws)
    app.router.add_get("/attach/{ns}/{pod}/{ctr}", refuse)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=serving_context(pki, tmp))
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, port


async def _raw_spdy_kubelet(pki: SandboxPKI, tmp: Path, seen: Seen) -> tuple[asyncio.Server, int]:
    """Answers an upgrade with 101 SPDY/3.1 and then echoes every byte back, reversed per chunk."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(SPDY_HEAD_END)).decode("latin-1")
        seen.client_cns.append(_peer_cn(writer.transport))
        lines = head.split("\r\n")
        seen.paths.append(lines[0])
        seen.headers.append({k: v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)})
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
            b"X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\nhello-from-kubelet"
        )
        await writer.drain()
        while data := await reader.read(65536):
            writer.write(data[::-1])
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=serving_context(pki, tmp))
    return server, server.sockets[0].getsockname()[1]


async def _api_front(pki: SandboxPKI, node_for: dict[str, dict[str, Any]]) -> tuple[web.AppRunner, str]:
    """A stand-in for the sandbox's pod subresource route: /{kind}/{ns}/{pod}/{sub...}."""

    async def route(request: web.Request) -> web.StreamResponse:
        node = node_for[request.match_info["kind"]]
        return await proxy_to_kubelet(request, node, "/" + request.match_info["rest"], pki)

    app = web.Application()
    app.router.add_route("*", "/{kind}/{rest:.*}", route)
    runner = web.AppRunner(app, handler_cancellation=True)  # as SandboxServer runs it
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    pki = SandboxPKI(tmp_path / "state")
    seen = Seen()
    kubelet, kport = await _aiohttp_kubelet(pki, tmp_path, seen)
    spdy, sport = await _raw_spdy_kubelet(pki, tmp_path, seen)
    front, api = await _api_front(
        pki, {"aio": _node(kport), "spdy": _node(sport), "down": _node(free_port())}
    )
    yield Env(api, seen)
    await front.cleanup()
    spdy.close()
    await spdy.wait_closed()
    await kubelet.cleanup()


def test_kubelet_address_prefers_internal_ip_and_defaults_port() -> None:
    assert kubelet_address(_node(1234)) == ("127.0.0.1", 1234)
    assert kubelet_address({"status": {"addresses": [{"type": "Hostname", "address": "h"}]}}) == (
        "h",
        10250,
    )
    assert kubelet_address({"metadata": {"name": "n"}}) == ("127.0.0.1", 10250)


async def test_logs_stream_with_client_certificate(env: Env) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{env.api}/aio/containerLogs/ns/web/app",
            params={"follow": "true", "tailLines": "10"},
            headers={"Authorization": "Bearer secret"},
        ) as resp,
    ):
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        lines = [line async for line in resp.content]
    assert lines == [b"line 0\n", b"line 1\n", b"line 2\n"]
    assert env.seen.client_cns == ["kube-apiserver-kubelet-client"]
    assert env.seen.paths == ["/containerLogs/ns/web/app?follow=true&tailLines=10"]
    assert "Authorization" not in env.seen.headers[0]


@pytest.mark.parametrize("protocol", ["binary.k8s.io", "base64.k8s.io"])
async def test_websocket_logs_are_read_plainly_and_written_as_messages(env: Env, protocol: str) -> None:
    """As the real server's StreamObject (the upstream "should support retrieving logs from the
    container over websockets" conformance spec): the kubelet gets a plain GET, the client the
    log as messages, binary or base64 by the protocol it asked for, then a close."""
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{env.api}/aio/containerLogs/ns/web/app", protocols=(protocol,)) as ws,
    ):
        assert ws.protocol == protocol
        received = b""
        async for msg in ws:
            received += msg.data if msg.type == aiohttp.WSMsgType.BINARY else base64.b64decode(msg.data)
    assert received == b"line 0\nline 1\nline 2\n"
    assert "Upgrade" not in env.seen.headers[0]


async def test_websocket_exec_is_piped_end_to_end(env: Env) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(
            f"{env.api}/aio/exec/ns/web/app?command=sh&input=1&output=1",
            protocols=("v5.channel.k8s.io",),
        ) as ws,
    ):
        assert ws.protocol == "v5.channel.k8s.io"
        await ws.send_bytes(b"\x00hello")
        assert (await ws.receive_bytes(timeout=10)) == b"\x01hello"
        await ws.send_bytes(b"\x00bye")
        assert (await ws.receive_bytes(timeout=10)) == b"\x01bye"
        assert (await ws.receive_bytes(timeout=10)).startswith(b'\x03{"metadata"')
        closing = await ws.receive(timeout=10)
        assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert env.seen.client_cns == ["kube-apiserver-kubelet-client"]
    assert env.seen.paths == ["/exec/ns/web/app?command=sh&input=1&output=1"]


async def _raw_request(api: str, head: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = api.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(head.encode("latin-1"))
    await writer.drain()
    return reader, writer


async def test_spdy_upgrade_relays_101_and_raw_bytes(env: Env) -> None:
    reader, writer = await _raw_request(
        env.api,
        "POST /spdy/exec/ns/web/app?command=cat&input=1 HTTP/1.1\r\nHost: x\r\n"
        "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
        "Content-Length: 0\r\n\r\n",
    )
    head = (await asyncio.wait_for(reader.readuntil(SPDY_HEAD_END), 10)).decode("latin-1")
    assert head.startswith("HTTP/1.1 101 ")
    assert "Upgrade: SPDY/3.1" in head
    assert "X-Stream-Protocol-Version: v4.channel.k8s.io" in head
    assert await asyncio.wait_for(reader.readexactly(len(b"hello-from-kubelet")), 10) == b"hello-from-kubelet"
    payload = bytes(range(256))
    writer.write(payload)
    await writer.drain()
    assert await asyncio.wait_for(reader.readexactly(256), 10) == payload[::-1]
    writer.close()
    await writer.wait_closed()
    assert env.seen.client_cns == ["kube-apiserver-kubelet-client"]
    assert env.seen.paths == ["POST /exec/ns/web/app?command=cat&input=1 HTTP/1.1"]
    forwarded = env.seen.headers[0]
    assert forwarded["Upgrade"] == "SPDY/3.1"
    assert forwarded["X-Stream-Protocol-Version"] == "v4.channel.k8s.io"
    assert forwarded["Host"].startswith("127.0.0.1:")


async def test_refused_upgrade_is_relayed(env: Env) -> None:
    async with aiohttp.ClientSession() as session:
        # SPDY: the kubelet's refusal comes back as it is (UpgradeAwareHandler).
        async with session.get(
            f"{env.api}/aio/attach/ns/web/app", headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}
        ) as resp:
            assert resp.status == 400
            assert (await resp.json())["code"] == 400
        # WebSocket exec/attach: the real server's stream translator accepts the WebSocket, then
        # sends the kubelet's Status on the error channel and closes.
        async with session.ws_connect(
            f"{env.api}/aio/attach/ns/web/app", protocols=("v5.channel.k8s.io",)
        ) as ws:
            assert ws.protocol == "v5.channel.k8s.io"
            message = await ws.receive_bytes()
            assert message[0] == 3
            assert json.loads(message[1:]) == {"kind": "Status", "status": "Failure", "code": 400}


async def test_unreachable_kubelet_gives_status(env: Env) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{env.api}/down/containerLogs/ns/web/app") as resp:
            assert resp.status == 500
            body = await resp.json()
        assert body["kind"] == "Status"
        assert body["code"] == 500
        assert body["status"] == "Failure"
        assert "/containerLogs/ns/web/app" in body["message"]
        assert "connect: connection refused" in body["message"]
        with pytest.raises(aiohttp.WSServerHandshakeError) as err:
            await session.ws_connect(f"{env.api}/down/exec/ns/web/app", protocols=("v5.channel.k8s.io",))
        assert err.value.status == 500
        async with session.get(
            f"{env.api}/down/exec/ns/web/app", headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}
        ) as resp:
            body = await resp.json()
        assert body["message"].startswith("error dialing backend: dial tcp 127.0.0.1:")


@pytest.mark.parametrize(
    ("code", "reason", "message"),
    [
        (400, "BadRequest", 'previous terminated container "app" in pod "x" not found (400)'),
        (
            500,
            "InternalError",
            'Internal error occurred: previous terminated container "app" in pod "x" not found (500)',
        ),
        (404, "NotFound", "the server could not find the requested resource ( pods/log status-404)"),
        (
            403,
            "Forbidden",
            'previous terminated container "app" in pod "x" not found (403) ( pods/log status-403)',
        ),
    ],
)
async def test_kubelet_log_errors_become_status(env: Env, code: int, reason: str, message: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{env.api}/aio/containerLogs/ns/status-{code}/app") as resp,
    ):
        assert resp.status == code
        body = await resp.json()
    assert body["kind"] == "Status"
    assert (body["code"], body["reason"], body["message"]) == (code, reason, message)
