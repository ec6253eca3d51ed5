"""spec.activeDeadlineSeconds on real Docker through the control plane, as the kubelet enforces it
(pkg/kubelet/active_deadline.go): the pod is killed and ends Failed / DeadlineExceeded for good.

Runs on each tier chosen with --control-plane (the `harness` and `plane` fixtures).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.manifests import sh, static_pod_dir
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker

REASON = "DeadlineExceeded"
MESSAGE = "Pod was active on the node longer than the specified deadline"


def app_containers(docker_client: Any, uid: str, *, all_: bool = False) -> list[Any]:
    """The pod's app containers in Docker (running ones only unless `all_`)."""
    labels = [f"io.vk-provider.pod.uid={uid}", "io.vk-provider.role=app"]
    return labelled(docker_client, labels, all=all_)


def failed_by_deadline(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return phase(pod) == "Failed" and status.get("reason") == REASON


async def stays_failed(harness: ProviderHarness, name: str, seconds: float) -> None:
    """The terminal phase, reason and message do not change for `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pod = await harness.get(name)
        assert pod is not None
        status = pod["status"]
        assert (status["phase"], status.get("reason"), status.get("message")) == ("Failed", REASON, MESSAGE)
        await asyncio.sleep(0.5)


async def test_a_pod_past_its_deadline_is_killed_and_stays_failed(
    harness: ProviderHarness, docker_client: Any
) -> None:
    manifest = harness.manifest(
        "deadline",
        [sh("app", "sleep 3600")],
        activeDeadlineSeconds=5,
        restartPolicy="Always",
        terminationGracePeriodSeconds=2,
    )
    created = await harness.create(manifest)
    uid = created["metadata"]["uid"]
    running = await harness.wait_for("deadline", lambda p: phase(p) == "Running")
    assert running["status"]["startTime"]
    assert len(app_containers(docker_client, uid)) == 1

    failed = await harness.wait_for("deadline", failed_by_deadline, within=60)
    assert failed["status"]["message"] == MESSAGE
    assert "terminated" in container_status(failed, "app")["state"]
    ready = next(c for c in failed["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    # Killed, and restartPolicy Always does not bring it back.
    assert app_containers(docker_client, uid) == []
    assert len(app_containers(docker_client, uid, all_=True)) == 1

    event = await harness.wait_event("deadline", REASON)
    assert (event["type"], event["message"]) == ("Normal", MESSAGE)
    assert event["involvedObject"]["uid"] == uid

    await stays_failed(harness, "deadline", 6.0)
    assert app_containers(docker_client, uid) == []
    assert len(app_containers(docker_client, uid, all_=True)) == 1
    assert container_status(await harness.get("deadline") or {}, "app")["restartCount"] == 0


async def test_a_lowered_deadline_fails_a_running_pod(harness: ProviderHarness, docker_client: Any) -> None:
    manifest = harness.manifest(
        "lowered", [sh("app", "sleep 3600")], activeDeadlineSeconds=3600, terminationGracePeriodSeconds=2
    )
    uid = (await harness.create(manifest))["metadata"]["uid"]
    await harness.wait_for("lowered", lambda p: phase(p) == "Running")
    await harness.api.patch("/api/v1/namespaces/default/pods/lowered", {"spec": {"activeDeadlineSeconds": 2}})
    failed = await harness.wait_for("lowered", failed_by_deadline, within=60)
    assert failed["status"]["message"] == MESSAGE
    assert app_containers(docker_client, uid) == []
    await harness.wait_event("lowered", REASON)


async def test_a_static_pod_past_its_deadline_fails_its_mirror(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    static_dir = static_pod_dir(
        tmp_path, "timed", [sh("app", "sleep 3600")], activeDeadlineSeconds=4, terminationGracePeriodSeconds=2
    )
    mirror = f"timed-{node_name.lower()}"
    async with ProviderHarness.running(node_name, tmp_path, static_dir=static_dir, plane=plane) as harness:
        failed = await harness.wait_for(mirror, failed_by_deadline, within=60)
        assert failed["status"]["message"] == MESSAGE
        label = [f"io.vk-provider.pod.name={mirror}", "io.vk-provider.role=app"]
        assert labelled(docker_client, label, all=False) == []
        await stays_failed(harness, mirror, 4.0)
        assert labelled(docker_client, label, all=False) == []
