"""Security issue 30, item 1, on real Docker through the provider: a pod that swaps a directory
of its emptyDir for a symlink to a host directory, while another of its containers mounts a
subPath through that directory, never gets the host directory (the class of CVE-2017-1002101
and CVE-2021-25741).

Each pod: `swapper` loops `mv x d; ln -s HOST x; rm x; mv d x` in the emptyDir; `writer`
mounts `subPath: x/target`, records its start in a second emptyDir, writes a file into its
mount and exits, to be started again (crash-loop back-off: several pods give the starts).
Before the fix (a realpath check, then the path string handed to Docker, which resolves it
again when the container starts) a writer's file reached the host directory within a few
starts. Bounded: SWAP_SECONDS of swapping and at least MIN_STARTS writer starts, then the
pods go with the test's node.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.manifests import sh
from tests.support.provider_harness import ProviderHarness
from vk_provider.runtime.docker import labels as lb

pytestmark = pytest.mark.docker

PODS = 8
SWAP_SECONDS = 60.0
MIN_STARTS = 20
DEADLINE_SECONDS = 300.0
SWAPPER_CPU = "100m"  # eight busy loops on a 2-core machine shared with other tests


def race_pod(harness: ProviderHarness, name: str, host_dir: Path) -> dict[str, Any]:
    swap = (
        "mkdir -p /w/x/target; touch /count/starts; "
        f"while true; do mv /w/x /w/d; ln -s {host_dir} /w/x; rm /w/x; mv /w/d /w/x; done"
    )
    swapper = sh(
        "swapper",
        swap,
        volumeMounts=[{"name": "work", "mountPath": "/w"}, {"name": "count", "mountPath": "/count"}],
        resources={"limits": {"cpu": SWAPPER_CPU, "memory": "32Mi"}},
    )
    writer = sh(
        "writer",
        "echo started >> /count/starts; touch /m/written-$RANDOM; exit 1",
        volumeMounts=[
            {"name": "work", "mountPath": "/m", "subPath": "x/target"},
            {"name": "count", "mountPath": "/count"},
        ],
    )
    volumes = [{"name": "work", "emptyDir": {}}, {"name": "count", "emptyDir": {}}]
    return harness.manifest(name, [swapper, writer], volumes=volumes)


def writer_starts(docker_client: Any, uids: list[str]) -> int:
    """The writers' starts, as each pod's `swapper` reads them from the count volume."""
    total = 0
    for uid in uids:
        running = labelled(docker_client, [f"{lb.POD_UID}={uid}", f"{lb.CONTAINER_NAME}=swapper"], all=False)
        if running:
            code, out = running[0].exec_run(["sh", "-c", "wc -l < /count/starts"])
            total += int(out.strip() or 0) if code == 0 else 0
    return total


def escaped(host_dir: Path) -> list[str]:
    """What reached the host directory: anything but its empty `target`."""
    found = [name for name in os.listdir(host_dir) if name != "target"]
    return found + [f"target/{name}" for name in os.listdir(host_dir / "target")]


async def test_a_subpath_swapped_for_a_symlink_never_binds_the_host_directory(
    harness: ProviderHarness, docker_client: Any, tmp_path: Path
) -> None:
    host_dir = tmp_path / "host-dir"
    (host_dir / "target").mkdir(parents=True)
    os.chmod(host_dir / "target", 0o777)
    created = [await harness.create(race_pod(harness, f"race-{i}", host_dir)) for i in range(PODS)]
    uids = [str(p["metadata"]["uid"]) for p in created]
    began = time.monotonic()
    starts = 0
    while True:
        await asyncio.sleep(2)
        starts = await asyncio.to_thread(writer_starts, docker_client, uids)
        swapped = time.monotonic() - began
        outside = await asyncio.to_thread(escaped, host_dir)
        assert outside == [], (
            f"a writer wrote into the host directory {host_dir} after {swapped:.0f} s and "
            f"{starts} starts: {outside}"
        )
        if swapped >= SWAP_SECONDS and starts >= MIN_STARTS:
            break
        assert swapped < DEADLINE_SECONDS, f"only {starts} writer starts in {swapped:.0f} s"
    print(f"subPath race: {starts} writer starts over {swapped:.0f} s of swapping, 0 writes outside")
    # The writers did write: into the volume, in the directory the swapper keeps moving.
    assert await asyncio.to_thread(written_in_volume, docker_client, uids[0]) >= 1


def written_in_volume(docker_client: Any, uid: str) -> int:
    """The writers' files in the pod's emptyDir, under x/ or d/ (the swapper moves it; a look
    that falls between two moves is taken again)."""
    swapper = labelled(docker_client, [f"{lb.POD_UID}={uid}", f"{lb.CONTAINER_NAME}=swapper"], all=False)[0]
    count = 0
    for _ in range(20):
        code, out = swapper.exec_run(["sh", "-c", "ls /w/x/target /w/d/target 2>/dev/null | grep -c written"])
        count = max(count, int(out.strip() or 0) if code == 0 else 0)
        if count:
            break
    return count
