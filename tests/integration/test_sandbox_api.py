"""kubernetes_asyncio against the sandbox API server: round-trips, watch semantics, conflicts, deletion."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.support.sandbox import RunningSandbox, admin_session, api_client, running_sandbox
from vk_common.kube_version import KUBE_MAJOR, KUBE_MINOR, KUBE_VERSION


def _pod(name: str, node: str = "", **labels: str) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web", **labels}},
        "spec": {"containers": [{"name": "c", "image": "vk-test/busybox:1"}]},
    }
    if node:
        pod["spec"]["nodeName"] = node
    return pod


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[RunningSandbox, client.CoreV1Api]]:
    async with running_sandbox(tmp_path, controllers=False) as server, api_client(server) as api:
        yield server, client.CoreV1Api(api)


async def _events(stream: Any, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    async with asyncio.timeout(10):
        async for event in stream:
            out.append(event)
            if len(out) == count:
                break
    return out


async def test_pod_round_trip(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    created = await v1.create_namespaced_pod("default", _pod("web"))
    assert created.metadata.uid and created.status.phase == "Pending"
    assert (
        created.spec.restart_policy == "Always"
        and created.spec.containers[0].image_pull_policy == "IfNotPresent"
    )
    got = await v1.read_namespaced_pod("web", "default")
    assert got.metadata.resource_version == created.metadata.resource_version
    listed = await v1.list_namespaced_pod("default", label_selector="app=web")
    assert [p.metadata.name for p in listed.items] == ["web"]
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)

    w = watch.Watch()
    stream = w.stream(
        v1.list_namespaced_pod,
        "default",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=10,
    )
    patched = await v1.patch_namespaced_pod_status(
        "web", "default", {"status": {"phase": "Running", "podIP": "10.0.0.7"}}
    )
    assert patched.status.phase == "Running" and patched.status.pod_ip == "10.0.0.7"
    [event] = await _events(stream, 1)
    assert event["type"] == "MODIFIED" and event["object"].status.phase == "Running"
    w.stop()

    deleted = await v1.delete_namespaced_pod("web", "default")
    assert deleted.metadata.name == "web"  # unbound: removed at once
    with pytest.raises(ApiException) as e:
        await v1.read_namespaced_pod("web", "default")
    assert e.value.status == 404
    assert json.loads(e.value.body)["message"] == 'pods "web" not found'


async def test_watch_resume_gets_exactly_the_missed_events(
    env: tuple[RunningSandbox, client.CoreV1Api],
) -> None:
    _, v1 = env
    first = await v1.create_namespaced_pod("default", _pod("a"))
    since = first.metadata.resource_version
    await v1.create_namespaced_pod("default", _pod("b"))
    await v1.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"v": "2"}}})
    await v1.delete_namespaced_pod("b", "default")
    w = watch.Watch()
    stream = w.stream(v1.list_namespaced_pod, "default", resource_version=since, timeout_seconds=10)
    missed = await _events(stream, 4)
    assert [(e["type"], e["object"].metadata.name) for e in missed] == [
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("MODIFIED", "b"),  # deletionTimestamp set (grace 0: unbound), as the real registry writes it
        ("DELETED", "b"),
    ]
    await v1.create_namespaced_pod("default", _pod("c"))
    [live] = await _events(stream, 1)
    assert (live["type"], live["object"].metadata.name) == ("ADDED", "c")
    w.stop()


async def test_too_old_resource_version_gives_410_error_event(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, controllers=False) as server, api_client(server) as api:
        await client.CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "x"}})
    # a restarted sandbox keeps its objects, but not its event log
    async with running_sandbox(tmp_path, controllers=False) as server, api_client(server) as api:
        v1 = client.CoreV1Api(api)
        assert (await v1.read_namespaced_config_map("x", "default")).metadata.name == "x"
        async with admin_session(server) as http:
            url = f"{server.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1"
            async with http.get(url) as response:
                assert response.status == 200
                lines = [json.loads(line) async for line in response.content]
        assert len(lines) == 1 and lines[0]["type"] == "ERROR"
        status = lines[0]["object"]
        assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
        assert status["message"].startswith("too old resource version: 1 (")
        w = watch.Watch()
        with pytest.raises(ApiException) as e:
            await _events(
                w.stream(v1.list_namespaced_config_map, "default", resource_version="1", timeout_seconds=5), 1
            )
        assert e.value.status == 410


async def test_stale_update_conflicts_with_the_real_message(
    env: tuple[RunningSandbox, client.CoreV1Api],
) -> None:
    _, v1 = env
    pod = await v1.create_namespaced_pod("default", _pod("web"))
    pod.metadata.labels["x"] = "1"
    await v1.replace_namespaced_pod("web", "default", pod)
    pod.metadata.labels["x"] = "2"
    with pytest.raises(ApiException) as e:
        await v1.replace_namespaced_pod("web", "default", pod)  # still the old resourceVersion
    assert e.value.status == 409
    body = json.loads(e.value.body)
    assert body["reason"] == "Conflict" and body["details"] == {"name": "web", "kind": "pods"}
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "web": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_noop_write_keeps_resource_version(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    pod = await v1.create_namespaced_pod("default", _pod("web"))
    again = await v1.patch_namespaced_pod_status("web", "default", {"status": {"phase": "Pending"}})
    assert again.metadata.resource_version == pod.metadata.resource_version


async def test_graceful_deletion_sequence(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    pod = await v1.create_namespaced_pod("default", _pod("web", node="node-1"))
    w = watch.Watch()
    stream = w.stream(
        v1.list_namespaced_pod, "default", resource_version=pod.metadata.resource_version, timeout_seconds=15
    )
    before = datetime.now(UTC).replace(microsecond=0)
    marked = await v1.delete_namespaced_pod("web", "default")
    assert marked.metadata.deletion_grace_period_seconds == 30
    assert (marked.metadata.deletion_timestamp - before).total_seconds() >= 29
    [event] = await _events(stream, 1)
    assert event["type"] == "MODIFIED" and event["object"].metadata.deletion_timestamp is not None
    # still there, terminating; a longer grace changes nothing
    longer = await v1.delete_namespaced_pod("web", "default", grace_period_seconds=100)
    assert longer.metadata.resource_version == marked.metadata.resource_version
    # the node's final delete: grace 0 with a uid precondition
    with pytest.raises(ApiException) as e:
        await v1.delete_namespaced_pod(
            "web",
            "default",
            body=client.V1DeleteOptions(grace_period_seconds=0, preconditions={"uid": "nope"}),
        )
    assert e.value.status == 409
    await v1.delete_namespaced_pod(
        "web",
        "default",
        body=client.V1DeleteOptions(grace_period_seconds=0, preconditions={"uid": pod.metadata.uid}),
    )
    events = await _events(stream, 2)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    w.stop()
    with pytest.raises(ApiException):
        await v1.read_namespaced_pod("web", "default")


async def test_status_strategic_merge_keeps_unmentioned_condition(
    env: tuple[RunningSandbox, client.CoreV1Api],
) -> None:
    _, v1 = env
    await v1.create_namespaced_pod("default", _pod("web", node="node-1"))
    t = "2025-01-01T00:00:00Z"
    await v1.patch_namespaced_pod_status(
        "web",
        "default",
        {
            "status": {
                "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": t},
                    {"type": "Ready", "status": "False", "lastTransitionTime": t},
                ]
            }
        },
    )
    pod = await v1.patch_namespaced_pod_status(
        "web",
        "default",
        {"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": t}]}},
    )
    conditions = {c.type: c.status for c in pod.status.conditions}
    assert conditions == {"PodScheduled": "True", "Ready": "True"}


async def test_status_patch_uid_precondition(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    await v1.create_namespaced_pod("default", _pod("web"))
    with pytest.raises(ApiException) as e:
        await v1.patch_namespaced_pod_status(
            "web", "default", {"metadata": {"uid": "other"}, "status": {"phase": "Running"}}
        )
    assert e.value.status == 409
    assert "Precondition failed: UID in precondition: other" in json.loads(e.value.body)["message"]


async def test_main_resource_write_keeps_status_and_spec_is_immutable(
    env: tuple[RunningSandbox, client.CoreV1Api],
) -> None:
    _, v1 = env
    await v1.create_namespaced_pod("default", _pod("web"))
    pod = await v1.patch_namespaced_pod("web", "default", {"status": {"phase": "Running"}})
    assert pod.status.phase == "Pending"
    with pytest.raises(ApiException) as e:
        await v1.patch_namespaced_pod("web", "default", {"spec": {"restartPolicy": "Never"}})
    assert e.value.status == 422
    body = json.loads(e.value.body)
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Pod"
    assert "pod updates may not change fields other than" in body["message"]


async def test_invalid_pod_is_422_with_causes(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    pod = _pod("web")
    pod["spec"]["containers"].append({"name": "c", "image": ""})
    with pytest.raises(ApiException) as e:
        await v1.create_namespaced_pod("default", pod)
    assert e.value.status == 422
    body = json.loads(e.value.body)
    fields = {c["field"] for c in body["details"]["causes"]}
    assert {"spec.containers[1].name", "spec.containers[1].image"} <= fields
    assert body["message"].startswith('Pod "web" is invalid: ')


async def test_unsupported_patch_type_is_415(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    server, v1 = env
    await v1.create_namespaced_pod("default", _pod("web"))
    async with admin_session(server) as http:
        url = f"{server.url}/api/v1/namespaces/default/pods/web"
        headers = {"Content-Type": "text/plain"}
        async with http.patch(url, data=b"{}", headers=headers) as response:
            body = await response.json()
    assert response.status == 415 and body["code"] == 415 and body["kind"] == "Status"


async def test_binding_and_selector_transition(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    w = watch.Watch()
    stream = w.stream(
        v1.list_pod_for_all_namespaces, field_selector="spec.nodeName=node-1", timeout_seconds=10
    )
    await v1.create_namespaced_pod("default", _pod("web"))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="web"), target=client.V1ObjectReference(kind="Node", name="node-1")
    )
    await v1.create_namespaced_pod_binding("web", "default", binding, _preload_content=False)
    [event] = await _events(stream, 1)
    assert event["type"] == "ADDED" and event["object"].spec.node_name == "node-1"
    scheduled = {c.type: c.status for c in event["object"].status.conditions}
    assert scheduled == {"PodScheduled": "True"}
    w.stop()
    # (the response is a Status, not a Binding, so kubernetes_asyncio must not deserialize it)
    again = await v1.create_namespaced_pod_binding("web", "default", binding, _preload_content=False)
    assert again.status == 409
    assert 'pod web is already assigned to node "node-1"' in (await again.json())["message"]


async def test_bookmarks_and_timeout(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    server, _ = env
    async with admin_session(server) as http:
        url = f"{server.url}/api/v1/namespaces/default/pods"
        params = {
            "watch": "true",
            "timeoutSeconds": "4",
            "allowWatchBookmarks": "true",
            "resourceVersion": "0",
        }
        async with asyncio.timeout(15), http.get(url, params=params) as response:
            lines = [json.loads(line) async for line in response.content]
    assert lines and all(e["type"] == "BOOKMARK" for e in lines)
    assert lines[0]["object"]["metadata"]["resourceVersion"] == server.store.resource_version


async def test_token_request_and_eviction(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    token = await v1.create_namespaced_service_account_token(
        "default",
        "default",
        client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=["x"])),
    )
    assert token.status.token.count(".") == 2 and token.status.expiration_timestamp
    await v1.create_namespaced_pod("default", _pod("web", node="node-1"))
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="web", namespace="default"))
    await v1.create_namespaced_pod_eviction("web", "default", eviction)
    pod = await v1.read_namespaced_pod("web", "default")
    assert pod.metadata.deletion_timestamp is not None


async def test_exec_on_unbound_pod_is_400_and_log_is_empty(
    env: tuple[RunningSandbox, client.CoreV1Api],
) -> None:
    server, v1 = env
    await v1.create_namespaced_pod("default", _pod("web"))
    assert await v1.read_namespaced_pod_log("web", "default") == ""
    async with admin_session(server) as http:
        url = f"{server.url}/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true"
        async with http.post(url) as response:
            body = await response.json()
    assert response.status == 400 and body["message"] == "pod web does not have a host assigned"


async def test_debug_counters_and_faults(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, controllers=False, debug=True) as server, api_client(server) as api:
        v1 = client.CoreV1Api(api)
        await v1.list_namespaced_pod("default")
        assert server.debug is not None
        server.debug.fail_next("patch", r"/pods/web/status$", 500, count=1)
        await v1.create_namespaced_pod("default", _pod("web"))
        with pytest.raises(ApiException) as e:
            await v1.patch_namespaced_pod_status("web", "default", {"status": {"phase": "Running"}})
        assert e.value.status == 500
        await v1.patch_namespaced_pod_status("web", "default", {"status": {"phase": "Running"}})
        async with admin_session(server) as http:
            async with http.get(f"{server.url}/debug/sandbox/counters") as response:
                counters = await response.json()
            assert counters["requests"]["patch pods/status"] == 2
            assert counters["requests"]["list pods"] == 1 and counters["requests"]["create pods"] == 1
            async with http.delete(f"{server.url}/debug/sandbox/counters") as response:
                assert (await response.json())["total"] == 0


async def _raw(server: RunningSandbox, method: str, path: str, **kwargs: Any) -> tuple[int, Any, Any]:
    async with admin_session(server) as http, http.request(method, server.url + path, **kwargs) as response:
        text = await response.text()
        body = json.loads(text) if text.startswith("{") else text
        return response.status, body, response.headers


async def test_streaming_list_ends_initial_events_with_a_bookmark(
    env: tuple[RunningSandbox, client.CoreV1Api],
) -> None:
    server, v1 = env
    await v1.create_namespaced_pod("default", _pod("a"))
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "1",
    }
    url = f"{server.url}/api/v1/namespaces/default/pods"
    async with admin_session(server) as http, asyncio.timeout(10), http.get(url, params=params) as response:
        events = [json.loads(line) async for line in response.content]
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "a"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    status, body, _ = await _raw(server, "GET", "/api/v1/pods?watch=true&sendInitialEvents=true")
    assert status == 422 and "sendInitialEvents is forbidden" in body["message"]


async def test_resource_version_rules_for_get_and_list(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    server, _ = env
    current = int(server.store.resource_version)
    status, body, _ = await _raw(
        server, "GET", f"/api/v1/namespaces/default/pods?resourceVersion={current + 100}"
    )
    assert status == 504 and body["reason"] == "Timeout"
    assert body["message"] == f"Timeout: Too large resource version: {current + 100}, current: {current}"
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    status, body, _ = await _raw(server, "GET", "/api/v1/pods?resourceVersionMatch=NotOlderThan")
    assert status == 422 and body["details"]["kind"] == "ListOptions"
    # An Exact list at an older resourceVersion is that old state, as the real server reads it from etcd
    status, body, _ = await _raw(server, "GET", "/api/v1/pods?resourceVersion=1&resourceVersionMatch=Exact")
    assert status == 200 and body["metadata"]["resourceVersion"] == "1" and body["items"] == []
    status, body, _ = await _raw(server, "GET", "/api/v1/pods?resourceVersion=0&limit=500")
    assert status == 200 and body["kind"] == "PodList" and body["metadata"]["resourceVersion"] == str(current)


async def test_field_validation_modes(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    server, _ = env
    body = {"metadata": {"name": "cm"}, "data": {"a": "b"}, "bogus": 1}
    url = "/api/v1/namespaces/default/configmaps"
    status, reply, _ = await _raw(server, "POST", url + "?fieldValidation=Strict", json=body)
    assert status == 400 and reply["reason"] == "BadRequest"
    assert reply["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "bogus"'
    )
    status, reply, headers = await _raw(server, "POST", url, json=body)  # Warn is the default
    assert status == 201 and "bogus" not in reply
    assert headers.getall("Warning") == ['299 - "unknown field \\"bogus\\""']
    status, reply, headers = await _raw(
        server, "POST", url + "?fieldValidation=Ignore", json={**body, "metadata": {"name": "cm2"}}
    )
    assert status == 201 and "Warning" not in headers


async def test_finalizers_and_namespace_termination(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    await v1.create_namespace({"metadata": {"name": "team"}})
    await v1.create_namespaced_config_map(
        "team", {"metadata": {"name": "held", "finalizers": ["example.com/x"]}}
    )
    await v1.delete_namespace("team")
    ns = await v1.read_namespace("team")
    assert ns.status.phase == "Terminating"
    with pytest.raises(ApiException) as e:
        await v1.create_namespaced_config_map("team", {"metadata": {"name": "late"}})
    assert e.value.status == 403
    refusal = json.loads(e.value.body)
    assert "because it is being terminated" in refusal["message"]
    # the cause the real NamespaceLifecycle admission adds, by which a client (the provider's
    # permission hook among them) tells it from a missing permission
    assert refusal["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace team is being terminated",
            "field": "metadata.namespace",
        }
    ]
    held = await v1.read_namespaced_config_map("held", "team")
    assert held.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as e:
        await v1.patch_namespaced_config_map(
            "held", "team", {"metadata": {"finalizers": ["example.com/x", "example.com/y"]}}
        )
    assert e.value.status == 422
    assert (
        "no new finalizers can be added if the object is being deleted" in json.loads(e.value.body)["message"]
    )
    await v1.patch_namespaced_config_map("held", "team", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException):
        await v1.read_namespaced_config_map("held", "team")
    with pytest.raises(ApiException) as e:
        await v1.read_namespace("team")
    assert e.value.status == 404


async def test_fault_injection_kinds_and_close_watches(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, controllers=False, debug=True) as server, api_client(server) as api:
        v1 = client.CoreV1Api(api)
        async with admin_session(server) as http:
            fault = {"verb": "list", "path": "/configmaps$", "code": 429, "count": 2}
            async with http.post(f"{server.url}/debug/sandbox/faults", json=fault) as response:
                assert response.status == 200
        for _ in range(2):
            with pytest.raises(ApiException) as e:
                await v1.list_namespaced_config_map("default")
            assert e.value.status == 429 and e.value.headers["Retry-After"] == "1"
        await v1.list_namespaced_config_map("default")
        assert server.debug is not None
        server.debug.fail_next("get", "/configmaps/kube-root-ca.crt$", 409)
        with pytest.raises(ApiException) as e:
            await v1.read_namespaced_config_map("kube-root-ca.crt", "default")
        assert e.value.status == 409 and json.loads(e.value.body)["reason"] == "Conflict"
        server.debug.fail_next("watch", "^/api/v1/namespaces/default/configmaps$", 410)
        status, body, _ = await _raw(server, "GET", "/api/v1/namespaces/default/configmaps?watch=true")
        assert status == 410 and body["reason"] == "Expired"  # a resume it cannot serve: list again

        stream = watch.Watch().stream(v1.list_namespaced_config_map, "default", resource_version="0")
        first = await _events(stream, 1)
        assert first[0]["type"] == "ADDED"
        close = f"{server.url}/debug/sandbox/close-watches"
        async with admin_session(server) as http, http.post(close) as response:
            assert (await response.json())["closed"] >= 1


async def test_mirror_pod_annotation_rules(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    _, v1 = env
    mirror = _pod("static-web")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash1"}
    with pytest.raises(ApiException) as e:
        await v1.create_namespaced_pod("default", mirror)  # a mirror pod must name its node
    assert e.value.status == 422
    mirror["spec"]["nodeName"] = "node-1"
    created = await v1.create_namespaced_pod("default", mirror)
    assert created.spec.service_account_name is None and not created.spec.volumes
    for changed in ({"kubernetes.io/config.mirror": "hash2"}, {"kubernetes.io/config.mirror": None}):
        with pytest.raises(ApiException) as e:
            await v1.patch_namespaced_pod("static-web", "default", {"metadata": {"annotations": changed}})
        assert e.value.status == 422
        assert "may not remove or update mirror pod annotation" in json.loads(e.value.body)["message"]
    await v1.create_namespaced_pod("default", _pod("plain"))
    with pytest.raises(ApiException) as e:
        await v1.patch_namespaced_pod(
            "plain", "default", {"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}}
        )
    assert (
        e.value.status == 422 and "may not add mirror pod annotation" in json.loads(e.value.body)["message"]
    )


async def test_mirror_pods_may_not_reference_service_accounts_or_secrets(
    env: tuple[RunningSandbox, client.CoreV1Api],
) -> None:
    _, v1 = env
    mirror = _pod("static-web", node="node-1")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash1"}
    mirror["spec"]["serviceAccountName"] = "default"
    with pytest.raises(ApiException) as e:
        await v1.create_namespaced_pod("default", mirror)
    body = json.loads(e.value.body)
    assert (e.value.status, body["reason"]) == (403, "Forbidden")
    assert (
        body["message"] == 'pods "static-web" is forbidden: a mirror pod may not reference service accounts'
    )


async def test_discovery_version_health_and_openapi(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    server, _ = env
    status, body, headers = await _raw(server, "GET", "/api")
    assert status == 200 and body["kind"] == "APIVersions" and body["versions"] == ["v1"]
    assert headers["Content-Type"].startswith("application/json")
    status, body, _ = await _raw(server, "GET", "/api/v1")
    resources = {r["name"]: r for r in body["resources"]}
    assert resources["pods"]["shortNames"] == ["po"] and "watch" in resources["pods"]["verbs"]
    assert resources["pods/eviction"]["group"] == "policy" and resources["pods/status"]["kind"] == "Pod"
    status, body, _ = await _raw(server, "GET", "/apis")
    assert {g["name"] for g in body["groups"]} >= {"coordination.k8s.io", "certificates.k8s.io"}
    status, body, _ = await _raw(server, "GET", "/apis/coordination.k8s.io/v1")
    assert [r["name"] for r in body["resources"]] == ["leases"]
    status, body, _ = await _raw(server, "GET", "/version")
    assert (body["major"], body["minor"], body["gitVersion"]) == (KUBE_MAJOR, KUBE_MINOR, KUBE_VERSION)
    # a 1.37 kube-apiserver also reports its emulation and minimum compatibility versions
    assert (body["emulationMinor"], body["minCompatibilityMinor"]) == (KUBE_MINOR, str(int(KUBE_MINOR) - 1))
    for path in ("/healthz", "/readyz", "/livez"):
        assert (await _raw(server, "GET", path))[:2] == (200, "ok")
    status, body, _ = await _raw(server, "GET", "/openapi/v3")
    assert "api/v1" in body["paths"]
    status, body, _ = await _raw(server, "GET", body["paths"]["api/v1"]["serverRelativeURL"])
    assert status == 200 and "components" in body
    status, body, _ = await _raw(server, "GET", "/api/v1/widgets")
    assert status == 404 and body["reason"] == "NotFound"


async def test_aggregated_discovery_when_asked(env: tuple[RunningSandbox, client.CoreV1Api]) -> None:
    server, _ = env
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    status, body, headers = await _raw(server, "GET", "/apis", headers={"Accept": accept})
    assert status == 200 and headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    groups = {item["metadata"]["name"]: item for item in body["items"]}
    [leases] = groups["coordination.k8s.io"]["versions"][0]["resources"]
    assert (leases["resource"], leases["scope"], leases["responseKind"]["kind"]) == (
        "leases",
        "Namespaced",
        "Lease",
    )
    # as upstream: no creationTimestamp, and responseKind names a group/version only when it is
    # another than the resource's (installer.go ConvertGroupVersionIntoToDiscovery)
    assert groups["coordination.k8s.io"]["metadata"] == {"name": "coordination.k8s.io"}
    assert leases["responseKind"] == {"group": "", "version": "", "kind": "Lease"}
    reviews = {r["resource"]: r for r in groups["authentication.k8s.io"]["versions"][0]["resources"]}
    assert reviews["tokenreviews"]["singularResource"] == "tokenreview"
    status, body, _ = await _raw(server, "GET", "/api", headers={"Accept": accept})
    pods = next(r for r in body["items"][0]["versions"][0]["resources"] if r["resource"] == "pods")
    assert {s["subresource"] for s in pods["subresources"]} >= {
        "status",
        "binding",
        "log",
        "exec",
        "eviction",
    }
    assert body["items"][0]["metadata"] == {}
    kinds = {s["subresource"]: s["responseKind"] for s in pods["subresources"]}
    assert kinds["eviction"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert kinds["status"] == {"group": "", "version": "", "kind": "Pod"}


async def test_a_continue_token_older_than_the_compacted_history_gives_an_inconsistent_one(
    env: tuple[RunningSandbox, client.CoreV1Api],
) -> None:
    """As etcd once the apiserver's compactor has passed twice (upstream's API chunking
    conformance spec "...compacted away, though the list is inconsistent"): 410 Expired whose
    Status carries a continue token that goes on from the same key at the latest resourceVersion."""
    server, v1 = env
    for i in range(5):
        await v1.create_namespaced_config_map(
            "default", {"metadata": {"name": f"cm-{i}", "labels": {"t": "x"}}}
        )
    path = "/api/v1/namespaces/default/configmaps"
    _, first, _ = await _raw(server, "GET", f"{path}?limit=2")
    assert [i["metadata"]["name"] for i in first["items"]] == ["cm-0", "cm-1"]
    token = first["metadata"]["continue"]
    await v1.create_namespaced_config_map("default", {"metadata": {"name": "cm-5"}})
    server.store.compact()
    status, _, _ = await _raw(server, "GET", f"{path}?limit=2&continue={token}")
    assert status == 200, "a compaction drops only what is older than the previous tick's revision"
    server.store.compact()
    status, expired, _ = await _raw(server, "GET", f"{path}?limit=2&continue={token}")
    assert (status, expired["reason"], expired["code"]) == (410, "Expired", 410)
    assert expired["message"].startswith("The provided continue parameter is too old")
    inconsistent = expired["metadata"]["continue"]
    _, rest, _ = await _raw(server, "GET", f"{path}?limit=2&continue={inconsistent}")
    assert [i["metadata"]["name"] for i in rest["items"]] == ["cm-2", "cm-3"]
    assert int(rest["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    _, last, _ = await _raw(server, "GET", f"{path}?limit=2&continue={rest['metadata']['continue']}")
    assert [i["metadata"]["name"] for i in last["items"]] == ["cm-4", "cm-5"]
    status, _, _ = await _raw(
        server,
        "GET",
        f"{path}?resourceVersion={first['metadata']['resourceVersion']}&resourceVersionMatch=Exact",
    )
    assert status == 410
