"""KubeClient over real HTTP against a local aiohttp server: auth, Content-Types, errors, watch framing."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.support.kubeconfigs import write_kubeconfig
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import ApiConnectionError, ApiStatusError, KubeClient, make_kube_client


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def record(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        seen.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "content_type": request.headers.get("Content-Type"),
                "auth": request.headers.get("Authorization"),
                "agent": request.headers.get("User-Agent"),
                "body": json.loads(body) if body else None,
            }
        )
        if request.path.endswith("/missing"):
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "NotFound",
                "message": 'nodes "missing" not found',
                "code": 404,
            }
            return web.json_response(status, status=404)
        if request.path.endswith(("/forbidden", "/terminating")):
            status = {
                "kind": "Status",
                "status": "Failure",
                "reason": "Forbidden",
                "message": 'events "e" is forbidden: ...',
                "code": 403,
                "details": {"name": "e", "kind": "events"},
            }
            if request.path.endswith("/terminating"):  # the NamespaceLifecycle admission's refusal
                status["details"]["causes"] = [  # type: ignore[index]
                    {"reason": "NamespaceTerminating", "message": "namespace ns is being terminated"}
                ]
            return web.json_response(status, status=403)
        if request.query.get("watch") == "true":
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            events = [
                {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "5"}}},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}},
            ]
            payload = b"".join(json.dumps(e).encode() + b"\n" for e in events)
            for i in range(0, len(payload), 5):  # events split over many chunks
                await response.write(payload[i : i + 5])
                await asyncio.sleep(0)
            await response.write(b'{"type":"DELETED","object":{"metadata":{"name":"a"}}}')  # no final newline
            await response.write_eof()
            return response
        return web.json_response(
            {"kind": "Node", "metadata": {"name": "x"}}, status=201 if request.method == "POST" else 200
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


def kubeconfig_for(tmp_path: Path, server: str) -> str:
    """A kubeconfig for `server` whose user sends the bearer token `secret-token`."""
    return str(write_kubeconfig(tmp_path / "kubeconfig", server, token="secret-token"))


@pytest.fixture
async def client(server: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> AsyncIterator[KubeClient]:
    kube = await make_kube_client(KubernetesConfig(kubeconfig=kubeconfig_for(tmp_path, server[0])))
    yield kube
    await kube.close()


async def test_verbs_send_json_with_auth_and_patch_content_types(
    client: KubeClient, server: tuple[str, list[dict[str, Any]]]
) -> None:
    _, seen = server
    assert (await client.get("/api/v1/nodes/x", {"resourceVersion": "0"}))["metadata"]["name"] == "x"
    await client.create("/api/v1/nodes", {"metadata": {"name": "x"}})
    await client.replace("/api/v1/nodes/x", {"metadata": {"name": "x"}})
    await client.patch("/api/v1/nodes/x/status", {"status": {}})
    await client.patch("/api/v1/nodes/x", {"metadata": {"labels": {"a": None}}}, "merge")
    await client.patch("/api/v1/nodes/x", [{"op": "remove", "path": "/spec/taints"}], "json")
    await client.delete("/api/v1/nodes/x", {"gracePeriodSeconds": 0})
    assert [s["method"] for s in seen] == ["GET", "POST", "PUT", "PATCH", "PATCH", "PATCH", "DELETE"]
    assert all(s["auth"] == "Bearer secret-token" for s in seen)
    assert all(s["agent"].startswith("vk-provider/") for s in seen)
    assert seen[0]["query"] == {"resourceVersion": "0"}
    assert [s["content_type"] for s in seen[3:6]] == [
        "application/strategic-merge-patch+json",
        "application/merge-patch+json",
        "application/json-patch+json",
    ]
    assert seen[4]["body"] == {"metadata": {"labels": {"a": None}}}
    assert seen[6]["body"] == {"gracePeriodSeconds": 0}
    with pytest.raises(ValueError):
        await client.patch("/api/v1/nodes/x", {}, "apply")


async def test_error_answer_raises_status_error(client: KubeClient) -> None:
    with pytest.raises(ApiStatusError) as caught:
        await client.get("/api/v1/nodes/missing")
    assert (caught.value.status, caught.value.reason) == (404, "NotFound")
    assert caught.value.message == 'nodes "missing" not found'


async def test_only_a_refusal_for_want_of_permission_goes_to_the_forbidden_hook(client: KubeClient) -> None:
    """A create in a terminating namespace is a 403 too, but no permission is missing: the
    provider must not log 'permission missing' and send a Node event for it."""
    reported: list[str] = []
    client.on_forbidden = lambda method, path, params, message: reported.append(path)
    for path in ("/api/v1/namespaces/ns/events/terminating", "/api/v1/namespaces/ns/events/forbidden"):
        with pytest.raises(ApiStatusError) as caught:
            await client.create(path, {})
        assert caught.value.status == 403
    assert reported == ["/api/v1/namespaces/ns/events/forbidden"]


async def test_watch_yields_events_across_chunks(
    client: KubeClient, server: tuple[str, list[dict[str, Any]]]
) -> None:
    async with contextlib.aclosing(client.watch("/api/v1/nodes", {"allowWatchBookmarks": True})) as stream:
        events = [event async for event in stream]
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK", "DELETED"]
    assert server[1][0]["query"] == {"allowWatchBookmarks": "true", "watch": "true"}


async def test_unreachable_server_raises_connection_error(tmp_path: Path) -> None:
    kube = await make_kube_client(KubernetesConfig(kubeconfig=kubeconfig_for(tmp_path, "http://127.0.0.1:9")))
    try:
        with pytest.raises(ApiConnectionError):
            await kube.get("/api/v1/nodes")
    finally:
        await kube.close()
