"""configMap, secret, downwardAPI and projected volumes on real Docker, through the sandbox API.

Each test runs the sandbox control plane and the provider in-process for a unique node
(tests/support/provider_harness.py); a container prints the mounted files and the test
reads its log, as `kubectl logs` would show it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker


async def logs_of(pod: dict[str, Any], name: str, docker_client: Any) -> str:
    container_id = container_status(pod, name)["containerID"].removeprefix("docker://")
    return str(docker_client.containers.get(container_id).logs().decode())


async def wait_logs(
    harness: ProviderHarness, pod_name: str, name: str, docker_client: Any, wanted: str, within: float = 60
) -> str:
    text = ""

    async def logged() -> str | None:
        nonlocal text
        pod = await harness.get(pod_name)
        if pod is not None and container_status(pod, name).get("containerID"):
            text = await logs_of(pod, name, docker_client)
        return text if wanted in text else None

    log: str = await eventually(
        logged, within=within, interval=0.5, what=lambda: f"{wanted!r} in {name}: {text!r}"
    )
    return log


async def test_configmap_secret_and_downward_api_volumes_are_files(
    harness: ProviderHarness, docker_client: Any
) -> None:
    await harness.create_object(
        "configmaps",
        {"metadata": {"name": "app-config"}, "data": {"app.conf": "color=blue", "other": "x"}},
    )
    await harness.create_object(
        "secrets",
        {"metadata": {"name": "app-secret"}, "data": {"password": base64.b64encode(b"hunter2").decode()}},
    )
    script = (
        "cat /etc/app/conf/settings.conf; echo; stat -L -c '%a' /etc/app/conf/settings.conf;"
        " ls /etc/app/conf;"
        " cat /etc/app/secret/password; echo; stat -L -c '%a' /etc/app/secret/password;"
        " cat /etc/podinfo/labels; echo; cat /etc/podinfo/name; echo;"
        " touch /etc/app/conf/new 2>/dev/null || echo read-only;"
        " echo done"
    )
    manifest = harness.manifest(
        "files",
        [
            {
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "command": ["sh", "-c", script],
                "volumeMounts": [
                    {"name": "conf", "mountPath": "/etc/app/conf"},
                    {"name": "secret", "mountPath": "/etc/app/secret"},
                    {"name": "podinfo", "mountPath": "/etc/podinfo"},
                ],
            }
        ],
        restartPolicy="Never",
        volumes=[
            {
                "name": "conf",
                "configMap": {
                    "name": "app-config",
                    "defaultMode": 0o600,
                    "items": [{"key": "app.conf", "path": "settings.conf", "mode": 0o640}],
                },
            },
            {"name": "secret", "secret": {"secretName": "app-secret", "defaultMode": 0o400}},
            {
                "name": "podinfo",
                "downwardAPI": {
                    "items": [
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                    ]
                },
            },
        ],
    )
    manifest["metadata"]["labels"] = {"app": "files", "tier": "back"}
    await harness.create(manifest)
    pod = await harness.wait_for("files", lambda p: phase(p) == "Succeeded")
    lines = (await logs_of(pod, "main", docker_client)).splitlines()
    assert lines == [
        "color=blue",
        "640",
        "settings.conf",
        "hunter2",
        "400",
        'app="files"',
        'tier="back"',
        "files",
        "read-only",
        "done",
    ]


async def test_missing_configmap_keeps_the_pod_creating_until_it_appears(
    harness: ProviderHarness, docker_client: Any
) -> None:
    await harness.create(
        harness.manifest(
            "waits",
            [
                {
                    "name": "main",
                    "image": BUSYBOX_IMAGE,
                    "command": ["sh", "-c", "cat /cfg/key; echo; sleep 3600"],
                    "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}],
                }
            ],
            volumes=[{"name": "cfg", "configMap": {"name": "late"}}],
        )
    )
    event = await harness.wait_event("waits", "FailedMount")
    assert event["type"] == "Warning"
    assert event["message"] == 'MountVolume.SetUp failed for volume "cfg" : configmap "late" not found'
    pod = await harness.wait_for("waits", lambda p: waiting_reason(p, "main") == "ContainerCreating")
    assert phase(pod) == "Pending"
    await harness.create_object("configmaps", {"metadata": {"name": "late"}, "data": {"key": "first"}})
    await harness.wait_for("waits", lambda p: phase(p) == "Running")
    await wait_logs(harness, "waits", "main", docker_client, "first")


async def test_configmap_volume_is_updated_in_place(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    async with ProviderHarness.running(node_name, tmp_path, resync_interval=2.0, plane=plane) as harness:
        await harness.create_object("configmaps", {"metadata": {"name": "live"}, "data": {"key": "v1"}})
        await harness.create(
            harness.manifest(
                "watcher",
                [
                    {
                        "name": "main",
                        "image": BUSYBOX_IMAGE,
                        "command": ["sh", "-c", "while true; do cat /cfg/key; echo; sleep 0.5; done"],
                        "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}],
                    }
                ],
                volumes=[{"name": "cfg", "configMap": {"name": "live"}}],
            )
        )
        await wait_logs(harness, "watcher", "main", docker_client, "v1")
        pod = await harness.get("watcher")
        assert pod is not None
        first_id = container_status(pod, "main")["containerID"]
        await harness.api.patch("/api/v1/namespaces/default/configmaps/live", {"data": {"key": "v2"}})
        # The next periodic sync writes the new content; the same container sees it.
        await wait_logs(harness, "watcher", "main", docker_client, "v2")
        pod = await harness.get("watcher")
        assert pod is not None
        assert container_status(pod, "main")["containerID"] == first_id


async def test_service_account_volume_has_token_ca_and_namespace(
    harness: ProviderHarness, docker_client: Any
) -> None:
    sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount"
    await harness.create(
        harness.manifest(
            "sa",
            [
                {
                    "name": "main",
                    "image": BUSYBOX_IMAGE,
                    "command": [
                        "sh",
                        "-c",
                        f"cat {sa_dir}/namespace; echo; cat {sa_dir}/token; echo;"
                        f" grep -c 'BEGIN CERTIFICATE' {sa_dir}/ca.crt",
                    ],
                }
            ],
            restartPolicy="Never",
        )
    )
    pod = await harness.wait_for("sa", lambda p: phase(p) == "Succeeded")
    assert any(v["name"].startswith("kube-api-access-") for v in pod["spec"]["volumes"])
    namespace, token, certs = (await logs_of(pod, "main", docker_client)).splitlines()
    assert namespace == "default"
    assert int(certs) >= 1
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert claims["kubernetes.io"]["pod"] == {"name": "sa", "uid": pod["metadata"]["uid"]}
    review = await harness.api.create(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
    )
    assert review["status"]["authenticated"] is True


EMPTYDIRS = [
    {"name": "scratch", "emptyDir": {}},
    {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
]
EMPTYDIR_MOUNTS = [{"name": "scratch", "mountPath": "/scratch"}, {"name": "mem", "mountPath": "/mem"}]


async def test_a_non_root_pod_with_an_fsgroup_writes_to_its_emptydirs(
    harness: ProviderHarness, docker_client: Any
) -> None:
    # Upstream: empty_dir.go setupDir (0777) then volume_linux.go SetVolumeOwnership: the
    # root gets group fsGroup and setgid, so what the container creates there is the group's.
    script = (
        "echo uid=$(id -u) gid=$(id -g) groups=$(id -G);"
        " stat -c 'root %n %a:%g' /scratch /mem;"
        " touch /scratch/x /mem/y && stat -c 'file %n %g' /scratch/x /mem/y;"
        " echo done; sleep 3600"
    )
    manifest = harness.manifest(
        "fsgroup",
        [sh("main", script, volumeMounts=EMPTYDIR_MOUNTS)],
        volumes=EMPTYDIRS,
        securityContext={"runAsUser": 1234, "runAsGroup": 2345, "fsGroup": 3456},
    )
    await harness.create(manifest)
    log = await wait_logs(harness, "fsgroup", "main", docker_client, "done")
    first, *lines = log.splitlines()
    uid, gid, groups = first.split(maxsplit=2)
    assert (uid, gid) == ("uid=1234", "gid=2345")
    assert "3456" in groups.removeprefix("groups=").split()
    assert lines == [
        "root /scratch 2777:3456",
        "root /mem 2777:3456",
        "file /scratch/x 3456",
        "file /mem/y 3456",
        "done",
    ]


async def test_a_root_pod_gets_0777_emptydirs_that_start_empty_and_last_as_long_as_the_pod(
    harness: ProviderHarness, docker_client: Any
) -> None:
    # /usr of the image is 0755 and not empty: an emptyDir mounted there is empty and 0777 all
    # the same. What the init container leaves in the Memory one is still there for the app
    # container, and the first run of the app changes the mode of /scratch and fails: the
    # restarted container finds both volumes as they were left (the kubelet sets an emptyDir
    # up once per pod, and a tmpfs lives as long as the pod).
    script = (
        "stat -c 'root %n %a:%g' /scratch /mem /usr; ls -A /usr | wc -l; cat /mem/init;"
        " if [ -e /scratch/ran ]; then ls /mem; echo done; sleep 3600; fi;"
        " touch /scratch/ran /mem/ran; chmod 750 /scratch; exit 1"
    )
    mounts = [*EMPTYDIR_MOUNTS, {"name": "usr", "mountPath": "/usr"}]
    manifest = harness.manifest(
        "rootdirs",
        [sh("main", script, volumeMounts=mounts)],
        volumes=[*EMPTYDIRS, {"name": "usr", "emptyDir": {}}],
        initContainers=[sh("init", "echo from-init > /mem/init", volumeMounts=EMPTYDIR_MOUNTS)],
    )
    await harness.create(manifest)
    log = await wait_logs(harness, "rootdirs", "main", docker_client, "done", within=90)
    assert log.splitlines() == [
        "root /scratch 750:0",
        "root /mem 777:0",
        "root /usr 777:0",
        "0",
        "from-init",
        "init",
        "ran",
        "done",
    ]
