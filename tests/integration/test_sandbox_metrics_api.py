"""The sandbox's metrics.k8s.io API over HTTP, against a stand-in kubelet: an HTTPS server that
requires the sandbox CA's client certificate (as a provider with `auth: x509` does) and serves a
fixed `/stats/summary`. Checks which nodes and pods are answered (Ready nodes whose kubelet
answers; Running pods with a rate), selectors, and metrics-server's errors. No Docker.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.support.polling import eventually
from tests.support.sandbox import RunningSandbox, admin_session, running_sandbox
from vk_common.ports import free_port
from vk_provider.kubeletapi.tls import self_signed

DEADLINE = 30.0
PREFIX = "/apis/metrics.k8s.io/v1beta1"
STAMP = "2026-11-30T01:00:00Z"


def _stats(name: str, nano: int, working_set: int) -> dict[str, Any]:
    return {
        "name": name,
        "cpu": {"time": STAMP, "usageNanoCores": nano, "usageCoreNanoSeconds": 10**10},
        "memory": {"time": STAMP, "usageBytes": working_set, "workingSetBytes": working_set},
    }


SUMMARY = {
    "node": {
        "nodeName": "live",
        "cpu": {"time": STAMP, "usageNanoCores": 3_000_000, "usageCoreNanoSeconds": 3 * 10**10},
        "memory": {"time": STAMP, "workingSetBytes": 3 * 1024 * 1024},
    },
    "pods": [
        {
            "podRef": {"name": name, "namespace": "default", "uid": name},
            "containers": [_stats("app", 1_000_000, 1024 * 1024)],
        }
        for name in ("web", "other", "pending")
    ]
    + [
        {
            "podRef": {"name": "side", "namespace": "kube-system", "uid": "side"},
            "containers": [_stats("a", 1_000_000, 1024 * 1024), _stats("b", 0, 1024 * 1024)],
        }
    ],
}


class StandInKubelet:
    def __init__(self) -> None:
        self.clients: list[str] = []
        self.port = 0

    async def summary(self, request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(item[0] for item in (peer or {}).get("subject", ()))
        self.clients.append(str(subject.get("commonName")))
        return web.json_response(SUMMARY)


@pytest.fixture
async def kubelet(tmp_path: Path) -> AsyncIterator[tuple[RunningSandbox, StandInKubelet]]:
    async with running_sandbox(tmp_path, controllers=False) as sandbox:
        cert, key = self_signed("live", "127.0.0.1")
        (tmp_path / "k.crt").write_bytes(cert)
        (tmp_path / "k.key").write_bytes(key)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tmp_path / "k.crt", tmp_path / "k.key")
        ctx.load_verify_locations(sandbox.pki.ca_cert_path)
        ctx.verify_mode = ssl.CERT_REQUIRED
        stand_in = StandInKubelet()
        app = web.Application()
        app.router.add_get("/stats/summary", stand_in.summary)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        stand_in.port = runner.addresses[0][1]
        try:
            await _objects(sandbox, stand_in.port)
            yield sandbox, stand_in
        finally:
            await runner.cleanup()


async def _objects(sandbox: RunningSandbox, port: int) -> None:
    for name, ready, kubelet_port in (
        ("live", "True", port),
        ("dead", "True", free_port()),
        ("down", "False", port),
    ):
        await sandbox.store.create(
            "nodes",
            {
                "metadata": {"name": name, "labels": {"tier": "a" if name == "live" else "b"}},
                "status": {
                    "conditions": [{"type": "Ready", "status": ready}],
                    "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
                },
            },
        )
    for namespace, name, phase in (
        ("default", "web", "Running"),
        ("default", "other", "Running"),
        ("default", "pending", "Pending"),
        ("kube-system", "side", "Running"),
    ):
        await sandbox.store.create(
            "pods",
            {
                "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
                "spec": {"nodeName": "live", "containers": [{"name": "app", "image": "x"}]},
                "status": {"phase": phase},
            },
        )


async def _get(sandbox: RunningSandbox, path: str, method: str = "GET") -> tuple[int, Any]:
    async with admin_session(sandbox) as session, session.request(method, sandbox.url + path) as response:
        return response.status, await response.json(content_type=None)


async def _names(sandbox: RunningSandbox, path: str) -> list[str]:
    status, body = await _get(sandbox, path)
    assert status == 200, body
    return [item["metadata"]["name"] for item in body["items"]]


async def _second_scrape(sandbox: RunningSandbox) -> None:
    await eventually(
        lambda: _names(sandbox, f"{PREFIX}/nodes"),
        within=DEADLINE,
        interval=0.5,
        what="NodeMetrics after the second scrape",
    )


async def test_the_first_scrape_has_no_rate_yet(kubelet: tuple[RunningSandbox, StandInKubelet]) -> None:
    sandbox, stand_in = kubelet
    status, body = await _get(sandbox, f"{PREFIX}/nodes")
    assert (status, body) == (
        200,
        {"kind": "NodeMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": []},
    )
    assert await _names(sandbox, f"{PREFIX}/pods") == []
    # one scrape of each Ready node, cached: the second request did not reach the kubelet again
    assert stand_in.clients == ["kube-apiserver-kubelet-client"]


async def test_ready_nodes_whose_kubelet_answers(kubelet: tuple[RunningSandbox, StandInKubelet]) -> None:
    sandbox, _ = kubelet
    await _second_scrape(sandbox)
    status, node = await _get(sandbox, f"{PREFIX}/nodes/live")
    assert status == 200
    assert node["kind"] == "NodeMetrics" and node["metadata"]["labels"] == {"tier": "a"}
    assert node["usage"] == {"cpu": "3m", "memory": "3Mi"} and node["timestamp"] == STAMP
    assert node["window"].endswith("s") and float(node["window"][:-1]) >= 4.0
    assert await _names(sandbox, f"{PREFIX}/nodes?labelSelector=tier%3Db") == []
    assert await _names(sandbox, f"{PREFIX}/nodes?fieldSelector=metadata.name%3Dlive") == ["live"]
    for name in ("dead", "down"):
        status, body = await _get(sandbox, f"{PREFIX}/nodes/{name}")
        assert status == 404 and body["message"] == f'nodes.metrics.k8s.io "{name}" not found', body
    status, body = await _get(sandbox, f"{PREFIX}/nodes/ghost")
    assert status == 404 and body["message"] == 'nodes "ghost" not found'


async def test_running_pods_by_namespace_and_selector(kubelet: tuple[RunningSandbox, StandInKubelet]) -> None:
    sandbox, _ = kubelet
    await _second_scrape(sandbox)
    assert await _names(sandbox, f"{PREFIX}/namespaces/default/pods") == ["other", "web"]
    assert await _names(sandbox, f"{PREFIX}/pods") == ["other", "web", "side"]
    assert await _names(sandbox, f"{PREFIX}/namespaces/default/pods?labelSelector=app%3Dweb") == ["web"]
    status, side = await _get(sandbox, f"{PREFIX}/namespaces/kube-system/pods/side")
    assert status == 200 and side["metadata"]["namespace"] == "kube-system"
    assert side["containers"] == [
        {"name": "a", "usage": {"cpu": "1m", "memory": "1Mi"}},
        {"name": "b", "usage": {"cpu": "0", "memory": "1Mi"}},
    ]
    status, body = await _get(sandbox, f"{PREFIX}/namespaces/default/pods/pending")
    assert status == 404 and body["message"] == 'pods.metrics.k8s.io "default/pending" not found'
    status, body = await _get(sandbox, f"{PREFIX}/namespaces/default/pods/ghost")
    assert status == 404 and body["message"] == 'pods "ghost" not found'


async def test_only_get_and_list(kubelet: tuple[RunningSandbox, StandInKubelet]) -> None:
    sandbox, _ = kubelet
    assert (await _get(sandbox, f"{PREFIX}/namespaces/default/pods", "POST"))[0] == 405
    assert (await _get(sandbox, f"{PREFIX}/nodes?watch=true"))[0] == 405
    assert (await _get(sandbox, f"{PREFIX}/namespaces/default/nodes"))[0] == 404
    assert (await _get(sandbox, f"{PREFIX}/services"))[0] == 404
