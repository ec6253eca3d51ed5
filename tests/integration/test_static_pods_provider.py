"""Static pods end to end through the provider (issue 6's "Must show"), with real Docker and the sandbox.

A manifest dropped into the directory runs and is mirrored; a deleted mirror comes back
while the container keeps running; an edited manifest replaces the container and the
mirror; a provider started with the apiserver down runs the pod and mirrors it once the
apiserver is up; bad files are reported (log line and Node Warning Event) while a good
static pod keeps running. Removing a file is covered once, in test_pods_static.py.
Containers are read from Docker by the provider's labels; everything else over the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import manifests
from tests.support.containers import labelled
from tests.support.images import BUSYBOX_IMAGE, PAUSE_IMAGE
from tests.support.planes import Plane
from tests.support.pod_status import container_status
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from vk_common.ports import free_port

pytestmark = pytest.mark.docker

MIRROR = "kubernetes.io/config.mirror"
HASH = "kubernetes.io/config.hash"
SOURCE = "kubernetes.io/config.source"
SEEN = "kubernetes.io/config.seen"
BAD_MANIFEST = "FailedStaticPodManifest"


def static_manifest(
    name: str, command: list[str] | None = None, image: str = BUSYBOX_IMAGE
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image}
    if command is not None:
        container["command"] = command
    return manifests.pod(name, [container], namespace=None, terminationGracePeriodSeconds=2)


def write(path: Path, manifest: dict[str, Any]) -> None:
    """Write a manifest atomically, as editors and config tools do."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(yaml.safe_dump(manifest))
    tmp.replace(path)


def static_dir_holding(workdir: Path, name: str) -> Path:
    """A new static pod directory `workdir/manifests` holding the static pod `name` (sleep 3600)."""
    static_dir = workdir / "manifests"
    static_dir.mkdir()
    write(static_dir / f"{name}.yaml", static_manifest(name, ["sleep", "3600"]))
    return static_dir


def running_app_containers(docker_client: Any, node: str, pod_name: str) -> list[Any]:
    labels = [
        f"io.vk-provider.node={node}",
        f"io.vk-provider.pod.name={pod_name}",
        "io.vk-provider.container.name=main",
    ]
    return labelled(docker_client, labels, all=False, status="running")


def is_running(docker_client: Any, container_id: str) -> bool:
    """Whether the container exists and runs (the old pod's containers are removed with it)."""
    found = docker_client.containers.list(all=True, filters={"id": container_id}, ignore_removed=True)
    return bool(found) and found[0].status == "running"


async def one_running_container(docker_client: Any, node: str, pod_name: str) -> Any:
    async def check() -> Any:
        found = await asyncio.to_thread(running_app_containers, docker_client, node, pod_name)
        return found[0] if len(found) == 1 else None

    return await eventually(check, what=f"no single running app container for {pod_name}", interval=0.3)


