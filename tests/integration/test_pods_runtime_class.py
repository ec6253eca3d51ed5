"""RuntimeClass (issue 27 item 2): a pod runs under the engine runtime of its RuntimeClass's handler.

The node is configured with `docker.runtimes: {runc: runc, crun: crun}` and the test engine has
Debian's crun registered (`scripts/ensure-oci-runtimes.sh`). A pod whose RuntimeClass's handler
is crun runs under crun, its sandbox and containers alike (`docker inspect` shows the runtime);
one whose handler the node lacks fails sandbox creation as the kubelet's does: a
FailedCreatePodSandBox Event, retried, the pod Pending with its containers ContainerCreating.
The Node reports the handlers it can run in `status.runtimeHandlers`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.engine import engine_under_test
from tests.support.manifests import sh
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.pod_status import container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from vk_provider.config import Config
from vk_provider.kube.client import ApiStatusError

pytestmark = pytest.mark.docker

RUNTIMES = {"runc": "runc", "crun": "crun"}
MAIN = sh("main", "sleep 3600")


class RuntimesHarness(ProviderHarness):
    def config(self) -> Config:
        config = super().config()
        return dataclasses.replace(config, docker=dataclasses.replace(config.docker, runtimes=RUNTIMES))


@pytest.fixture
async def harness(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: EmulatorPlane | RealPlane
) -> AsyncIterator[ProviderHarness]:
    async with RuntimesHarness.running(node_name, tmp_path, plane=plane) as h:
        yield h


async def runtime_class(harness: ProviderHarness, name: str, handler: str) -> None:
    """RuntimeClass `name` with `handler` (cluster-scoped: another test may have made it already)."""
    body = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": handler,
    }
    try:
        await harness.api.create("/apis/node.k8s.io/v1/runtimeclasses", body)
    except ApiStatusError as exc:
        if exc.status != 409:
            raise


def engine_runtimes(docker_client: Any, uid: str) -> set[str]:
    """The engine runtime of every container of pod `uid` (its sandbox included)."""
    containers = labelled(docker_client, f"io.vk-provider.pod.uid={uid}")
    if engine_under_test() == "podman":  # its compat inspect says "oci"; libpod's names it
        api = docker_client.api
        return {
            api.get(f"{api.base_url}/v4.0.0/libpod/containers/{c.id}/json").json()["OCIRuntime"]
            for c in containers
        }
    return {c.attrs["HostConfig"]["Runtime"] for c in containers}


async def test_a_pod_of_a_runtime_class_runs_under_its_handlers_engine_runtime(
    harness: ProviderHarness, docker_client: Any
) -> None:
    await runtime_class(harness, "vk-test-crun", "crun")
    await harness.create(harness.manifest("crun", [MAIN], runtimeClassName="vk-test-crun"))
    pod = await harness.wait_for("crun", lambda p: phase(p) == "Running", within=90)
    assert engine_runtimes(docker_client, pod["metadata"]["uid"]) == {"crun"}

    await harness.create(harness.manifest("default", [MAIN]))
    plain = await harness.wait_for("default", lambda p: phase(p) == "Running", within=90)
    default = docker_client.info()["DefaultRuntime"]  # runc on Docker, crun on Debian's Podman
    assert engine_runtimes(docker_client, plain["metadata"]["uid"]) == {default}


async def test_a_handler_the_node_lacks_fails_sandbox_creation_and_is_retried(
    harness: ProviderHarness,
) -> None:
    await runtime_class(harness, "vk-test-kata", "kata")
    await harness.create(harness.manifest("kata", [MAIN], runtimeClassName="vk-test-kata"))
    event = await harness.wait_event("kata", "FailedCreatePodSandBox")
    assert event["type"] == "Warning"
    assert event["message"] == (
        'Failed to create pod sandbox: failed to get sandbox runtime: no runtime for "kata" is configured'
    )
    pod = await harness.wait_for("kata", lambda p: bool(container_status(p, "main")))
    assert phase(pod) == "Pending"
    assert container_status(pod, "main")["state"]["waiting"]["reason"] == "ContainerCreating"
    await eventually(
        lambda: _count(harness, "kata", "FailedCreatePodSandBox"), within=60, what="a second attempt"
    )


async def _count(harness: ProviderHarness, name: str, reason: str) -> bool:
    """Whether the Event `reason` of pod `name` was recorded twice at least (a retried failure)."""
    events = [e for e in await harness.events(name) if e.get("reason") == reason]
    return sum(int(e.get("count") or 1) for e in events) >= 2


async def test_the_node_reports_the_handlers_it_can_run(harness: ProviderHarness) -> None:
    node = await harness.api.get(f"/api/v1/nodes/{harness.node_name}")
    handlers = [h["name"] for h in node["status"]["runtimeHandlers"]]
    assert handlers == ["", "crun", "runc"]
    assert node["status"]["runtimeHandlers"][0]["features"] == {
        "recursiveReadOnlyMounts": False,
        "userNamespaces": False,
    }
