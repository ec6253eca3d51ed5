"""Volume types beyond the API-backed ones, on real Docker, through the sandbox API: the
Memory emptyDir's size, hostPath with its `type` checks (hostPath allowed in the node's
configuration), subPathExpr, and what the node cannot mount (persistentVolumeClaim, csi:
Pending with FailedMount; image volumes: refused).

What a container sees is read from its log; what the user sees from the pod's status and
Events.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_pods_volumes import wait_logs
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.provider_harness import ProviderHarness, harness_allowing

pytestmark = pytest.mark.docker


HostPathHarness = harness_allowing(host_path=True)  # the provider with `docker.allow.hostPath: true`


async def create_with_volume(
    harness: ProviderHarness, name: str, script: str, volume: dict[str, Any]
) -> None:
    """Create pod `name`: one busybox container running `script`, `volume` mounted at /v."""
    mounts = [{"name": volume["name"], "mountPath": "/v"}]
    await harness.create(harness.manifest(name, [sh("main", script, volumeMounts=mounts)], volumes=[volume]))


async def test_a_memory_emptydir_is_a_tmpfs_of_its_size_limit(
    harness: ProviderHarness, docker_client: Any
) -> None:
    # Upstream: pkg/volume/emptydir/empty_dir.go setupTmpfs (size= from sizeLimit).
    script = "df -k /v | tail -1 | awk '{print $1, $2}'; echo done; sleep 3600"
    volume = {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "3Mi"}}
    await create_with_volume(harness, "memsize", script, volume)
    log = await wait_logs(harness, "memsize", "main", docker_client, "done")
    assert log.splitlines() == ["tmpfs 3072", "done"]


async def test_subpath_expr_on_an_emptydir_is_a_directory_of_the_volume(
    harness: ProviderHarness, docker_client: Any
) -> None:
    """subPathExpr on a disk emptyDir (the upstream Variable Expansion conformance specs): the
    sub-directory is made with the volume root's mode, so a non-root container writes there,
    and a container mounting the whole volume sees what it wrote under that name."""
    env = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    writer = sh(
        "writer",
        "echo from-writer > /sub/out && echo wrote; sleep 3600",
        volumeMounts=[{"name": "work", "mountPath": "/sub", "subPathExpr": "$(POD_NAME)/deeper"}],
        env=env,
        securityContext={"runAsUser": 1234},
    )
    reader = sh(
        "reader",
        "until [ -s /all/subpaths/deeper/out ]; do sleep 0.2; done;"
        " stat -c '%a %u' /all/subpaths /all/subpaths/deeper; cat /all/subpaths/deeper/out; echo done;"
        " sleep 3600",
        volumeMounts=[{"name": "work", "mountPath": "/all"}],
    )
    manifest = harness.manifest("subpaths", [writer, reader], volumes=[{"name": "work", "emptyDir": {}}])
    await harness.create(manifest)
    log = await wait_logs(harness, "subpaths", "reader", docker_client, "done")
    assert log.splitlines() == ["777 0", "777 0", "from-writer", "done"]


async def test_host_path_types_create_what_is_missing_and_subpath_expr_expands(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "file").write_text("on the host\n")
    script = (
        "stat -c '%n %F %a %g' /made/dir /made-file /file /null;"
        " cat /file; echo written > /logs/out; echo done; sleep 3600"
    )
    volumes = [
        {"name": "dir", "hostPath": {"path": str(host / "new" / "dir"), "type": "DirectoryOrCreate"}},
        {"name": "made", "hostPath": {"path": str(host / "made"), "type": "FileOrCreate"}},
        {"name": "file", "hostPath": {"path": str(host / "file"), "type": "File"}},
        {"name": "null", "hostPath": {"path": "/dev/null", "type": "CharDevice"}},
        {"name": "logs", "hostPath": {"path": str(host / "logs"), "type": "Directory"}},
    ]
    (host / "logs").mkdir()
    mounts = [
        {"name": "dir", "mountPath": "/made/dir"},
        {"name": "made", "mountPath": "/made-file"},
        {"name": "file", "mountPath": "/file", "readOnly": True},
        {"name": "null", "mountPath": "/null"},
        # Upstream: kubelet_pods.go makeMounts, subPathExpr expanded from the container's env.
        {"name": "logs", "mountPath": "/logs", "subPathExpr": "$(POD_NAME)"},
    ]
    env = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    async with HostPathHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        manifest = harness.manifest(
            "hostpaths",
            [sh("main", script, volumeMounts=mounts, env=env)],
            volumes=volumes,
            securityContext={"fsGroup": 3456},
        )
        await harness.create(manifest)
        log = await wait_logs(harness, "hostpaths", "main", docker_client, "done")
    # The kubelet gives a hostPath to no fsGroup (host_path.go: SetUp sets no ownership).
    assert log.splitlines() == [
        f"/made/dir directory 755 {os.getegid()}",
        f"/made-file regular empty file 644 {os.getegid()}",
        f"/file regular file 644 {os.getegid()}",
        f"/null character special file 666 {os.stat('/dev/null').st_gid}",  # the host's, as it is
        "on the host",
        "done",
    ]
    assert (host / "logs" / "hostpaths" / "out").read_text() == "written\n"


async def failed_mount_message(harness: ProviderHarness, name: str, volume: dict[str, Any]) -> str:
    """Create a pod mounting `volume`; it stays Pending in ContainerCreating: its FailedMount text."""
    await create_with_volume(harness, name, "sleep 3600", volume)
    event = await harness.wait_event(name, "FailedMount")
    pod = await harness.wait_for(name, lambda p: waiting_reason(p, "main") == "ContainerCreating")
    assert (event["type"], phase(pod)) == ("Warning", "Pending")
    return str(event["message"])


async def test_a_failed_host_path_type_check_keeps_the_pod_creating_with_failed_mount(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "plain").write_text("x")
    volume = {"name": "h", "hostPath": {"path": str(tmp_path / "plain"), "type": "Directory"}}
    async with HostPathHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        message = await failed_mount_message(harness, "wrongtype", volume)
    assert message == (
        f'MountVolume.SetUp failed for volume "h" : hostPath type check failed: {tmp_path}/plain '
        "is not a directory, it's a File"
    )


@pytest.mark.parametrize(
    ("kind", "source"),
    [
        ("persistentVolumeClaim", {"claimName": "data"}),
        ("csi", {"driver": "secrets-store.csi.k8s.io", "readOnly": True}),
    ],
)
async def test_an_unsupported_volume_type_keeps_the_pod_pending_with_failed_mount(
    harness: ProviderHarness, kind: str, source: dict[str, Any]
) -> None:
    message = await failed_mount_message(harness, "unmountable", {"name": "data", kind: source})
    assert message == (
        f'MountVolume.SetUp failed for volume "data" : {kind} volumes are not supported on this node: '
        "it has no volume plugin for them"
    )


async def test_an_image_volume_is_refused_with_its_field_path(harness: ProviderHarness) -> None:
    image = {"reference": "vk-test/busybox:1", "pullPolicy": "IfNotPresent"}
    await create_with_volume(harness, "imagevol", "sleep 3600", {"name": "tools", "image": image})
    pod = await harness.wait_for("imagevol", lambda p: phase(p) == "Failed")
    assert pod["status"]["reason"] == "Forbidden"
    assert pod["status"]["message"] == (
        "spec.volumes[0].image: image volumes are not supported on this node "
        "(the Docker runtime does not mount images as volumes)"
    )
    event = await harness.wait_event("imagevol", "Failed")
    assert event["message"] == f"Error: {pod['status']['message']}"


async def test_a_pod_writing_past_its_disk_emptydir_size_limit_is_evicted(
    harness: ProviderHarness, docker_client: Any
) -> None:
    # Upstream: eviction_manager.go emptyDirLimitEviction / evictPod.
    script = "dd if=/dev/zero of=/v/fill bs=1048576 count=3 2>/dev/null; echo filled; sleep 3600"
    await create_with_volume(harness, "filler", script, {"name": "scratch", "emptyDir": {"sizeLimit": "1Mi"}})
    await wait_logs(harness, "filler", "main", docker_client, "filled")
    pod = await harness.wait_for("filler", lambda p: phase(p) == "Failed", within=60)
    message = 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". '
    assert (pod["status"]["reason"], pod["status"]["message"]) == ("Evicted", message)
    assert "terminated" in container_status(pod, "main")["state"]
    event = await harness.wait_event("filler", "Evicted")
    assert (event["type"], event["message"]) == ("Warning", message)
