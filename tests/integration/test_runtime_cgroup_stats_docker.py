"""The cgroup files of a real container read as the engine's own `docker stats` reads them: the
same CPU time (to the sample's drift) and memory, for a container this host's engine runs."""

from __future__ import annotations

import time
from typing import Any

import pytest

from vk_provider.runtime.docker.cgroup_stats import CgroupStats
from vk_provider.runtime.docker.stats import container_stats

pytestmark = pytest.mark.docker

BUSY = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 600"


def test_cgroup_files_agree_with_docker_stats(docker_client: Any, test_images: dict[str, str]) -> None:
    container = docker_client.containers.run(
        test_images["busybox"], ["sh", "-c", BUSY], detach=True, labels={"vk-test": "cgroup-stats"}
    )
    try:
        deadline = time.monotonic() + 60
        while "sleep" not in " ".join(p[-1] for p in container.top()["Processes"]):
            assert time.monotonic() < deadline, "the busy loop did not end within 60 s"
            time.sleep(0.5)
        ours = CgroupStats().read(container.id)
        assert ours is not None, "this host's engine runs its containers under /sys/fs/cgroup"
        engine = docker_client.api.stats(container.id, stream=False, one_shot=True)
        mine, theirs = container_stats(ours), container_stats(engine)
        assert mine.cpu_usage_core_nanoseconds > 0
        # the busy loop is over: CPU time no longer moves between the two reads
        assert abs(mine.cpu_usage_core_nanoseconds - theirs.cpu_usage_core_nanoseconds) < 50_000_000
        assert abs(mine.memory_usage_bytes - theirs.memory_usage_bytes) < 4 * 1024 * 1024
        assert abs(mine.memory_working_set_bytes - theirs.memory_working_set_bytes) < 4 * 1024 * 1024
        assert (mine.memory_rss_bytes is None) == (theirs.memory_rss_bytes is None)
    finally:
        container.remove(force=True)
