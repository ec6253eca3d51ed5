"""The sandbox's pods/ephemeralcontainers subresource, as `kubectl debug` uses it (no Docker)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.support.sandbox import RunningSandbox, admin_session, api_client, running_sandbox

_PATH = "/api/v1/namespaces/default/pods/web/ephemeralcontainers"
_SMP = {"Content-Type": "application/strategic-merge-patch+json"}


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RunningSandbox]:
    async with running_sandbox(tmp_path, controllers=False) as server, api_client(server) as api:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "vk-test/busybox:1"}]},
        }
        await client.CoreV1Api(api).create_namespaced_pod("default", pod)
        yield server


async def _request(
    server: RunningSandbox, method: str, path: str, body: Any, **kwargs: Any
) -> tuple[int, Any]:
    headers = kwargs.pop("headers", {"Content-Type": "application/json"})
    data = None if body is None else json.dumps(body)
    async with (
        admin_session(server) as http,
        http.request(method, server.url + path, data=data, headers=headers, **kwargs) as response,
    ):
        return response.status, await response.json()


def _debugger(name: str = "dbg", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "vk-test/busybox:1", **fields}


async def test_patch_adds_an_ephemeral_container_and_nothing_else(server: RunningSandbox) -> None:
    patch = {
        "metadata": {"labels": {"app": "changed"}},
        "spec": {"ephemeralContainers": [_debugger(targetContainerName="c")]},
    }
    status, pod = await _request(server, "PATCH", _PATH, patch, headers=_SMP)
    assert status == 200, pod
    [added] = pod["spec"]["ephemeralContainers"]
    # defaulted as the apiserver does, and only the ephemeral containers changed
    assert added["targetContainerName"] == "c" and added["terminationMessagePolicy"] == "File"
    assert added["imagePullPolicy"] == "IfNotPresent"
    assert pod["metadata"]["labels"] == {"app": "web"}
    status, got = await _request(server, "GET", _PATH, None)
    assert status == 200 and got["spec"]["ephemeralContainers"] == [added]


async def test_put_may_not_remove_or_change_an_ephemeral_container(server: RunningSandbox) -> None:
    status, pod = await _request(
        server, "PATCH", _PATH, {"spec": {"ephemeralContainers": [_debugger()]}}, headers=_SMP
    )
    assert status == 200
    removed = json.loads(json.dumps(pod))
    removed["spec"]["ephemeralContainers"] = []
    status, body = await _request(server, "PUT", _PATH, removed)
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec.ephemeralContainers"
    assert 'existing ephemeral containers "dbg" may not be removed' in body["message"]
    changed = json.loads(json.dumps(pod))
    changed["spec"]["ephemeralContainers"][0]["image"] = "vk-test/busybox:2"
    status, body = await _request(server, "PUT", _PATH, changed)
    assert status == 422 and 'existing ephemeral containers "dbg" may not be changed' in body["message"]


async def test_an_ephemeral_container_is_validated_as_upstream(server: RunningSandbox) -> None:
    bad = _debugger(
        "c",
        targetContainerName="nope",
        ports=[{"containerPort": 80}],
        volumeMounts=[{"name": "v", "mountPath": "/v", "subPath": "x"}],
    )
    status, body = await _request(
        server, "PATCH", _PATH, {"spec": {"ephemeralContainers": [bad]}}, headers=_SMP
    )
    assert status == 422
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert ("spec.ephemeralContainers[0].name", 'Duplicate value: "c"') in causes
    assert ("spec.ephemeralContainers[0].targetContainerName", 'Not found: "nope"') in causes
    assert (
        "spec.ephemeralContainers[0].ports",
        "Forbidden: cannot be set for an Ephemeral Container",
    ) in causes
    assert (
        "spec.ephemeralContainers[0].volumeMounts[0].subPath",
        "Forbidden: cannot be set for an Ephemeral Container",
    ) in causes


async def test_the_main_resource_may_not_add_ephemeral_containers(server: RunningSandbox) -> None:
    patch = {"spec": {"ephemeralContainers": [_debugger()]}}
    status, body = await _request(server, "PATCH", "/api/v1/namespaces/default/pods/web", patch, headers=_SMP)
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec"
