"""What a new pod costs the engine: the provider's Docker calls, counted on the socket.

The provider talks to dockerd through tests/support's counting proxy (bench's
`DockerCountingProxy`, the one `bench.startup --count-docker` uses). After a first pod (the
node's start-up and the sandbox image's check are behind it), a second pod of one container,
created through the API until Running, costs the engine what the kubelet's path needs: its
sandbox's and its app's create, start and inspect, and the app image's inspect (7 calls; the
raw docker-py floor makes 4, docs/performance.md). Then, while it runs and nothing changes, it
costs no call of its own. The node's own calls (its ping, its relist of the containers and of
the volumes, every 10-20 s) are not counted: they may fall in either window.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.docker_engine import DockerCountingProxy
from tests.support.images import BUSYBOX_IMAGE
from tests.support.planes import Plane
from tests.support.pod_status import phase
from tests.support.provider_harness import EngineHarness, ProviderHarness
from tests.support.runtime_calls import engine_socket

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


def sleeper(harness: ProviderHarness, name: str) -> dict[str, Any]:
    return harness.manifest(
        name,
        [{"name": "app", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}],
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
            await asyncio.sleep(1.0)  # the first pod's own events are behind
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
