"""The real kubectl, through the sandbox API server's proxy, to `KubeletServer` answering from the node's
pods (`KubeletServer.pods`) for containers that are not running; no Docker.

The node's desired pods are a real PodConfig; the status cache is empty, so the status each pod came
with is used (GetKubeletContainerLogs' fallback). The runtime has no containers: what kubectl prints is
the kubelet's answer from the pod's spec and status (`pkg/kubelet/kubelet_pods.go`
validateContainerLogStatus, GetExec; `pkg/kubelet/server/server.go`), relayed by the apiserver.
The whole provider on Docker (an image that cannot be pulled, an init container still running) is in
test_provider_kubectl.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import manifests
from tests.support.kubectl import run_kubectl
from tests.support.sandbox import RunningSandbox, running_sandbox
from vk_provider.config import KubeletServerConfig
from vk_provider.kubeletapi import KubeletServer
from vk_provider.kubeletapi.podstate import KnownPods
from vk_provider.pods.config import PodConfig

pytestmark = [pytest.mark.kubectl]

NODE = "idle-node"


class NoContainers:
    """A runtime with no pods at all: nothing on this node has started."""

    async def list_pods(self) -> dict[str, Any]:
        return {}


class NoCachedStatus:
    def get_pod_status(self, uid: str) -> dict[str, Any] | None:
        return None


@dataclass
class Cluster:
    sandbox: RunningSandbox
    desired: PodConfig


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with running_sandbox(tmp_path, controllers=False) as sandbox:
        config = KubeletServerConfig(listen="127.0.0.1:0", auth="none")
        kubelet = KubeletServer(config, NODE, NoContainers(), "127.0.0.1")  # type: ignore[arg-type]
        desired = PodConfig(lambda _: None)
        kubelet.pods = KnownPods(desired, NoCachedStatus())
        await kubelet.start()
        try:
            await sandbox.store.create("nodes", manifests.kubelet_node(NODE, kubelet.port))
            yield Cluster(sandbox, desired)
        finally:
            await kubelet.stop()


async def kubectl(cluster: Cluster, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """kubectl's exit code and stderr (what it says of a container that is not running)."""
    code, _, err = await run_kubectl(cluster.sandbox.kubeconfig, *args, env=env)
    return code, err


async def create_pod(cluster: Cluster, name: str, status: dict[str, Any] | None) -> None:
    """A pod bound to the node; with `status`, also one of the node's desired pods, carrying it."""
    manifest = manifests.pod(
        name,
        [{"name": "c", "image": "127.0.0.1:1/vk-test/missing:1"}],
        nodeName=NODE,
        initContainers=[{"name": "setup", "image": "vk-test/busybox:1"}],
    )
    created = await cluster.sandbox.store.create("pods", manifest)
    if status is not None:
        cluster.desired.upsert("api", {**created, "status": status})


def waiting(name: str, reason: str) -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": reason}}}


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("ErrImagePull", "image can't be pulled"),
        ("ImagePullBackOff", "trying and failing to pull image"),
        ("PodInitializing", "PodInitializing"),
        ("ContainerCreating", "ContainerCreating"),
    ],
)
async def test_kubectl_logs_of_a_waiting_container(cluster: Cluster, reason: str, said: str) -> None:
    await create_pod(cluster, "p", {"containerStatuses": [waiting("c", reason)]})
    assert await kubectl(cluster, "logs", "p", "-c", "c") == (
        1,
        f'Error from server (BadRequest): container "c" in pod "p" is waiting to start: {said}\n',
    )


async def test_kubectl_logs_of_a_container_with_no_status_yet_and_of_a_pod_not_on_the_node(
    cluster: Cluster,
) -> None:
    await create_pod(cluster, "p", {"initContainerStatuses": [waiting("setup", "PodInitializing")]})
    assert await kubectl(cluster, "logs", "p", "-c", "c") == (
        1,
        'Error from server (BadRequest): container "c" in pod "p" is not available\n',
    )
    await create_pod(cluster, "gone", None)  # bound to the node, but not (or no longer) one of its pods
    assert await kubectl(cluster, "logs", "gone", "-c", "c") == (
        1,
        "Error from server (NotFound): the server could not find the requested resource ( pods/log gone)\n",
    )


@pytest.mark.parametrize("websockets", ["true", "false"])  # false: kubectl speaks SPDY/3.1
async def test_kubectl_exec_into_a_container_that_is_not_running(cluster: Cluster, websockets: str) -> None:
    env = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": websockets}
    # Over WebSocket the apiserver's stream translator reports the kubelet's refusal as a Status.
    wrapped = "Internal error occurred: " if websockets == "true" else ""
    await create_pod(cluster, "p", {"containerStatuses": [waiting("c", "ImagePullBackOff")]})
    assert await kubectl(cluster, "exec", "p", "-c", "c", "--", "true", env=env) == (
        1,
        f'error: {wrapped}unable to upgrade connection: container not found ("c")\n',
    )
    await create_pod(cluster, "gone", None)
    assert await kubectl(cluster, "exec", "gone", "-c", "c", "--", "true", env=env) == (
        1,
        f"error: {wrapped}unable to upgrade connection: pod does not exist\n",
    )
