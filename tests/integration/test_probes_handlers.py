"""Probe handlers against real sockets on 127.0.0.1 (no Docker): httpGet, tcpSocket, grpc."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from aiohttp import web

from tests.support.grpc_health_server import HealthServer
from vk_common.ports import free_port
from vk_provider.probes.handlers import ProbeError, ProbeOutcome, run_probe
from vk_provider.probes.results import Result
from vk_provider.probes.spec import ProbeType, parse_probe
from vk_provider.runtime.protocol import Runtime

NO_RUNTIME = cast(Runtime, object())


@pytest.fixture
async def server() -> AsyncIterator[tuple[int, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        if request.path == "/healthz":
            return web.Response(text="ok")
        if request.path == "/moved":
            return web.Response(status=302, headers={"Location": "/healthz"})
        if request.path == "/away":
            return web.Response(status=302, headers={"Location": "http://0.0.0.0/"}, text="<a>Found</a>.")
        if request.path == "/loop":
            return web.Response(status=302, headers={"Location": "/loop"})
        return web.Response(status=503, text="down")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    yield port, seen
    await runner.cleanup()


async def probe(probe: dict[str, Any], container: dict[str, Any] | None = None) -> ProbeOutcome:
    spec = parse_probe(ProbeType.READINESS, probe)
    return await run_probe(NO_RUNTIME, container or {"name": "c"}, "cid", spec, "127.0.0.1")


async def test_http_get_success_failure_and_headers(server: tuple[int, list[dict[str, str]]]) -> None:
    port, seen = server
    container = {"name": "web", "ports": [{"name": "http", "containerPort": port}]}
    ok = await probe(
        {"httpGet": {"path": "healthz", "port": "http", "httpHeaders": [{"name": "x-probe", "value": "1"}]}},
        container,
    )
    assert ok == ProbeOutcome(Result.SUCCESS, "ok")
    assert seen[-1]["X-Probe"] == "1"
    assert seen[-1]["User-Agent"].startswith("kube-probe/")
    # Redirects to the same host are followed; one to another host ends the probe as a success
    # with a warning (pkg/probe/http: probe.Warning, "Probe terminated redirects").
    assert await probe({"httpGet": {"path": "/moved", "port": port}}) == ProbeOutcome(Result.SUCCESS, "ok")
    away = await probe({"httpGet": {"path": "/away", "port": port}})
    assert away == ProbeOutcome(
        Result.SUCCESS, "Probe terminated redirects, Response body: <a>Found</a>.", True
    )
    loop = await probe({"httpGet": {"path": "/loop", "port": port}})
    assert loop.result == Result.FAILURE and "stopped after 10 redirects" in loop.output
    down = await probe({"httpGet": {"path": "/", "port": port}})
    assert down == ProbeOutcome(Result.FAILURE, "HTTP probe failed with statuscode: 503")


async def test_http_get_refused_and_unknown_port() -> None:
    port = free_port()
    refused = await probe({"httpGet": {"port": port}})
    assert refused.result == Result.FAILURE
    assert refused.output.startswith(f'Get "http://127.0.0.1:{port}/": ')
    with pytest.raises(ProbeError, match="couldn't find port: metrics in c"):
        await probe({"httpGet": {"port": "metrics"}})


async def test_tcp_socket_open_and_closed() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert (await probe({"tcpSocket": {"port": port}})).result == Result.SUCCESS
    closed = await probe({"tcpSocket": {"port": port}})
    assert closed == ProbeOutcome(Result.FAILURE, f"dial tcp 127.0.0.1:{port}: connect: connection refused")


async def test_grpc_health_check_against_a_real_h2c_server() -> None:
    async with HealthServer() as server:
        server.statuses.update({"ready": "SERVING", "busy": "NOT_SERVING"})
        assert await probe({"grpc": {"port": server.port}}) == ProbeOutcome(Result.SUCCESS, "service healthy")
        assert server.requests[-1][0] == ""
        assert server.requests[-1][1].startswith("kube-probe/")
        ready = await probe({"grpc": {"port": server.port, "service": "ready"}})
        assert ready == ProbeOutcome(Result.SUCCESS, "service healthy")
        assert server.requests[-1][0] == "ready"
        busy = await probe({"grpc": {"port": server.port, "service": "busy"}})
        assert busy == ProbeOutcome(Result.FAILURE, 'service unhealthy (responded with "NOT_SERVING")')
        unknown = await probe({"grpc": {"port": server.port, "service": "nope"}})
        assert unknown == ProbeOutcome(
            Result.FAILURE,
            "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service",
        )
        server.implements_health = False
        plain = await probe({"grpc": {"port": server.port}})
        assert plain == ProbeOutcome(
            Result.FAILURE,
            "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): "
            "unknown service grpc.health.v1.Health",
        )


async def test_grpc_nothing_listening_times_out_like_a_blocking_dial() -> None:
    port = free_port()
    began = time.monotonic()
    outcome = await probe({"grpc": {"port": port}, "timeoutSeconds": 1})
    assert outcome == ProbeOutcome(
        Result.FAILURE,
        f'timeout: failed to connect service "127.0.0.1:{port}" within 1s: context deadline exceeded',
    )
    assert 0.9 <= time.monotonic() - began < 5


async def test_grpc_a_server_that_never_answers_is_an_rpc_timeout() -> None:
    with socket.socket() as listener:  # accepts (the backlog) but never speaks HTTP/2
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        outcome = await probe({"grpc": {"port": port}, "timeoutSeconds": 1})
    assert outcome == ProbeOutcome(Result.FAILURE, "timeout: health rpc did not complete within 1s")
