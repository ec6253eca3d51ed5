"""The vk-provider image (Dockerfile, built offline by scripts/build-image.sh, `make image`).

The image runs `vk-provider` as the non-root user 10001, and reaches the host's Docker engine
through the mounted socket only with the socket's group added (`docker run --group-add`, in
Kubernetes `securityContext.supplementalGroups`). The build is cached by a hash of its inputs:
after `make image` the fixture below costs a second; cold it builds (a few minutes).
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.images import PAUSE_IMAGE

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]
SOCKET = "/var/run/docker.sock"
LABEL = "io.vk-provider."


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def test_image_runs_the_command_as_a_non_root_user(provider_image: str) -> None:
    version = docker("run", "--rm", provider_image, "version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("vk-provider "), version.stdout

    user = docker("image", "inspect", "-f", "{{ .Config.User }}", provider_image)
    assert user.stdout.strip() == "10001:10001"
    ids = docker("run", "--rm", "--entrypoint", "id", provider_image)
    assert ids.returncode == 0, ids.stderr
    assert ids.stdout.startswith("uid=10001(vk-provider) gid=10001(vk-provider)"), ids.stdout
    # Nothing to build or fetch with at run time.
    pip = docker("run", "--rm", "--entrypoint", "python3", provider_image, "-c", "import pip")
    assert pip.returncode != 0, "pip is left in the image"


def test_image_reaches_the_engine_through_the_sockets_group_only(
    provider_image: str, node_name: str, tmp_path: Path, docker_client: Any
) -> None:
    """`vk-provider clean` in the image lists the node's containers on the host's engine and
    removes them: the whole path from the image to the engine, as the chart mounts it."""
    uid = str(uuid.uuid4())
    leftover = docker_client.containers.run(
        PAUSE_IMAGE,
        detach=True,
        name=f"k8s_POD_left_default_{uid}_0",
        labels={
            LABEL + "node": node_name,
            LABEL + "pod.uid": uid,
            LABEL + "pod.name": "left",
            LABEL + "pod.namespace": "default",
            LABEL + "container.name": "POD",
            LABEL + "container.attempt": "0",
            LABEL + "role": "sandbox",
        },
    )
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "config.yaml").write_text(
        f"node:\n  name: {node_name}\ndocker:\n  stateDir: /tmp/vk-provider-state\n"
    )
    # The image's user is not the owner of pytest's tmp_path (0700).
    config_dir.chmod(0o755)
    (config_dir / "config.yaml").chmod(0o644)
    run = [
        "run",
        "--rm",
        "-v",
        f"{SOCKET}:{SOCKET}",
        "-v",
        f"{config_dir}:/etc/vk-provider:ro",
    ]
    clean = [provider_image, "clean", "--config", "/etc/vk-provider/config.yaml"]

    if not os.stat(SOCKET).st_mode & 0o006:  # a socket open to all lets anyone in
        denied = docker(*run, *clean)
        assert denied.returncode == 1, denied.stderr
        assert "Permission denied" in denied.stderr, denied.stderr
        leftover.reload()
        assert leftover.status == "running", "without the socket's group the engine is out of reach"

    gid = str(os.stat(SOCKET).st_gid)
    allowed = docker(*run, "--group-add", gid, *clean)
    assert allowed.returncode == 0, allowed.stderr
    assert f'"removed the pods of the node from the engine" logger="app" node="{node_name}" count=1' in (
        allowed.stderr
    ), allowed.stderr
    assert not docker_client.containers.list(all=True, filters={"label": f"{LABEL}node={node_name}"})
