"""`vk-provider clean` (vk_provider.app.clean_node): what a stopped node's pods left in the engine goes.

The sandbox's `--clean` runs it for each node; an operator runs it after uninstalling a node.
It goes through the provider's runtime, so containers, the pods' Docker volumes and their files go.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import phase
from tests.support.provider_harness import REPO, ProviderHarness

pytestmark = pytest.mark.docker
NODE_LABEL = "io.vk-provider.node"


def clean(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vk_provider", "clean", "--config", str(config), *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_clean_removes_every_pod_of_the_stopped_node_and_nothing_else(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    harness = ProviderHarness(node_name, tmp_path, plane=plane)
    await harness.start_sandbox()
    try:
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
        assert f"removed 2 pod(s) of node {node_name}" in done.stdout + done.stderr
        assert labelled(docker_client, f"{NODE_LABEL}={node_name}") == []
        volumes = docker_client.volumes.list(filters={"label": f"{NODE_LABEL}={node_name}"})
        assert volumes == [], [v.name for v in volumes]
    finally:
        await harness.close()


def test_clean_with_a_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("node:\n  name: UPPER_case\n")
    result = clean(config)
    assert result.returncode == 2
    assert "node.name" in result.stderr
    assert "Traceback" not in result.stderr