def running_with(container_id: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """The mirror is Running with its `main` container running (as container_id, if given)."""

    def predicate(pod: dict[str, Any]) -> bool:
        status = container_status(pod, "main")
        if (pod.get("status") or {}).get("phase") != "Running" or "running" not in (
            status.get("state") or {}
        ):
            return False
        return container_id is None or status.get("containerID") == f"docker://{container_id}"

    return predicate


async def test_dropped_manifest_runs_and_is_mirrored_with_annotations_and_node_owner(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    static_dir = tmp_path / "manifests"
    static_dir.mkdir()
    mirror_name = f"web-{node_name.lower()}"
    async with ProviderHarness.running(node_name, tmp_path, static_dir=static_dir, plane=plane) as harness:
        write(static_dir / "web.yaml", static_manifest("web", ["sleep", "3600"]))
        container = await one_running_container(docker_client, node_name, mirror_name)
        mirror = await harness.wait_for(mirror_name, running_with(container.id), within=60)

        annotations = mirror["metadata"]["annotations"]
        assert annotations[SOURCE] == "file"
        assert annotations[MIRROR] == annotations[HASH] != ""
        assert annotations[SEEN]
        assert mirror["metadata"]["uid"] != annotations[HASH]  # the apiserver's own UID
        assert mirror["spec"]["nodeName"] == node_name
        node = await harness.api.get(f"/api/v1/nodes/{node_name}")
        assert mirror["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": node_name,
                "uid": node["metadata"]["uid"],
                "controller": True,
            }
        ]
        assert container.labels["io.vk-provider.pod.uid"] == annotations[HASH]


@contextlib.asynccontextmanager
async def running_static_web(
    plane: Plane, node_name: str, workdir: Path, docker_client: Any
) -> AsyncIterator[tuple[ProviderHarness, Any, dict[str, Any]]]:
    """A provider started with the static pod `web` (sleep 3600) already in its directory: the
    harness, the pod's running app container and its Running mirror pod."""
    static_dir = static_dir_holding(workdir, "web")
    mirror_name = f"web-{node_name.lower()}"
    async with ProviderHarness.running(node_name, workdir, static_dir=static_dir, plane=plane) as harness:
        container = await one_running_container(docker_client, node_name, mirror_name)
        mirror = await harness.wait_for(mirror_name, running_with(container.id), within=60)
        yield harness, container, mirror


async def test_deleted_mirror_comes_back_and_the_container_keeps_running(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    async with running_static_web(plane, node_name, tmp_path, docker_client) as (harness, before, first):
        mirror_name = first["metadata"]["name"]

        # As `kubectl delete pod` sends it: the pod's default grace period, background propagation.
        await harness.api.delete(
            f"/api/v1/namespaces/default/pods/{mirror_name}", {"propagationPolicy": "Background"}
        )

        second = await harness.wait_for(
            mirror_name,
            lambda p: p["metadata"]["uid"] != first["metadata"]["uid"] and running_with(before.id)(p),
            within=60,
        )
        for key in (MIRROR, SEEN):
            assert second["metadata"]["annotations"][key] == first["metadata"]["annotations"][key]
        assert "deletionTimestamp" not in second["metadata"]
        after = await one_running_container(docker_client, node_name, mirror_name)
        assert after.id == before.id
        assert container_status(second, "main")["restartCount"] == 0

        # As `kubectl delete pod --force --grace-period=0`: gone at once, and back again.
        await harness.delete(mirror_name, grace=0)
        await harness.wait_for(
            mirror_name,
            lambda p: p["metadata"]["uid"] != second["metadata"]["uid"] and running_with(before.id)(p),
            within=60,
        )
        assert [c.id for c in running_app_containers(docker_client, node_name, mirror_name)] == [before.id]


async def test_edited_manifest_replaces_the_container_and_the_mirror(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    static_dir = tmp_path / "manifests"
    static_dir.mkdir()
    path = static_dir / "web.yaml"
    write(path, static_manifest("web", ["sleep", "3600"]))
    mirror_name = f"web-{node_name.lower()}"
    async with ProviderHarness.running(node_name, tmp_path, static_dir=static_dir, plane=plane) as harness:
        first = await one_running_container(docker_client, node_name, mirror_name)
        old = await harness.wait_for(mirror_name, running_with(first.id), within=60)
        old_hash = old["metadata"]["annotations"][MIRROR]

        # A new command.
        write(path, static_manifest("web", ["sleep", "3601"]))
        new = await harness.wait_for(
            mirror_name,
            lambda p: p["metadata"]["annotations"][MIRROR] != old_hash and running_with()(p),
            within=60,
        )
        second = await one_running_container(docker_client, node_name, mirror_name)
        assert second.id != first.id
        assert [second.attrs["Path"], *second.attrs["Args"]] == ["sleep", "3601"]  # what runs
        assert container_status(new, "main")["containerID"] == f"docker://{second.id}"
        assert new["spec"]["containers"][0]["command"] == ["sleep", "3601"]
        assert new["metadata"]["annotations"][MIRROR] == new["metadata"]["annotations"][HASH]
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        await eventually(
            lambda: asyncio.to_thread(lambda: not is_running(docker_client, first.id)),
            what="the old container still runs",
            interval=0.3,
        )

        # A new image (the pause image's own entrypoint).
        new_hash = new["metadata"]["annotations"][MIRROR]
        write(path, static_manifest("web", image=PAUSE_IMAGE))
        newest = await harness.wait_for(
            mirror_name,
            lambda p: p["metadata"]["annotations"][MIRROR] not in (old_hash, new_hash) and running_with()(p),
            within=60,
        )
        third = await one_running_container(docker_client, node_name, mirror_name)
        assert third.id != second.id
        # The image as the spec wrote it (Podman's Config.Image has its store's localhost/ prefix).
        assert third.labels["io.vk-provider.container.image"] == PAUSE_IMAGE
        assert container_status(newest, "main")["containerID"] == f"docker://{third.id}"
        assert newest["spec"]["containers"][0]["image"] == PAUSE_IMAGE
        await eventually(
            lambda: asyncio.to_thread(lambda: not is_running(docker_client, second.id)),
            what="the old container still runs",
            interval=0.3,
        )


@contextlib.asynccontextmanager
async def apiserver_down_at_start(
    node_name: str, workdir: Path, static_dir: Path
) -> AsyncIterator[ProviderHarness]:
    """A provider started while nothing listens on its kubeconfig's port; the test starts the
    sandbox (`harness.start_sandbox()`) on that port when it wants the apiserver up."""
    harness = ProviderHarness(node_name, workdir, static_dir=static_dir, api_port=free_port())
    try:
        harness.server.write_kubeconfig(harness.kubeconfig)
        await asyncio.wait_for(harness.start_provider(), 30)  # start-up must not wait for the apiserver
        yield harness
    finally:
        await harness.close()


async def test_provider_started_with_the_apiserver_down_runs_static_pods_and_mirrors_them_later(
    node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    static_dir = static_dir_holding(tmp_path, "web")
    mirror_name = f"web-{node_name.lower()}"
    async with apiserver_down_at_start(node_name, tmp_path, static_dir) as harness:
        container = await one_running_container(docker_client, node_name, mirror_name)
        with pytest.raises(OSError):  # still down while the pod runs
            await asyncio.open_connection("127.0.0.1", harness.server.port)

        await harness.start_sandbox()
        mirror = await harness.wait_for(mirror_name, running_with(container.id), within=90)
        assert mirror["metadata"]["annotations"][MIRROR] == container.labels["io.vk-provider.pod.uid"]
        assert mirror["metadata"]["ownerReferences"][0]["kind"] == "Node"
        again = await one_running_container(docker_client, node_name, mirror_name)
        assert again.id == container.id


BAD_FILES: dict[str, tuple[str | None, str]] = {
    # file name -> (content, or None for a special kind of file; what the reason says)
    "malformed.yaml": ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [oops\n", "invalid YAML/JSON"),
    "deployment.yaml": (
        yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
        "kind 'Deployment'",
    ),
    "noname.yaml": (
        yaml.safe_dump({**static_manifest("x", ["sleep", "3600"]), "metadata": {}}),
        "metadata.name is missing",
    ),
    "zz-duplicate.yaml": (  # sorts after good.yaml, which keeps the pod
        yaml.safe_dump(static_manifest("good", ["sleep", "99"])),
        "is already defined by",
    ),
    "dir.yaml": (None, "is a directory"),
    "dangling.yaml": (None, "cannot read"),
    "noimage.yaml": (
        yaml.safe_dump(
            {
                **static_manifest("noimage"),
                "spec": {"containers": [{"name": "main", "command": ["sleep", "1"]}]},
            }
        ),
        "an image is required",
    ),
    "unknown-field.json": (
        yaml.safe_dump(
            {
                **static_manifest("unknown"),
                "spec": {
                    "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "commandd": ["sleep", "1"]}]
                },
            }
        ),
        "'commandd' was unexpected",
    ),
    "a-duplicate.yaml": (  # sorts before good.yaml, but good.yaml's pod already runs
        yaml.safe_dump(static_manifest("good", ["sleep", "98"])),
        "is already defined by",
    ),
}


def make_bad_file(static_dir: Path, name: str) -> None:
    path, content = static_dir / name, BAD_FILES[name][0]
    if name == "dir.yaml":
        path.mkdir()
    elif name == "dangling.yaml":
        os.symlink(static_dir / "does-not-exist.yaml", path)
    else:
        assert content is not None
        path.write_text(content)


async def test_bad_files_are_reported_while_a_good_static_pod_keeps_running_and_fixes_are_picked_up(
    plane: Plane,
    node_name: str,
    test_images: dict[str, str],
    tmp_path: Path,
    docker_client: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="vk_provider.static")
    static_dir = static_dir_holding(tmp_path, "good")
    good_name = f"good-{node_name.lower()}"
    for name in list(BAD_FILES)[: len(BAD_FILES) // 2]:  # half are there when the provider starts
        make_bad_file(static_dir, name)
    async with ProviderHarness.running(node_name, tmp_path, static_dir=static_dir, plane=plane) as harness:
        good = await one_running_container(docker_client, node_name, good_name)
        good_mirror = await harness.wait_for(good_name, running_with(good.id), within=60)

        for name in list(BAD_FILES)[len(BAD_FILES) // 2 :]:  # the rest appear while it runs
            make_bad_file(static_dir, name)

        async def reported() -> list[dict[str, Any]]:
            events = [e for e in await harness.events(node_name) if e.get("reason") == BAD_MANIFEST]
            paths = {e["message"].partition(": ")[0] for e in events}
            return events if paths >= {str(static_dir / n) for n in BAD_FILES} else []

        events = await eventually(
            reported, what="not every bad file raised a FailedStaticPodManifest event", interval=0.3
        )
        for name, (_, reason) in BAD_FILES.items():
            where = str(static_dir / name)
            (event,) = [e for e in events if e["message"].startswith(f"{where}: ")]
            assert event["type"] == "Warning"
            assert event["involvedObject"]["kind"] == "Node"
            assert event["involvedObject"]["name"] == node_name
            assert reason in event["message"], event["message"]
            logged = [r.reason for r in caplog.records if getattr(r, "path", None) == where]
            assert any(reason in line for line in logged), (where, logged)

        # The good pod was never touched: same container, same mirror, still running.
        assert [c.id for c in running_app_containers(docker_client, node_name, good_name)] == [good.id]
        same = await harness.wait_for(good_name, running_with(good.id), within=10)
        assert same["metadata"]["uid"] == good_mirror["metadata"]["uid"]

        # Fixing bad files is picked up without a restart.
        write(static_dir / "noname.yaml", static_manifest("named", ["sleep", "3600"]))
        write(static_dir / "noimage.yaml", static_manifest("noimage", ["sleep", "3600"]))
        for fixed in ("named", "noimage"):
            fixed_name = f"{fixed}-{node_name.lower()}"
            container = await one_running_container(docker_client, node_name, fixed_name)
            await harness.wait_for(fixed_name, running_with(container.id), within=60)
        assert [c.id for c in running_app_containers(docker_client, node_name, good_name)] == [good.id]
        same = await harness.wait_for(good_name, running_with(good.id), within=10)
        assert same["metadata"]["uid"] == good_mirror["metadata"]["uid"]


async def test_bad_file_found_while_the_apiserver_is_down_is_reported_once_it_is_up(
    node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    static_dir = static_dir_holding(tmp_path, "good")
    make_bad_file(static_dir, "malformed.yaml")
    async with apiserver_down_at_start(node_name, tmp_path, static_dir) as harness:
        await one_running_container(docker_client, node_name, f"good-{node_name.lower()}")
        await asyncio.sleep(5)  # longer than the recorder's retries
        await harness.start_sandbox()
        event = await harness.wait_event(node_name, BAD_MANIFEST, within=30)
        assert event["message"].startswith(f"{static_dir / 'malformed.yaml'}: invalid YAML/JSON")


async def test_a_provider_restart_keeps_the_static_pods_container_and_mirror(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    async with running_static_web(plane, node_name, tmp_path, docker_client) as (harness, before, mirror):
        mirror_name = mirror["metadata"]["name"]
        await harness.stop_provider()
        assert [c.id for c in running_app_containers(docker_client, node_name, mirror_name)] == [before.id]
        await harness.start_provider()

        await asyncio.sleep(5)  # a restarted provider that replaced anything would have done so by now
        again = await harness.wait_for(mirror_name, running_with(before.id), within=60)
        assert again["metadata"]["uid"] == mirror["metadata"]["uid"]
        assert [c.id for c in running_app_containers(docker_client, node_name, mirror_name)] == [before.id]


async def test_without_a_static_pod_path_leftover_mirror_pods_are_deleted(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path
) -> None:
    harness = ProviderHarness(node_name, tmp_path, plane=plane)
    try:
        await harness.start_sandbox()
        leftover = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"old-{node_name}",
                "namespace": "default",
                "annotations": {MIRROR: "0123456789abcdef", HASH: "0123456789abcdef", SOURCE: "file"},
            },
            "spec": {"nodeName": node_name, "containers": [{"name": "main", "image": BUSYBOX_IMAGE}]},
        }
        await harness.create(leftover)
        await harness.start_provider()
        await harness.wait_gone(f"old-{node_name}", within=30)
    finally:
        await harness.close()
