"""A volumeMount's mountPropagation and recursiveReadOnly, and clusterTrustBundle projections,
on real Docker through the sandbox API (hostPath allowed in the node's configuration).

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

from tests.integration.test_pods_volume_types import HostPathHarness, create_with_volume, failed_mount_message
from tests.integration.test_pods_volumes import wait_logs
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.provider_harness import ProviderHarness
from vk_sandbox.pki.authority import SandboxPKI

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


TRUST_BUNDLES = "/apis/certificates.k8s.io/v1/clustertrustbundles"


def _pem_blocks(text: str) -> set[str]:
    return {b.strip() for b in text.split("-----END CERTIFICATE-----") if "BEGIN CERTIFICATE" in b}


@pytest.mark.real_only  # the emulator serves no certificates.k8s.io/v1 ClusterTrustBundles
async def test_cluster_trust_bundle_projections_hold_the_selected_anchors_once(
    harness: ProviderHarness, docker_client: Any
) -> None:
    """By name and by signer with a label selector (projected.go, clustertrustbundle_manager.go):
    each file holds the selected bundles' certificates, each once; an optional source that
    selects nothing is an empty file."""
    first, second = (SandboxPKI(None).ca_pem.decode() for _ in range(2))
    await harness.api.create(
        TRUST_BUNDLES,
        {"metadata": {"name": "vk-plain-ca"}, "spec": {"trustBundle": first}},
    )
    await harness.api.create(
        TRUST_BUNDLES,
        {
            "metadata": {"name": "example.com:vk-test:a", "labels": {"team": "a"}},
            "spec": {"signerName": "example.com/vk-test", "trustBundle": second + first},
        },
    )
    by_signer = {"signerName": "example.com/vk-test", "labelSelector": {"matchLabels": {"team": "a"}}}
    sources = [
        {"clusterTrustBundle": {"name": "vk-plain-ca", "path": "by-name.pem"}},
        {"clusterTrustBundle": {**by_signer, "path": "by-signer.pem"}},
        {"clusterTrustBundle": {"name": "vk-none", "path": "none.pem", "optional": True}},
    ]
    volume = {"name": "trust", "projected": {"sources": sources}}
    script = "cat /v/by-name.pem; echo @@; cat /v/by-signer.pem; echo @@; wc -c < /v/none.pem; sleep 3600"
    await create_with_volume(harness, "ctb", script, volume)
    log = await wait_logs(harness, "ctb", "main", docker_client, "@@\n0")
    by_name, signer, _ = log.split("@@\n")
    assert _pem_blocks(by_name) == _pem_blocks(first)
    assert _pem_blocks(signer) == _pem_blocks(first + second) and signer.count("BEGIN") == 2


@pytest.mark.real_only
async def test_a_cluster_trust_bundle_that_is_missing_keeps_the_pod_creating_with_the_kubelets_error(
    harness: ProviderHarness,
) -> None:
    volume = {
        "name": "trust",
        "projected": {"sources": [{"clusterTrustBundle": {"name": "vk-absent", "path": "a"}}]},
    }
    message = await failed_mount_message(harness, "ctb-missing", volume)
    assert message == (
        'MountVolume.SetUp failed for volume "trust" : while getting ClusterTrustBundle: '
        'clustertrustbundles.certificates.k8s.io "vk-absent" not found'
    )
