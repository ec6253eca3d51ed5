"""MirrorPods against the sandbox apiserver: create, re-create, replace, orphan deletion, late apiserver.

No Docker: MirrorPods never touches containers. The test plays the Node's owner (it creates
the Node object) and, where it says so, the API pod source (a Reflector over this node's
pods feeding `observe` / `observed_synced`, as the provider wires it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support import manifests
from tests.support.manifests import by_uid, sh
from tests.support.polling import eventually
from vk_common.objects import MIRROR_ANNOTATION
from vk_common.ports import free_port
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import ApiStatusError, KubeClient, make_kube_client
from vk_provider.kube.events import EventRecorder
from vk_provider.kube.reflector import Reflector
from vk_provider.static.manifest import parse_manifest
from vk_provider.static.mirror import MirrorPods
from vk_provider.static.mirror_plan import build_mirror_pod
from vk_provider.status.manager import StatusManager
from vk_sandbox.server import SandboxServer

DEADLINE = 30.0
RESYNC = 2.0


def static_pod(node: str, name: str = "web", command: str = "sleep 3600") -> dict[str, Any]:
    manifest = manifests.pod(name, [sh("main", command)], namespace=None, labels={"app": name})
    return parse_manifest(
        json.dumps(manifest).encode(), f"/etc/manifests/{name}.yaml", node, datetime.now(UTC)
    )


def pod_path(pod: dict[str, Any]) -> str:
    return f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods/{pod['metadata']['name']}"


async def get_or_none(client: KubeClient, path: str) -> dict[str, Any] | None:
    try:
        return await client.get(path)
    except ApiStatusError as exc:
        if exc.status == 404:
            return None
        raise


async def create_node(client: KubeClient, node: str) -> dict[str, Any]:
    return await client.create(
        "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}
    )


@dataclass
class Env:
    server: SandboxServer
    client: KubeClient
    node: str
    mirrors: MirrorPods

    async def mirror_of(self, pod: dict[str, Any], *, not_uid: str = "") -> dict[str, Any] | None:
        """The API's pod named like `pod` once it carries `pod`'s hash (and is not `not_uid`)."""
        found = await get_or_none(self.client, pod_path(pod))
        if found is None or found["metadata"]["uid"] == not_uid or found["metadata"].get("deletionTimestamp"):
            return None
        want = pod["metadata"]["annotations"]["kubernetes.io/config.hash"]
        return found if found["metadata"]["annotations"].get(MIRROR_ANNOTATION) == want else None


@contextlib.asynccontextmanager
async def running(tmp_path: Path, *, fed: bool) -> AsyncIterator[Env]:
    """The sandbox (with the Node), a client, an EventRecorder and a started MirrorPods; fed by a
    Reflector if `fed`."""
    node = f"vk-mirror-{uuid.uuid4().hex[:8]}"
    server = SandboxServer(state_dir=tmp_path / "sandbox")
    await server.start()
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    client = await make_kube_client(KubernetesConfig(kubeconfig=str(kubeconfig)))
    recorder = EventRecorder(client, node)
    mirrors = MirrorPods(client, node, recorder, resync_period=RESYNC)
    reflector = feed(client, mirrors, node) if fed else None
    try:
        await create_node(client, node)
        await recorder.start()
        if reflector is not None:
            await reflector.start()
        await mirrors.start()
        yield Env(server, client, node, mirrors)
    finally:
        await mirrors.stop()
        if reflector is not None:
            await reflector.stop()
        await recorder.stop()
        await client.close()
        await server.stop()


def feed(client: KubeClient, mirrors: MirrorPods, node: str) -> Reflector:
    """What the provider's ApiPodSource does for MirrorPods."""

    async def handle(type_: str, pod: dict[str, Any]) -> None:
        mirrors.observe(type_, pod)

    async def synced() -> None:
        mirrors.observed_synced()

    return Reflector(
        client, "/api/v1/pods", handle, params={"fieldSelector": f"spec.nodeName={node}"}, on_synced=synced
    )


