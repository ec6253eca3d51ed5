"""Restart safety (issue 5 item 6): kill -9 of the provider, then a restart adopts what runs.

The provider runs as a real `python -m vk_cli run` process so that SIGKILL leaves no
chance for clean-up; the second run is the in-process provider of the harness.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker
POD_UID_LABEL = "io.vk-provider.pod.uid"


async def no_containers_left(docker_client: Any, uid: str) -> bool:
    """True once pod `uid` has no container left (an AssertionError after 20 s)."""
    await eventually(
        lambda: not labelled(docker_client, f"{POD_UID_LABEL}={uid}"),
        within=20,
        interval=0.2,
        what=f"no containers left of pod {uid}",
    )
    return True


async def test_kill_9_then_restart_adopts_running_pods_and_removes_deleted_ones(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    async with ProviderHarness.sandbox_only(node_name, tmp_path, plane=plane) as harness:
        harness.start_provider_process()
        names = [f"keep-{i}" for i in range(9)]
        for name in names:
            await harness.create(harness.manifest(name, [sh("main", "sleep 3600")]))
        await harness.create(harness.manifest("gone", [sh("main", "sleep 3600")]))
        await harness.create(
            harness.manifest("soft", [sh("main", "sleep 3600")], terminationGracePeriodSeconds=2)
        )
        await harness.create(harness.manifest("done", [sh("main", "exit 0")], restartPolicy="Never"))
        before: dict[str, dict[str, Any]] = {}
        for name in [*names, "gone", "soft"]:
            before[name] = await harness.wait_for(name, lambda p: phase(p) == "Running", within=90)
        done = await harness.wait_for("done", lambda p: phase(p) == "Succeeded", within=90)

        harness.kill_provider_process()
        gone_uid = before["gone"]["metadata"]["uid"]
        await harness.delete("gone", grace=0)  # force: gone from the API at once
        await harness.delete("soft")  # graceful: waits for the node to stop its containers
        soft_uid = before["soft"]["metadata"]["uid"]
        assert labelled(docker_client, f"{POD_UID_LABEL}={gone_uid}")

        await harness.start_provider()
        for name in names:
            pod = await harness.wait_for(name, lambda p: phase(p) == "Running")
            old, new = container_status(before[name], "main"), container_status(pod, "main")
            assert new["containerID"] == old["containerID"]
            assert new["restartCount"] == old["restartCount"] == 0
            assert new["state"]["running"]["startedAt"] == old["state"]["running"]["startedAt"]
            assert pod["status"]["startTime"] == before[name]["status"]["startTime"]
        await asyncio.sleep(3)  # the restarted provider's first syncs and status passes are done
        for name in names:
            now = await harness.get(name)
            assert now is not None
            assert now["status"] == before[name]["status"], name
        await harness.wait_gone("soft", within=60)
        done_uid = done["metadata"]["uid"]
        for uid in (gone_uid, soft_uid):
            assert await no_containers_left(docker_client, uid), (
                "containers of pods deleted while down are removed"
            )
        ran = labelled(docker_client, [f"{POD_UID_LABEL}={done_uid}", "io.vk-provider.role=app"])
        assert len(ran) == 1, "a completed pod's containers are never re-run"
        after_done = await harness.get("done")
        assert after_done is not None and phase(after_done) == "Succeeded"


async def test_sigterm_stops_the_provider_cleanly_and_leaves_pods_running(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    async with ProviderHarness.sandbox_only(node_name, tmp_path, plane=plane) as harness:
        harness.start_provider_process()
        await harness.create(harness.manifest("survivor", [sh("main", "sleep 3600")]))
        pod = await harness.wait_for("survivor", lambda p: phase(p) == "Running", within=90)
        container_id = container_status(pod, "main")["containerID"].removeprefix("docker://")
        process = harness.process
        assert process is not None
        process.terminate()
        code = await asyncio.to_thread(process.wait, 60)
        harness.process = None
        assert code == 0, harness.provider_log()
        assert docker_client.containers.get(container_id).status == "running"
        assert "provider stopped" in harness.provider_log()
