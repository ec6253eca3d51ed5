"""The pods' cgroups (runtime/pod_cgroups.py): where each lives and what is written, per driver and
cgroup version, over a directory standing in for /sys/fs/cgroup (the cgroupfs / v1 path also runs
for real in tests/integration/test_pods_cgroups.py; systemd and v2 hosts are not at hand)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from vk_provider.runtime.pod_cgroups import CgroupDriver, PodCgroups, cpu_weight
from vk_provider.runtime.types import LinuxResources

UID = "0b6c5d1e-aaaa-bbbb-cccc-123456789abc"
LIMITS = LinuxResources(cpu_shares=512, cpu_quota=50000, cpu_period=100000, memory_limit=128 * 2**20)


def v1_mount(tmp_path: Path) -> Path:
    for controller in ("cpu", "memory", "pids"):
        (tmp_path / controller).mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("driver", "qos", "parent"),
    [
        (CgroupDriver.CGROUPFS, "Guaranteed", f"/vk-provider/node-1/pod{UID}"),
        (CgroupDriver.CGROUPFS, "Burstable", f"/vk-provider/node-1/burstable/pod{UID}"),
        (CgroupDriver.CGROUPFS, "BestEffort", f"/vk-provider/node-1/besteffort/pod{UID}"),
        (CgroupDriver.SYSTEMD, "Burstable", f"vk_provider-node_1-burstable-pod{UID.replace('-', '_')}.slice"),
        (CgroupDriver.SYSTEMD, "Guaranteed", f"vk_provider-node_1-pod{UID.replace('-', '_')}.slice"),
    ],
)
def test_a_pods_cgroup_is_laid_out_as_the_kubelets_under_the_nodes_root(
    driver: CgroupDriver, qos: str, parent: str
) -> None:
    assert PodCgroups("/vk-provider/node-1", driver, 1).parent(qos, UID) == parent


def test_cgroupfs_v1_writes_the_limits_in_the_cpu_and_memory_hierarchies(tmp_path: Path) -> None:
    cgroups = PodCgroups("/vk-provider/node-1", CgroupDriver.CGROUPFS, 1, v1_mount(tmp_path))
    cgroups.prepare()
    assert cgroups.ensure("Burstable", UID, LIMITS) == f"/vk-provider/node-1/burstable/pod{UID}"
    cpu = tmp_path / "cpu/vk-provider/node-1/burstable" / f"pod{UID}"
    memory = tmp_path / "memory/vk-provider/node-1/burstable" / f"pod{UID}"
    assert (cpu / "cpu.shares").read_text() == "512"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "50000"
    assert (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert (memory / "memory.limit_in_bytes").read_text() == str(128 * 2**20)
    assert cgroups.pod_uids() == {UID}
    # no quota, no memory limit: unlimited (an in-place resize lifting them)
    cgroups.update("Burstable", UID, LinuxResources(cpu_shares=512))
    assert (cpu / "cpu.cfs_quota_us").read_text() == "-1"
    assert (memory / "memory.limit_in_bytes").read_text() == "-1"


def test_systemd_v1_nests_the_slices(tmp_path: Path) -> None:
    cgroups = PodCgroups("/vk-provider/n", CgroupDriver.SYSTEMD, 1, v1_mount(tmp_path))
    cgroups.ensure("BestEffort", UID, LinuxResources(cpu_shares=2))
    slice_ = f"vk_provider-n-besteffort-pod{UID.replace('-', '_')}.slice"
    path = tmp_path / "cpu/vk_provider.slice/vk_provider-n.slice/vk_provider-n-besteffort.slice" / slice_
    assert (path / "cpu.shares").read_text() == "2"
    assert cgroups.pod_uids() == {UID}


def test_v2_writes_weight_max_and_memory_max_in_one_directory_with_the_controllers_enabled(
    tmp_path: Path,
) -> None:
    cgroups = PodCgroups("/vk-provider/node-1", CgroupDriver.CGROUPFS, 2, tmp_path)
    cgroups.prepare()
    cgroups.ensure("Guaranteed", UID, LIMITS)
    pod = tmp_path / "vk-provider/node-1" / f"pod{UID}"
    assert (pod / "cpu.weight").read_text() == str(cpu_weight(512))
    assert (pod / "cpu.max").read_text() == "50000 100000"
    assert (pod / "memory.max").read_text() == str(128 * 2**20)
    for parent in (tmp_path, tmp_path / "vk-provider", tmp_path / "vk-provider/node-1"):
        assert (parent / "cgroup.subtree_control").read_text() == "+cpu +memory"
    assert cgroups.pod_uids() == {UID}


def test_cpu_weight_is_the_kubelets_conversion_of_shares() -> None:
    assert (cpu_weight(2), cpu_weight(1024), cpu_weight(262144)) == (1, 39, 10000)


def test_a_removed_pods_cgroup_is_gone_and_the_nodes_root_goes_with_the_last_pod(tmp_path: Path) -> None:
    cgroups = PodCgroups("/vk-provider/node-1", CgroupDriver.CGROUPFS, 1, v1_mount(tmp_path))
    cgroups.prepare()
    made = [tmp_path / c / "vk-provider/node-1" / f"pod{UID}" for c in ("cpu", "memory", "pids")]
    for directory in made:
        directory.mkdir(parents=True, exist_ok=True)  # the engine makes it in every hierarchy
    assert not cgroups.remove_root()  # a pod is still there
    assert cgroups.remove(UID) and not any(d.exists() for d in made)
    assert cgroups.remove_root()
    assert not (tmp_path / "memory/vk-provider/node-1").exists()


def test_a_process_left_in_a_removed_pods_cgroup_is_killed(tmp_path: Path) -> None:
    # The kubelet kills what is left in a pod cgroup before it destroys it; Podman 4.3 leaves
    # the conmon of an exec session behind its removed container.
    left = subprocess.Popen(["sleep", "600"])
    try:
        cgroups = PodCgroups(root="/vk-provider/n", driver=CgroupDriver.CGROUPFS, version=2, mount=tmp_path)
        conmon = tmp_path / "vk-provider" / "n" / "besteffort" / "podu1" / "conmon"
        conmon.mkdir(parents=True)
        (conmon / "cgroup.procs").write_text(f"{left.pid}\n")
        cgroups.remove("u1")
        assert left.wait(timeout=10) == -signal.SIGKILL
    finally:
        left.kill()
