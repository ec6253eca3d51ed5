"""A container's stats from its cgroup files: v1 and v2 trees, both of Docker's cgroup drivers,
read into `docker stats`' shape (so `container_stats` gives the same working set and RSS), and
None when the container's cgroup is not visible from here."""

from __future__ import annotations

from pathlib import Path

import pytest

from vk_provider.runtime.docker.cgroup_stats import CgroupStats
from vk_provider.runtime.docker.stats import container_stats

ID = "a" * 64


def _v1(root: Path, place: str) -> None:
    (root / "cpuacct" / place).mkdir(parents=True)
    (root / "cpuacct" / place / "cpuacct.usage").write_text("1500000000\n")
    (root / "memory" / place).mkdir(parents=True)
    (root / "memory" / place / "memory.usage_in_bytes").write_text("10485760\n")
    (root / "memory" / place / "memory.stat").write_text(
        "cache 4194304\nrss 5242880\ninactive_file 2097152\ntotal_inactive_file 2097152\n"
    )


def _v2(root: Path, place: str) -> None:
    (root / "cgroup.controllers").parent.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text("cpu memory\n")
    (root / place).mkdir(parents=True)
    (root / place / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    (root / place / "memory.current").write_text("10485760\n")
    (root / place / "memory.stat").write_text("anon 5242880\nfile 4194304\ninactive_file 2097152\n")


@pytest.mark.parametrize("layout", [_v1, _v2])
@pytest.mark.parametrize("place", [f"docker/{ID}", f"system.slice/docker-{ID}.scope"])
def test_both_versions_and_drivers_read_as_docker_stats(tmp_path: Path, layout: object, place: str) -> None:
    assert callable(layout)
    layout(tmp_path, place)
    sample = CgroupStats(tmp_path).read(ID)
    assert sample is not None
    stats = container_stats(sample)
    assert stats.cpu_usage_core_nanoseconds == 1_500_000_000
    assert stats.memory_usage_bytes == 10 * 1024 * 1024
    assert stats.memory_working_set_bytes == 8 * 1024 * 1024  # usage minus inactive file pages
    assert stats.memory_rss_bytes == 5 * 1024 * 1024


def test_a_container_not_in_this_tree_is_none_and_a_removed_one_is_forgotten(tmp_path: Path) -> None:
    cgroups = CgroupStats(tmp_path)
    assert cgroups.read(ID) is None  # e.g. the provider in a container, or a remote engine
    _v1(tmp_path, f"docker/{ID}")
    assert cgroups.read(ID) is not None
    (tmp_path / "memory" / "docker" / ID / "memory.stat").unlink()  # the container went away
    assert cgroups.read(ID) is None