@pytest.mark.parametrize("fed", [True, False], ids=["watch-fed", "self-listing"])
async def test_mirror_pod_appears_with_annotations_and_owner_reference(tmp_path: Path, fed: bool) -> None:
    async with running(tmp_path, fed=fed) as env:
        pod = static_pod(env.node)
        env.mirrors.set_static_pods(by_uid(pod))
        mirror = await eventually(lambda: env.mirror_of(pod), what="the mirror pod", within=DEADLINE)
        node = await env.client.get(f"/api/v1/nodes/{env.node}")

        meta = mirror["metadata"]
        annotations = meta["annotations"]
        assert annotations[MIRROR_ANNOTATION] == pod["metadata"]["uid"]
        assert annotations["kubernetes.io/config.hash"] == pod["metadata"]["uid"]
        assert annotations["kubernetes.io/config.source"] == "file"
        assert "kubernetes.io/config.seen" in annotations
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": env.node,
                "uid": node["metadata"]["uid"],
                "controller": True,
            }
        ]
        assert meta["labels"] == {"app": "web"}
        assert meta["uid"] != pod["metadata"]["uid"]
        assert mirror["spec"]["nodeName"] == env.node
        assert mirror["spec"]["containers"][0]["command"] == ["sh", "-c", "sleep 3600"]
        await eventually(
            lambda: env.mirrors.mirror_uid(pod) == meta["uid"],
            what="mirror_uid to name the mirror",
            within=DEADLINE,
        )


@pytest.mark.parametrize("grace", [None, 0], ids=["default-grace", "grace-0"])
async def test_deleted_mirror_pod_is_created_again(tmp_path: Path, grace: int | None) -> None:
    async with running(tmp_path, fed=True) as env:
        pod = static_pod(env.node)
        env.mirrors.set_static_pods(by_uid(pod))
        first = await eventually(lambda: env.mirror_of(pod), what="the mirror pod", within=DEADLINE)
        body = {} if grace is None else {"gracePeriodSeconds": grace}
        await env.client.delete(pod_path(pod), body)  # what `kubectl delete pod` sends

        again = await eventually(
            lambda: env.mirror_of(pod, not_uid=first["metadata"]["uid"]),
            what="a new mirror pod after the delete",
            within=DEADLINE,
        )
        assert again["metadata"]["annotations"][MIRROR_ANNOTATION] == pod["metadata"]["uid"]
        assert len(again["metadata"]["ownerReferences"]) == 1


async def test_changed_manifest_replaces_the_mirror_pod(tmp_path: Path) -> None:
    async with running(tmp_path, fed=True) as env:
        old = static_pod(env.node)
        env.mirrors.set_static_pods(by_uid(old))
        first = await eventually(lambda: env.mirror_of(old), what="the first mirror pod", within=DEADLINE)

        new = static_pod(env.node, command="sleep 7200")
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        env.mirrors.set_static_pods(by_uid(new))
        second = await eventually(lambda: env.mirror_of(new), what="the replaced mirror pod", within=DEADLINE)

        assert second["metadata"]["uid"] != first["metadata"]["uid"]
        assert second["metadata"]["annotations"][MIRROR_ANNOTATION] == new["metadata"]["uid"]
        assert second["spec"]["containers"][0]["command"] == ["sh", "-c", "sleep 7200"]


@pytest.mark.parametrize("fed", [True, False], ids=["watch-fed", "self-listing"])
async def test_mirror_pods_without_static_pod_are_deleted(tmp_path: Path, fed: bool) -> None:
    async with running(tmp_path, fed=fed) as env:
        keep, drop = static_pod(env.node, "keep"), static_pod(env.node, "drop")
        env.mirrors.set_static_pods(by_uid(keep, drop))
        await eventually(lambda: env.mirror_of(drop), what="the mirror pod of 'drop'", within=DEADLINE)
        kept = await eventually(lambda: env.mirror_of(keep), what="the mirror pod of 'keep'", within=DEADLINE)

        env.mirrors.set_static_pods(by_uid(keep))

        async def dropped() -> bool:
            return await get_or_none(env.client, pod_path(drop)) is None

        await eventually(dropped, what="the orphaned mirror pod to be deleted", within=DEADLINE)
        still = await env.client.get(pod_path(keep))
        assert still["metadata"]["uid"] == kept["metadata"]["uid"]


async def test_orphan_from_an_earlier_run_is_deleted_and_api_pods_are_left_alone(tmp_path: Path) -> None:
    async with running(tmp_path, fed=True) as env:
        node = await env.client.get(f"/api/v1/nodes/{env.node}")
        leftover = static_pod(env.node, "leftover")
        await env.client.create(
            "/api/v1/namespaces/default/pods", build_mirror_pod(leftover, env.node, node["metadata"]["uid"])
        )
        api_pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "user-pod", "namespace": "default"},
            "spec": {"nodeName": env.node, "containers": [{"name": "main", "image": "vk-test/busybox:1"}]},
        }
        await env.client.create("/api/v1/namespaces/default/pods", api_pod)
        env.mirrors.set_static_pods({})

        async def leftover_gone() -> bool:
            return await get_or_none(env.client, pod_path(leftover)) is None

        await eventually(leftover_gone, what="the leftover mirror pod to be deleted", within=DEADLINE)
        assert await get_or_none(env.client, "/api/v1/namespaces/default/pods/user-pod") is not None


