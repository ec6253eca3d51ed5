"""A pod's cgroup limits (kuberuntime/pod_resources.py), as ResourceConfigForPod gives them: by the
pod's QoS class, from its containers' requests and limits, pod-level resources and overhead."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import manifests
from tests.support.images import BUSYBOX_IMAGE
from vk_provider.kuberuntime.pod_resources import pod_cgroup_resources, pod_limits
from vk_provider.runtime.types import LinuxResources

MI = 2**20


def box(
    name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": name, "image": BUSYBOX_IMAGE, "resources": resources}


@pytest.mark.parametrize(
    ("containers", "spec", "expected"),
    [
        # Guaranteed: shares, quota and memory from the sums
        (
            [
                box("a", limits={"cpu": "500m", "memory": "64Mi"}),
                box("b", limits={"cpu": "1", "memory": "64Mi"}),
            ],
            {},
            LinuxResources(cpu_shares=1536, cpu_quota=150000, cpu_period=100000, memory_limit=128 * MI),
        ),
        # Burstable, one container without limits: shares only
        (
            [box("a", requests={"cpu": "250m"}, limits={"cpu": "1", "memory": "64Mi"}), box("b")],
            {},
            LinuxResources(cpu_shares=256),
        ),
        # Burstable, every container with a memory limit but not a cpu one
        (
            [
                box("a", requests={"cpu": "100m"}, limits={"memory": "32Mi"}),
                box("b", limits={"memory": "32Mi"}),
            ],
            {},
            LinuxResources(cpu_shares=102, memory_limit=64 * MI),
        ),
        # BestEffort: the minimum shares alone
        ([box("a"), box("b")], {}, LinuxResources(cpu_shares=2)),
        # pod-level resources decide, the containers declaring none
        (
            [box("a"), box("b")],
            {"resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "500m", "memory": "128Mi"}}},
            LinuxResources(cpu_shares=204, cpu_quota=50000, cpu_period=100000, memory_limit=128 * MI),
        ),
        # a RuntimeClass's overhead on top of the requests and the limits set
        (
            [box("a", limits={"cpu": "1", "memory": "64Mi"})],
            {"overhead": {"cpu": "250m", "memory": "16Mi"}},
            LinuxResources(cpu_shares=1280, cpu_quota=125000, cpu_period=100000, memory_limit=80 * MI),
        ),
    ],
)
def test_the_pod_cgroup_gets_the_kubelets_limits(
    containers: list[dict[str, Any]], spec: dict[str, Any], expected: LinuxResources
) -> None:
    assert pod_cgroup_resources(manifests.pod("p", containers, **spec)) == expected


def test_the_limits_count_the_init_phase_peak_and_the_sidecars_and_say_which_are_declared() -> None:
    init = [
        box("setup", limits={"cpu": "2", "memory": "32Mi"}),
        {**box("proxy", limits={"cpu": "200m"}), "restartPolicy": "Always"},
    ]
    pod = manifests.pod("p", [box("app", limits={"cpu": "1", "memory": "64Mi"})], initContainers=init)
    resources = {c["name"]: c["resources"] for c in [*init, *pod["spec"]["containers"]]}
    # cpu: setup alone (2000) over app + proxy (1200); memory: the sidecar declares none
    assert pod_limits(pod, resources) == ((2000, 64 * MI), (True, False))


def test_the_allocated_resources_win_over_the_spec() -> None:
    pod = manifests.pod("p", [box("a", limits={"cpu": "1", "memory": "64Mi"})])
    allocated = {"a": {"limits": {"cpu": "2", "memory": "128Mi"}}}
    assert pod_cgroup_resources(pod, allocated).memory_limit == 128 * MI
