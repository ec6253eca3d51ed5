"""What a new pod costs the engine: the provider's Docker calls, counted on the socket.

The provider talks to dockerd through tests/support's counting proxy (bench's
`DockerCountingProxy`, the one `bench.startup --count-docker` uses). After a first pod (the
node's start-up and the sandbox image's check are behind it), a second pod of one container,
created through the API until Running, costs the engine what the kubelet's path needs: its
sandbox's and its app's create, start and inspect, and the app image's inspect (7 calls; the
raw docker-py floor makes 4, docs/performance.md). Then, while it runs and nothing changes, it
costs no call of its own. Pods created together ask about their image once (the provider keeps
an image's inspect for `image_inspects.FRESH_SECONDS`), and an image removed meanwhile is seen
at the next try. The node's own calls (its ping, its relist of the containers and of the
volumes, every 10-20 s) are not counted: they may fall in either window.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from bench.docker_engine import DockerCountingProxy
from tests.support.images import BUSYBOX_IMAGE
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.provider_harness import EngineHarness, ProviderHarness
from tests.support.runtime_calls import engine_socket
from vk_provider.runtime.docker import image_inspects
from vk_provider.runtime.docker.image_inspects import FRESH_SECONDS

pytestmark = pytest.mark.docker

# The calls that are a pod's own.
POD_CALLS = {
    "POST /containers/create",
    "POST /containers/{id}/start",
    "GET /containers/{id}/json",
    "GET /images/{name}/json",
    "POST /containers/{id}/stop",
    "POST /containers/{id}/kill",
    "DELETE /containers/{id}",
}


def sleeper(harness: ProviderHarness, name: str, image: str = BUSYBOX_IMAGE) -> dict[str, Any]:
    return harness.manifest(
        name,
        [{"name": "app", "image": image, "command": ["sleep", "3600"]}],
        terminationGracePeriodSeconds=1,
    )


def pod_calls(counts: Counter[str]) -> dict[str, int]:
    return {key: n for key, n in counts.items() if key in POD_CALLS}


async def test_a_new_pod_costs_seven_docker_calls_and_a_running_one_none(
    plane: Plane, node_name: str, tmp_path: Path, test_images: dict[str, str]
) -> None:
    proxy = DockerCountingProxy(tmp_path / "docker.sock", engine_socket())
    await proxy.start()
    try:
        async with EngineHarness.running(node_name, tmp_path, plane=plane, engine=proxy.url) as harness:
            await harness.create(sleeper(harness, "first"))
            await harness.wait_for("first", lambda p: phase(p) == "Running", within=90)
            # The first pod's own events are behind, and its image's inspect is no longer kept.
            await asyncio.sleep(FRESH_SECONDS + 0.5)
            proxy.counts.clear()

            await harness.create(sleeper(harness, "second"))
            await harness.wait_for("second", lambda p: phase(p) == "Running", within=90)
            await asyncio.sleep(1.0)  # what followed its start (its events) is counted too
            assert pod_calls(proxy.counts) == {
                "POST /containers/create": 2,
                "POST /containers/{id}/start": 2,
                "GET /containers/{id}/json": 2,
                "GET /images/{name}/json": 1,
            }, dict(proxy.counts)

            proxy.counts.clear()
            await asyncio.sleep(3.0)
            assert pod_calls(proxy.counts) == {}, dict(proxy.counts)
            for name in ("first", "second"):
                await harness.delete(name, grace=1)
                await harness.wait_gone(name, within=90)
    finally:
        await proxy.stop()


async def test_pods_created_together_inspect_their_image_once_and_a_removed_one_is_seen(
    plane: Plane,
    node_name: str,
    tmp_path: Path,
    test_images: dict[str, str],
    docker_client: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stretched so that a slow machine's burst stays inside it; without `forget` the removed
    # image below would be taken as present for as long.
    monkeypatch.setattr(image_inspects, "FRESH_SECONDS", 120.0)
    image = f"vk-test/inspected-{uuid.uuid4().hex[:8]}:1"
    docker_client.images.get(BUSYBOX_IMAGE).tag(image)
    proxy = DockerCountingProxy(tmp_path / "docker.sock", engine_socket())
    await proxy.start()
    try:
        async with EngineHarness.running(node_name, tmp_path, plane=plane, engine=proxy.url) as harness:
            names = [f"burst-{n}" for n in range(4)]
            await asyncio.gather(*(harness.create(sleeper(harness, name, image)) for name in names))
            for name in names:
                await harness.wait_for(name, lambda p: phase(p) == "Running", within=120)
            calls = pod_calls(proxy.counts)
            # One for the sandbox image (checked once a minute) and one for the pods' image.
            assert calls["GET /images/{name}/json"] == 2, dict(proxy.counts)
            assert calls["POST /containers/create"] == calls["POST /containers/{id}/start"] == 8, calls

            # Untagged behind the provider's back while its answer is kept: the create fails
            # (as the kubelet's would in the same race), the next try asks the engine again.
            docker_client.images.remove(image)
            late = sleeper(harness, "late", image)
            late["spec"]["containers"][0]["imagePullPolicy"] = "Never"
            await harness.create(late)
            failed = await harness.wait_for(
                "late", lambda p: waiting_reason(p, "app") == "CreateContainerError", within=60
            )
            assert "No such image" in container_status(failed, "app")["state"]["waiting"]["message"]
            await harness.wait_for(
                "late", lambda p: waiting_reason(p, "app") == "ErrImageNeverPull", within=60
            )
            for name in (*names, "late"):
                await harness.delete(name, grace=0)
            for name in (*names, "late"):
                await harness.wait_gone(name, within=90)
    finally:
        await proxy.stop()
        with contextlib.suppress(docker.errors.ImageNotFound):
            docker_client.images.remove(image)
