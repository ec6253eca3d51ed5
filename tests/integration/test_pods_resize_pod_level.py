"""In-place resize of a running pod's pod-level `spec.resources`
(InPlacePodLevelResourcesVerticalScaling) on this host's real cgroups (v1, Docker's cgroupfs
driver): the user patches the pod's `resize` subresource and the node applies the new pod level.

What the tests look at: the pod cgroup's files, what a container without its own limits reads
in its cgroup (the pod level's), restart counts (a RestartContainer policy on a changed
inherited resource restarts the container), the pod's `status.allocatedResources` and
`status.resources`, the resize conditions and Events.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.manifests import sh
from tests.support.pod_status import condition, container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import NAMESPACE, ProviderHarness
from vk_common.quantity import parse_quantity

pytestmark = pytest.mark.docker

MI = 2**20
CGROUPS = Path("/sys/fs/cgroup")


def _level(cpu: str, memory: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def _read(controller: str, parent: str, name: str) -> str:
    return (CGROUPS / controller / parent.lstrip("/") / name).read_text().strip()


def _in_container(docker_client: Any, pod: dict[str, Any], name: str, path: str) -> str:
    container_id = str(container_status(pod, name)["containerID"]).removeprefix("docker://")
    result = docker_client.containers.get(container_id).exec_run(["cat", path])
    return str(result.output.decode().strip())


def _settled(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return (
        status.get("observedGeneration") == pod["metadata"]["generation"]
        and not condition(pod, "PodResizeInProgress")
        and not condition(pod, "PodResizePending")
        and phase(pod) == "Running"
    )


async def _resize(harness: ProviderHarness, name: str, level: dict[str, Any]) -> None:
    patch = {"spec": {"resources": level}}
    await harness.api.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/resize", patch, "strategic")


async def _running(
    harness: ProviderHarness, name: str, containers: list[dict[str, Any]], **spec: Any
) -> dict[str, Any]:
    await harness.create(harness.manifest(name, containers, **spec))
    return await harness.wait_for(
        name,
        lambda p: (
            phase(p) == "Running" and all(s.get("containerID") for s in p["status"]["containerStatuses"])
        ),
        within=90,
    )


async def test_a_pod_level_resize_changes_the_pod_cgroup_and_the_containers_that_inherit_it(
    harness: ProviderHarness, docker_client: Any
) -> None:
    restart_on_memory = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    containers = [sh("c1", "sleep 3600"), sh("c2", "sleep 3600", resizePolicy=restart_on_memory)]
    before = await _running(harness, "plr", containers, resources=_level("500m", "128Mi"))
    parent = f"/vk-provider/{harness.node_name}/pod{before['metadata']['uid']}"
    assert _read("cpu", parent, "cpu.cfs_quota_us") == "50000"
    assert _in_container(docker_client, before, "c1", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us") == "50000"
    assert before["status"]["allocatedResources"] == {"cpu": "500m", "memory": "128Mi"}
    c1_id = container_status(before, "c1")["containerID"]

    await _resize(harness, "plr", _level("1", "256Mi"))
    after = await harness.wait_for("plr", _settled, within=90)
    await eventually(
        lambda: _read("memory", parent, "memory.limit_in_bytes") == str(256 * MI),
        within=30,
        what="256Mi on the pod cgroup",
    )
    assert _read("cpu", parent, "cpu.cfs_quota_us") == "100000"
    assert _read("cpu", parent, "cpu.shares") == "1024"
    # c1 (no limits of its own, NotRequired) runs on, resized in place to the new pod level
    assert container_status(after, "c1")["containerID"] == c1_id
    assert container_status(after, "c1")["restartCount"] == 0
    assert _in_container(docker_client, after, "c1", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us") == "100000"
    memory = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
    assert _in_container(docker_client, after, "c1", memory) == str(256 * MI)
    # c2's inherited memory limit changed and its policy is RestartContainer
    assert container_status(after, "c2")["restartCount"] == 1
    assert _in_container(docker_client, after, "c2", memory) == str(256 * MI)
    status = after["status"]
    assert status["allocatedResources"] == {"cpu": "1", "memory": "256Mi"}
    limits = status["resources"]["limits"]
    assert (parse_quantity(limits["cpu"]), parse_quantity(limits["memory"])) == (1, 256 * MI)
    completed = await harness.wait_event("plr", "ResizeCompleted")
    assert completed["message"].endswith('"generation":2}')


async def test_a_pod_memory_limit_below_usage_stays_in_progress_until_reverted(
    harness: ProviderHarness,
) -> None:
    memory = {"requests": {"memory": "128Mi"}, "limits": {"memory": "128Mi"}}
    before = await _running(harness, "shrink", [sh("c1", "sleep 3600")], resources=memory)
    parent = f"/vk-provider/{harness.node_name}/burstable/pod{before['metadata']['uid']}"
    tiny = {"requests": {"memory": "10Ki"}, "limits": {"memory": "10Ki"}}
    await _resize(harness, "shrink", tiny)

    def refused(pod: dict[str, Any]) -> bool:
        return condition(pod, "PodResizeInProgress").get("reason") == "Error"

    stuck = await harness.wait_for("shrink", refused, within=60)
    message = condition(stuck, "PodResizeInProgress")["message"]
    assert re.search(r"pod memory limit \(10240\) below current usage \(\d+\)", message), message
    assert _read("memory", parent, "memory.limit_in_bytes") == str(128 * MI)
    assert stuck["status"]["allocatedResources"]["memory"] == "10Ki"  # allocated, not actuated
    assert parse_quantity(stuck["status"]["resources"]["limits"]["memory"]) == 128 * MI

    await _resize(harness, "shrink", memory)
    await harness.wait_for("shrink", _settled, within=60)
    assert _read("memory", parent, "memory.limit_in_bytes") == str(128 * MI)
