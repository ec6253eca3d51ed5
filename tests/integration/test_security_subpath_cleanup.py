"""Security issue 30, item 1: a pod's subPath bind mounts (runtime/subpath_mounts.py) go with
the pod, as the kubelet's CleanSubPaths does: when it is deleted, and when it was deleted
while the provider was dead (SIGKILL) and the restarted provider finds its files orphaned.
Nothing is left mounted under the state directory, and the pod's directory goes (its removal
refuses a tree that still holds a mount, so without the clean-up it would stay).

The provider runs as a real process (`start_provider_process`) so that SIGKILL leaves
everything as it was; the verdict comes from /proc/self/mountinfo, the state directory and
the engine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from vk_common import guarded_paths as paths
from vk_provider.runtime.docker import labels as lb

pytestmark = pytest.mark.docker


def subpath_pod(harness: ProviderHarness, name: str) -> dict[str, Any]:
    main = sh(
        "main",
        "echo kept > /sub/file; sleep 3600",
        volumeMounts=[{"name": "work", "mountPath": "/sub", "subPath": "deep/dir"}],
    )
    return harness.manifest(
        name, [main], volumes=[{"name": "work", "emptyDir": {}}], terminationGracePeriodSeconds=1
    )


def mounts_under(path: Path) -> list[str]:
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        return paths.mounts_under(os.path.realpath(path), f.read())


async def test_subpath_mounts_go_with_the_pod_also_after_the_provider_was_killed(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    harness = ProviderHarness(node_name, tmp_path, plane=plane)
    await harness.start_sandbox()
    state = tmp_path / "state" / node_name
    try:
        harness.start_provider_process()
        created = {name: await harness.create(subpath_pod(harness, name)) for name in ("deleted", "orphaned")}
        for name in created:
            await harness.wait_for(name, lambda pod: phase(pod) == "Running")
        uid = {name: str(pod["metadata"]["uid"]) for name, pod in created.items()}
        assert len(mounts_under(state / uid["deleted"])) == 1
        assert len(mounts_under(state / uid["orphaned"])) == 1

        # Deleted while the provider runs: the mount is detached and the pod's directory goes.
        await harness.delete("deleted")
        await harness.wait_gone("deleted")
        await eventually(
            lambda: not (state / uid["deleted"]).exists() or None,
            within=30,
            what="the pod's directory removed",
        )
        assert mounts_under(state / uid["deleted"]) == []

        # Deleted while the provider is dead: the restarted provider finds the files orphaned.
        harness.kill_provider_process()
        await harness.delete("orphaned", grace=0)
        await harness.wait_gone("orphaned")
        assert len(mounts_under(state / uid["orphaned"])) == 1, "a killed provider cleans nothing"
        harness.start_provider_process()
        await eventually(
            lambda: not (state / uid["orphaned"]).exists() or None,
            within=90,
            what=lambda: f"the orphan's directory removed (provider log: {harness.provider_log()[-2000:]})",
        )
        assert mounts_under(state) == [], "nothing is left mounted under the state directory"
        assert labelled(docker_client, f"{lb.POD_UID}={uid['orphaned']}") == []
    finally:
        await harness.close()
