"""Pod cgroups (issue 27 item 3) on this host's real cgroups (v1, Docker's cgroupfs driver).

Every pod's sandbox and containers run under one parent cgroup, laid out as the kubelet's
(`/vk-provider/<node>/pod<uid>` for a Guaranteed pod, `.../burstable/pod<uid>` and
`.../besteffort/pod<uid>` for the others) with the kubelet's pod limits (ResourceConfigForPod),
pod-level `spec.resources.limits` included; an in-place resize changes them; the cgroup goes
with its pod, and one a vanished pod left is removed when the provider starts.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import condition, phase
from tests.support.polling import eventually
from tests.support.provider_harness import NAMESPACE, ProviderHarness

pytestmark = pytest.mark.docker

MI = 2**20
CGROUPS = Path("/sys/fs/cgroup")


def limits(cpu: str, memory: str) -> dict[str, Any]:
    return {"limits": {"cpu": cpu, "memory": memory}}


def read(controller: str, parent: str, name: str) -> str:
    return (CGROUPS / controller / parent.lstrip("/") / name).read_text().strip()


def parents(docker_client: Any, uid: str) -> set[str]:
    """The CgroupParent of every container of pod `uid` (its sandbox included)."""
    return {
        c.attrs["HostConfig"]["CgroupParent"]
        for c in labelled(docker_client, f"io.vk-provider.pod.uid={uid}")
    }


async def running(harness: ProviderHarness, name: str, containers: list[dict[str, Any]], **spec: Any) -> str:
    await harness.create(harness.manifest(name, containers, **spec))
    pod = await harness.wait_for(name, lambda p: phase(p) == "Running", within=90)
    return str(pod["metadata"]["uid"])


async def test_a_pods_containers_run_in_its_cgroup_with_the_pods_limits(
    harness: ProviderHarness, docker_client: Any
) -> None:
    main = sh("main", "sleep 3600", resources={"requests": {"cpu": "100m"}, **limits("200m", "64Mi")})
    side = sh("side", "sleep 3600", resources=limits("100m", "32Mi"))
    uid = await running(harness, "burst", [main, side])
    parent = f"/vk-provider/{harness.node_name}/burstable/pod{uid}"
    assert parents(docker_client, uid) == {parent}
    assert read("memory", parent, "memory.limit_in_bytes") == str(96 * MI)
    assert read("cpu", parent, "cpu.cfs_quota_us") == "30000"
    assert read("cpu", parent, "cpu.shares") == str(200 * 1024 // 1000)

    plain = await running(harness, "plain", [sh("main", "sleep 3600")])
    best_effort = f"/vk-provider/{harness.node_name}/besteffort/pod{plain}"
    assert parents(docker_client, plain) == {best_effort}
    assert read("cpu", best_effort, "cpu.shares") == "2"


async def test_pod_level_limits_are_the_pod_cgroups(harness: ProviderHarness, docker_client: Any) -> None:
    uid = await running(
        harness,
        "podlevel",
        [sh("main", "sleep 3600"), sh("side", "sleep 3600")],
        resources=limits("500m", "128Mi"),
    )
    parent = f"/vk-provider/{harness.node_name}/pod{uid}"  # Guaranteed: requests default to the limits
    assert parents(docker_client, uid) == {parent}
    assert read("memory", parent, "memory.limit_in_bytes") == str(128 * MI)
    assert read("cpu", parent, "cpu.cfs_quota_us") == "50000"


async def test_an_in_place_resize_changes_the_pod_cgroup(harness: ProviderHarness) -> None:
    uid = await running(harness, "grow", [sh("main", "sleep 3600", resources=limits("200m", "64Mi"))])
    parent = f"/vk-provider/{harness.node_name}/pod{uid}"
    assert read("cpu", parent, "cpu.cfs_quota_us") == "20000"
    resources = {"requests": {"cpu": "300m", "memory": "96Mi"}, **limits("300m", "96Mi")}  # still Guaranteed
    patch = {"spec": {"containers": [{"name": "main", "resources": resources}]}}
    await harness.api.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/grow/resize", patch, "strategic")
    await harness.wait_for("grow", lambda p: not condition(p, "PodResizeInProgress"), within=60)
    await eventually(
        lambda: read("memory", parent, "memory.limit_in_bytes") == str(96 * MI),
        within=30,
        what="96Mi on the pod",
    )
    assert read("cpu", parent, "cpu.cfs_quota_us") == "30000"


async def test_the_pod_cgroup_goes_with_its_pod(harness: ProviderHarness) -> None:
    uid = await running(harness, "gone", [sh("main", "sleep 3600")])
    directory = CGROUPS / "memory" / "vk-provider" / harness.node_name / "besteffort" / f"pod{uid}"
    assert directory.is_dir()
    await harness.delete("gone", grace=1)
    await harness.wait_gone("gone")
    await eventually(lambda: not directory.exists(), within=30, what="the pod cgroup removed")


async def test_a_pod_cgroup_a_vanished_pod_left_is_removed_at_start(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: Plane
) -> None:
    orphan = f"pod{uuid.uuid4()}"
    left = [CGROUPS / c / "vk-provider" / node_name / "burstable" / orphan for c in ("cpu", "memory")]
    for directory in left:
        directory.mkdir(parents=True)
    async with ProviderHarness.running(node_name, tmp_path, plane=plane):
        await eventually(
            lambda: not any(d.exists() for d in left), within=30, what="the orphan cgroup removed"
        )