async def test_mirror_pod_waits_for_the_node(tmp_path: Path) -> None:
    async with running(tmp_path, fed=True) as env:
        await env.client.delete(f"/api/v1/nodes/{env.node}")
        pod = static_pod(env.node)
        env.mirrors.set_static_pods(by_uid(pod))
        await asyncio.sleep(2 * RESYNC)
        assert await get_or_none(env.client, pod_path(pod)) is None  # no Node, no mirror

        await create_node(env.client, env.node)
        mirror = await eventually(
            lambda: env.mirror_of(pod), what="the mirror pod once the Node exists", within=DEADLINE
        )
        node = await env.client.get(f"/api/v1/nodes/{env.node}")
        assert mirror["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]


async def test_mirror_pods_started_while_the_apiserver_is_down(tmp_path: Path) -> None:
    port = free_port()
    server = SandboxServer(port=port, state_dir=tmp_path / "sandbox")
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")  # written before the server listens
    client = await make_kube_client(KubernetesConfig(kubeconfig=str(kubeconfig)), request_timeout=5.0)
    node = f"vk-mirror-{uuid.uuid4().hex[:8]}"
    mirrors = MirrorPods(client, node, None, resync_period=RESYNC)
    reflector = feed(client, mirrors, node)
    pod = static_pod(node)
    try:
        await reflector.start()
        await mirrors.start()  # returns at once although nobody listens on the port
        mirrors.set_static_pods(by_uid(pod))
        await asyncio.sleep(3.0)
        assert mirrors.mirror_uid(pod) is None

        await server.start()
        await create_node(client, node)
        env = Env(server, client, node, mirrors)
        mirror = await eventually(
            lambda: env.mirror_of(pod), what="the mirror pod once the apiserver is up", within=DEADLINE
        )
        assert mirror["metadata"]["annotations"][MIRROR_ANNOTATION] == pod["metadata"]["uid"]
    finally:
        await mirrors.stop()
        await reflector.stop()
        await client.close()
        await server.stop()


async def test_refused_mirror_pod_raises_a_warning_event_on_the_node(tmp_path: Path) -> None:
    async with running(tmp_path, fed=True) as env:
        good = static_pod(env.node, "good")
        bad = static_pod(env.node, "bad")
        bad["metadata"]["namespace"] = "no-such-namespace"
        env.mirrors.set_static_pods(by_uid(good, bad))

        async def failure_events() -> list[dict[str, Any]]:
            answer = await env.client.get("/api/v1/namespaces/default/events")
            return [
                e
                for e in answer.get("items") or []
                if e.get("reason") == "FailedCreateMirrorPod" and e["involvedObject"].get("name") == env.node
            ]

        (event,) = await eventually(failure_events, what="a FailedCreateMirrorPod Event", within=DEADLINE)
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "Node"
        assert "no-such-namespace/bad-" in event["message"]
        assert await eventually(
            lambda: env.mirror_of(good), what="the good static pod's mirror", within=DEADLINE
        )


async def test_status_manager_writes_the_static_pods_status_to_its_mirror(tmp_path: Path) -> None:
    """The handoff the provider wires: StatusManager(mirror_uid=MirrorPods.mirror_uid)."""
    async with running(tmp_path, fed=True) as env:
        status = StatusManager(env.client, sync_period=1.0, mirror_uid=env.mirrors.mirror_uid)
        await status.start()
        try:
            pod = static_pod(env.node)
            env.mirrors.set_static_pods(by_uid(pod))
            status.set_pod_status(pod, {"phase": "Running", "hostIP": "127.0.0.1", "podIP": "172.17.0.9"})

            async def running_mirror(not_uid: str = "") -> dict[str, Any] | None:
                mirror = await env.mirror_of(pod, not_uid=not_uid)
                return mirror if mirror and (mirror.get("status") or {}).get("phase") == "Running" else None

            first = await eventually(
                running_mirror, what="the mirror pod to show the static pod's status", within=DEADLINE
            )
            assert first["status"]["podIP"] == "172.17.0.9"

            await env.client.delete(pod_path(pod))
            again = await eventually(
                lambda: running_mirror(first["metadata"]["uid"]),
                what="the re-created mirror to show the status",
                within=DEADLINE,
            )
            assert again["status"]["podIP"] == "172.17.0.9"
        finally:
            await status.stop()
