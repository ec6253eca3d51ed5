"""`vk-provider clean` (vk_provider.app.clean_node): what a stopped node's pods left in the engine goes.

The sandbox's `--clean` runs it for each node; an operator runs it after uninstalling a node.
It goes through the provider's runtime, so containers, the pods' Docker volumes and their files go,
also those of a pod whose containers are already gone (a removal cut short).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.containers import labelled
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import phase
from tests.support.provider_harness import REPO, ProviderHarness

pytestmark = pytest.mark.docker
NODE_LABEL = "io.vk-provider.node"
POD_UID_LABEL = "io.vk-provider.pod.uid"


def clean(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vk_cli", "clean", "--config", str(config), *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_clean_removes_every_pod_of_the_stopped_node_and_nothing_else(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    async with ProviderHarness.sandbox_only(node_name, tmp_path, plane=plane) as harness:
        harness.start_provider_process()
        volume = [{"name": "scratch", "emptyDir": {}}]
        main = sh("main", "sleep 3600", volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}])
        for name in ("one", "two"):
            await harness.create(harness.manifest(name, [main], volumes=volume))
        for name in ("one", "two"):
            await harness.wait_for(name, lambda p: phase(p) == "Running", within=90)
        harness.kill_provider_process()
        assert labelled(docker_client, f"{NODE_LABEL}={node_name}"), "the pods' containers outlive kill -9"

        other = clean(harness.workdir / "provider.yaml", "--node-name", f"{node_name}-other")
        assert other.returncode == 0, other.stderr
        assert labelled(docker_client, f"{NODE_LABEL}={node_name}"), "another node's clean leaves them"

        done = clean(harness.workdir / "provider.yaml")
        assert done.returncode == 0, done.stderr
        assert f'"removed the pods of the node from the engine" logger="app" node="{node_name}" count=2' in (
            done.stdout + done.stderr
        )
        assert labelled(docker_client, f"{NODE_LABEL}={node_name}") == []
        volumes = docker_client.volumes.list(filters={"label": f"{NODE_LABEL}={node_name}"})
        assert volumes == [], [v.name for v in volumes]


def test_clean_removes_the_volumes_and_files_of_pods_without_containers(
    tmp_path: Path, docker_client: Any, node_name: str
) -> None:
    """A removal cut short (the provider stopped in a pod's cleanup, after its containers went)
    leaves only the pod's Docker volume or its files: clean still finds those pods."""
    with_volume, with_files = str(uuid.uuid4()), str(uuid.uuid4())
    labels = {NODE_LABEL: node_name, POD_UID_LABEL: with_volume}
    docker_client.volumes.create(name=f"k8s_{with_volume}_scratch", labels=labels)
    try:
        state = tmp_path / "state"
        files = state / node_name / with_files / "volumes" / "config"
        files.mkdir(parents=True)
        (files / "key").write_text("value")
        config = tmp_path / "provider.yaml"
        config.write_text(yaml.safe_dump({"node": {"name": node_name}, "docker": {"stateDir": str(state)}}))

        done = clean(config)
        assert done.returncode == 0, done.stderr
        assert f'"removed the pods of the node from the engine" logger="app" node="{node_name}" count=2' in (
            done.stdout + done.stderr
        )
        assert docker_client.volumes.list(filters={"label": f"{NODE_LABEL}={node_name}"}) == []
        assert not (state / node_name).exists(), "the pods' files and the node's directory are gone"
    finally:
        for volume in docker_client.volumes.list(filters={"label": f"{NODE_LABEL}={node_name}"}):
            volume.remove(force=True)


def test_a_pod_the_engine_refuses_to_remove_is_logged_and_the_others_still_go(
    tmp_path: Path, docker_client: Any, node_name: str, test_images: dict[str, str]
) -> None:
    """One pod's removal failing in the engine (here its volume is in use by a container that is
    not the node's: 409) must not stop the clean: the error is one line naming the pod, the other
    pods go, and the exit status says not everything could be removed."""
    stuck, free = "0" + str(uuid.uuid4())[1:], "f" + str(uuid.uuid4())[1:]  # stuck is removed first
    for uid in (stuck, free):
        labels = {NODE_LABEL: node_name, POD_UID_LABEL: uid}
        docker_client.volumes.create(name=f"k8s_{uid}_scratch", labels=labels)
    holder = docker_client.containers.run(
        test_images["busybox"],
        ["sleep", "3600"],
        detach=True,
        labels={"io.vk-provider.test": node_name},
        volumes={f"k8s_{stuck}_scratch": {"bind": "/scratch", "mode": "rw"}},
    )
    try:
        config = tmp_path / "provider.yaml"
        config.write_text(yaml.safe_dump({"node": {"name": node_name}}))
        done = clean(config)
        output = done.stdout + done.stderr
        assert done.returncode == 1, output
        assert '"could not remove a pod"' in output and f'pod="uid {stuck}"' in output
        assert "Traceback" not in output
        left = docker_client.volumes.list(filters={"label": f"{NODE_LABEL}={node_name}"})
        assert [v.name for v in left] == [f"k8s_{stuck}_scratch"], "the other pod's volume is gone"
    finally:
        holder.remove(force=True)
        for volume in docker_client.volumes.list(filters={"label": f"{NODE_LABEL}={node_name}"}):
            volume.remove(force=True)


def test_clean_with_a_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("node:\n  name: UPPER_case\n")
    result = clean(config)
    assert result.returncode == 2
    assert "node.name" in result.stderr
    assert "Traceback" not in result.stderr
