"""A remote engine: the provider reaches Docker over TCP, so the pods' API-backed volumes are shipped.

The engine is the local dockerd behind tests/support/docker_socket_proxy.DockerTcpProxy at
tcp://127.0.0.1:<port>: the provider takes it for a remote engine (`docker.engineLocation`
auto), writes nothing under its state directory, and ships the files of configMap, secret
and projected volumes into Docker volumes. What the container sees is read from its log and
through `docker exec`; what is left in the engine through the Docker API.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.test_pods_volumes import wait_logs
from tests.support.containers import labelled
from tests.support.docker_socket_proxy import DockerTcpProxy
from tests.support.images import BUSYBOX_IMAGE, PAUSE_IMAGE
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import REPO, EngineHarness, ProviderHarness

pytestmark = pytest.mark.docker
NODE_LABEL = "io.vk-provider.node"


@dataclasses.dataclass
class RemoteEngine:
    """The TCP engine of one test: its URL, the Docker client the test reads through, the node."""

    url: str
    docker: Any
    node_name: str

    def volumes(self) -> list[str]:
        """The node's Docker volumes now."""
        found = self.docker.volumes.list(filters={"label": f"{NODE_LABEL}={self.node_name}"})
        return sorted(v.name for v in found)

    def containers(self) -> list[Any]:
        return labelled(self.docker, f"{NODE_LABEL}={self.node_name}")


@pytest.fixture
async def engine(
    node_name: str, docker_client: Any, test_images: dict[str, str]
) -> AsyncIterator[RemoteEngine]:
    """dockerd on tcp://127.0.0.1:<port>; what a failed test left of the node is removed afterwards."""
    proxy = DockerTcpProxy()
    await proxy.start()
    remote = RemoteEngine(proxy.url, docker_client, node_name)
    yield remote
    await proxy.stop()
    for container in remote.containers():  # before their volumes
        container.remove(force=True)
    for name in remote.volumes():
        docker_client.volumes.get(name).remove(force=True)


SCRIPT = (
    "id -G; stat -L -c '%n %a %u %g' /cfg/key /sec/password /tok/token /tok/ca.crt;"
    " readlink /cfg/..data; echo $(ls -A /cfg); cat /sec/password; echo;"
    " test -s /tok/token && echo token-ok; cat /tok/namespace; echo;"
    " echo scratch > /scratch/f && cat /scratch/f;"
    " touch /cfg/new 2>/dev/null || echo read-only;"
    ' while true; do echo "key=$(cat /cfg/key)"; sleep 0.5; done'
)


def remote_pod(harness: ProviderHarness) -> dict[str, Any]:
    return harness.manifest(
        "remote",
        [
            {
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "command": ["sh", "-c", SCRIPT],
                "securityContext": {"runAsUser": 1000},
                "volumeMounts": [
                    {"name": "cfg", "mountPath": "/cfg"},
                    {"name": "sec", "mountPath": "/sec"},
                    {"name": "tok", "mountPath": "/tok"},
                    {"name": "scratch", "mountPath": "/scratch"},
                ],
            }
        ],
        securityContext={"fsGroup": 2000},
        automountServiceAccountToken=False,
        volumes=[
            {
                "name": "cfg",
                "configMap": {"name": "remote-cfg", "items": [{"key": "key", "path": "key", "mode": 0o400}]},
            },
            {"name": "sec", "secret": {"secretName": "remote-sec", "defaultMode": 0o400}},
            {
                "name": "tok",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                                ]
                            }
                        },
                    ]
                },
            },
            {"name": "scratch", "emptyDir": {}},
        ],
    )


