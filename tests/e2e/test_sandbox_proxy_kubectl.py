"""The real kubectl through the sandbox API server to a stand-in kubelet: logs -f and exec.

The kubelet here is a small HTTPS server that demands the sandbox's client certificate and
speaks just enough of the kubelet API (a log stream; a v5.channel.k8s.io WebSocket exec that
prints a line and reports Success), so the test shows what kubectl users see through the proxy.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.support.kubectl import run_kubectl
from tests.support.manifests import kubelet_node, pod
from tests.support.stand_in_kubelet import serving_context
from vk_sandbox.server import SandboxServer

NODE = "proxy-node"


async def _kubelet(server: SandboxServer, tmp: Path, seen: list[str]) -> tuple[web.AppRunner, int]:
    async def logs(request: web.Request) -> web.StreamResponse:
        seen.append(request.path_qs)
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        for i in range(3):
            await resp.write(f"log line {i}\n".encode())
            await asyncio.sleep(0.05)
        return resp

    async def exec_(request: web.Request) -> web.StreamResponse:
        seen.append(request.path_qs)
        ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io",))
        await ws.prepare(request)
        command = " ".join(request.query.getall("command", []))
        await ws.send_bytes(b"\x01ran: " + command.encode() + b"\n")
        await ws.send_bytes(b'\x03{"metadata":{},"status":"Success"}')
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/containerLogs/{ns}/{pod}/{ctr}", logs)
    app.router.add_get("/exec/{ns}/{pod}/{ctr}", exec_)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=serving_context(server.pki, tmp))
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[tuple[SandboxServer, Path, list[str]]]:
    server = SandboxServer(state_dir=tmp_path / "state")
    await server.start()
    seen: list[str] = []
    kubelet, port = await _kubelet(server, tmp_path, seen)
    await server.store.create("nodes", kubelet_node(NODE, port))
    web = pod("web", [{"name": "app", "image": "vk-test/busybox:1"}], nodeName=NODE)
    await server.store.create("pods", {**web, "status": {"phase": "Running"}})
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    yield server, kubeconfig, seen
    await kubelet.cleanup()
    await server.stop()


@pytest.mark.kubectl
async def test_kubectl_logs_follow_through_proxy(sandbox: tuple[SandboxServer, Path, list[str]]) -> None:
    _, kubeconfig, seen = sandbox
    code, out, err = await run_kubectl(kubeconfig, "logs", "-f", "web", "--tail=5")
    assert code == 0, err
    assert out == "log line 0\nlog line 1\nlog line 2\n"
    assert seen == ["/containerLogs/default/web/app?follow=true&tailLines=5"]


@pytest.mark.kubectl
async def test_kubectl_exec_through_proxy(sandbox: tuple[SandboxServer, Path, list[str]]) -> None:
    _, kubeconfig, seen = sandbox
    code, out, err = await run_kubectl(kubeconfig, "exec", "web", "--", "echo", "hi")
    assert code == 0, err
    assert out == "ran: echo hi\n"
    assert seen[0].startswith("/exec/default/web/app?")
