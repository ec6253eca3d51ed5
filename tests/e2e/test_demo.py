"""The README's main command works: `make demo` (scripts/demo.sh) tours the sandbox and exits cleanly.

Run with DEMO_EXIT=1 so the demo stops after the tour instead of waiting for Ctrl-C, with
KUBECTL set to the tests' pinned kubectl, on each control-plane tier (DEMO_CONTROL_PLANE).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.kubectl import KUBECTL
from vk_common.ports import free_port

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.docker, pytest.mark.kubectl]


def test_demo_runs_the_example_pod_and_the_static_pod(
    tmp_path: Path, test_images: dict[str, str], docker_client: Any, control_plane: str
) -> None:
    env = {
        **os.environ,
        "DEMO_CONTROL_PLANE": control_plane,
        "DEMO_EXIT": "1",
        "DEMO_PORT": str(free_port()),
        "DEMO_STATE_DIR": str(tmp_path / "state"),
        "VK_PROVIDER": str(Path(sys.executable).parent / "vk-provider"),
        "KUBECTL": str(KUBECTL),
    }
    result = subprocess.run(
        ["bash", "scripts/demo.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=400
    )
    log = (tmp_path / "state" / "sandbox.log").read_text(errors="replace")
    assert result.returncode == 0, result.stdout + result.stderr + log
    out = result.stdout
    assert "node/sandbox-1 condition met" in out
    assert "docker://" in out  # kubectl get nodes -o wide: the container runtime column
    assert "pod/hello condition met" in out
    assert "hello from vk-test/busybox" in out  # served from the pod IP
    # kubectl logs, with the pod IP the logger got through the downward API.
    assert re.search(r"hello \d+ from \d+\.\d+\.\d+\.\d+", out), out
    assert "hostname: hello" in out  # kubectl exec
    assert "kubernetes.io/config.mirror" in out  # the static pod's mirror
    assert "Started container logger" in out  # kubelet events
    assert 'pod "hello" deleted' in out
    # --clean: the demo node's containers are gone once the sandbox stopped.
    left = labelled(docker_client, "io.vk-provider.node=sandbox-1")
    assert not left, [c.name for c in left]