async def test_api_backed_volumes_are_shipped_to_a_remote_engine_updated_and_removed(
    plane: Plane, node_name: str, tmp_path: Path, engine: RemoteEngine
) -> None:
    docker_client = engine.docker
    async with EngineHarness.running(
        node_name, tmp_path, resync_interval=2.0, plane=plane, engine=engine.url
    ) as harness:
        await harness.create_object("configmaps", {"metadata": {"name": "remote-cfg"}, "data": {"key": "v1"}})
        secret = {"password": base64.b64encode(b"hunter2").decode()}
        await harness.create_object("secrets", {"metadata": {"name": "remote-sec"}, "data": secret})
        await harness.create(remote_pod(harness))
        log = await wait_logs(harness, "remote", "main", docker_client, "key=v1", within=90)
        lines = log.splitlines()
        assert "2000" in lines[0].split()  # the fsGroup is a supplemental group
        # the kubelet's modes and owners: fsGroup adds group read (0400 -> 0440) and owns the
        # files; the token is 0600 owned by the pod's one runAsUser (its fsUser), plus group read
        assert lines[1:5] == [
            "/cfg/key 440 0 2000",
            "/sec/password 440 0 2000",
            "/tok/token 640 1000 2000",
            "/tok/ca.crt 644 0 2000",
        ]
        assert lines[5].startswith("..slot_a/..20")  # ..data -> the timestamped payload directory
        assert lines[6].split() == ["..data", "..slot_a", "..slot_b", "key"]
        assert lines[7:12] == ["hunter2", "token-ok", "default", "scratch", "read-only"]
        assert not (tmp_path / "state" / node_name).exists(), "nothing is written for a remote engine"
        pod = await harness.get("remote")
        assert pod is not None
        uid = pod["metadata"]["uid"]
        assert engine.volumes() == sorted(f"k8s_{uid}_{v}" for v in ("cfg", "scratch", "sec", "tok"))
        first_id = container_status(pod, "main")["containerID"]

        await harness.api.patch("/api/v1/namespaces/default/configmaps/remote-cfg", {"data": {"key": "v2"}})
        await wait_logs(harness, "remote", "main", docker_client, "key=v2", within=60)
        pod = await harness.get("remote")
        assert pod is not None and container_status(pod, "main")["containerID"] == first_id
        container = docker_client.containers.get(first_id.removeprefix("docker://"))
        seen = container.exec_run(["sh", "-c", "readlink /cfg/..data; ls -A /cfg/..slot_a /cfg/..slot_b"])
        listing = seen.output.decode().split()
        assert listing[0].startswith("..slot_b/..20")  # the other slot holds the new payload
        assert listing[1:] == [
            "/cfg/..slot_a:",
            "/cfg/..slot_b:",
            listing[0].split("/")[1],
        ]  # the old one is empty

        await harness.delete("remote")
        await harness.wait_gone("remote", within=90)
        await eventually(
            lambda: engine.volumes() == [], within=30, what=lambda: f"volumes left: {engine.volumes()}"
        )
        assert engine.containers() == []


async def test_clean_removes_the_shipped_volumes(
    plane: Plane, node_name: str, tmp_path: Path, engine: RemoteEngine
) -> None:
    harness = EngineHarness(node_name, tmp_path, plane=plane, engine=engine.url)
    await harness.start_sandbox()
    try:
        await harness.start_provider()
        await harness.create_object("configmaps", {"metadata": {"name": "left"}, "data": {"key": "v"}})
        main = {
            "name": "main",
            "image": BUSYBOX_IMAGE,
            "command": ["sleep", "3600"],
            "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}],
        }
        await harness.create(
            harness.manifest("left", [main], volumes=[{"name": "cfg", "configMap": {"name": "left"}}])
        )
        await harness.wait_for("left", lambda p: phase(p) == "Running", within=90)
        await harness.stop_provider()  # the pod's containers and volumes stay
        assert [v for v in engine.volumes() if v.endswith("_cfg")]
        config = tmp_path / "clean.yaml"
        docker = {"host": engine.url, "sandboxImage": PAUSE_IMAGE, "stateDir": str(tmp_path / "state")}
        config.write_text(yaml.safe_dump({"node": {"name": node_name}, "docker": docker}))
        command = [sys.executable, "-m", "vk_cli", "clean", "--config", str(config)]
        # in a thread: the proxy serves the engine from this test's event loop
        done = await asyncio.to_thread(
            subprocess.run, command, cwd=REPO, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert engine.volumes() == []
        assert engine.containers() == []
    finally:
        await harness.close()
