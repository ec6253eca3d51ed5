"""A volumeMount's mountPropagation and recursiveReadOnly, and the projections the node cannot
write, on real Docker through the sandbox API (hostPath allowed in the node's configuration).

What a container sees is read from its log; what the user sees from the pod's status and
Events. Upstream: pkg/kubelet/kubelet_pods.go (makeMounts, translateMountPropagation,
resolveRecursiveReadOnly).
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_pods_volume_types import HostPathHarness, failed_mount_message
from tests.integration.test_pods_volumes import wait_logs
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker


@pytest.fixture
def shared_dir(tmp_path: Path) -> Iterator[Path]:
    """A host directory on a shared mount (Docker's rslave needs a shared or slave source)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    subprocess.run(["mount", "--bind", str(shared), str(shared)], check=True)
    try:
        subprocess.run(["mount", "--make-shared", str(shared)], check=True)
        yield shared
    finally:
        subprocess.run(["umount", "-R", "-l", str(shared)], check=False)


async def test_host_to_container_sees_a_mount_made_later_on_the_host(
    plane: Plane,
    node_name: str,
    test_images: dict[str, str],
    tmp_path: Path,
    shared_dir: Path,
    docker_client: Any,
) -> None:
    script = "until [ -f /v/later/f ]; do sleep 0.2; done; cat /v/later/f; echo done; sleep 3600"
    volume = {"name": "host", "hostPath": {"path": str(shared_dir)}}
    mounts = [{"name": "host", "mountPath": "/v", "mountPropagation": "HostToContainer"}]
    async with HostPathHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        await harness.create(
            harness.manifest("h2c", [sh("main", script, volumeMounts=mounts)], volumes=[volume])
        )
        await harness.wait_for("h2c", lambda p: phase(p) == "Running")
        later = shared_dir / "later"
        later.mkdir()
        await asyncio.to_thread(subprocess.run, ["mount", "-t", "tmpfs", "tmpfs", str(later)], check=True)
        (later / "f").write_text("mounted after the start\n")
        log = await wait_logs(harness, "h2c", "main", docker_client, "done")
        pod = await harness.get("h2c")
        assert pod is not None
        cid = container_status(pod, "main")["containerID"].split("://")[-1]
        inspected = docker_client.api.inspect_container(cid)["Mounts"]
    assert log.splitlines() == ["mounted after the start", "done"]
    assert [(m["Destination"], m["Propagation"]) for m in inspected if m["Destination"] == "/v"] == [
        ("/v", "rslave")
    ]


async def test_recursive_read_only_enabled_fails_as_on_a_runtime_without_it(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path
) -> None:
    volume = {"name": "host", "hostPath": {"path": str(tmp_path)}}
    mounts = [
        {"name": "host", "mountPath": "/if", "readOnly": True, "recursiveReadOnly": "IfPossible"},
        {"name": "host", "mountPath": "/rro", "readOnly": True, "recursiveReadOnly": "Enabled"},
    ]
    async with HostPathHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        await harness.create(
            harness.manifest("rro", [sh("main", "sleep 3600", volumeMounts=mounts)], volumes=[volume])
        )
        pod = await harness.wait_for(
            "rro", lambda p: waiting_reason(p, "main") == "CreateContainerConfigError"
        )
    assert container_status(pod, "main")["state"]["waiting"]["message"] == (
        'failed to resolve recursive read-only mode: volume "host" requested recursive read-only mode, '
        "but it is not supported by the runtime"
    )


async def test_propagation_on_an_emptydir_is_refused_with_its_field_path(harness: ProviderHarness) -> None:
    mounts = [{"name": "scratch", "mountPath": "/v", "mountPropagation": "HostToContainer"}]
    volume = {"name": "scratch", "emptyDir": {}}
    await harness.create(
        harness.manifest("propdir", [sh("main", "sleep 3600", volumeMounts=mounts)], volumes=[volume])
    )
    pod = await harness.wait_for("propdir", lambda p: phase(p) == "Failed")
    assert (pod["status"]["reason"], pod["status"]["message"]) == (
        "Forbidden",
        "spec.containers[0].volumeMounts[0].mountPropagation: HostToContainer propagation is "
        "supported on hostPath volumes only on this node",
    )


async def test_a_cluster_trust_bundle_projection_fails_the_mount_naming_the_source(
    harness: ProviderHarness,
) -> None:
    bundle = {"clusterTrustBundle": {"name": "example.com:ca:1", "path": "ca.pem"}}
    volume = {"name": "trust", "projected": {"sources": [bundle]}}
    message = await failed_mount_message(harness, "ctb", volume)
    assert message == (
        'MountVolume.SetUp failed for volume "trust" : projected.sources[0].clusterTrustBundle: '
        "clusterTrustBundle projections are not supported on this node"
    )
