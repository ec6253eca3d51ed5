"""Shared pytest fixtures: the Docker engine, the local test images, per-test labels and clean-up.

Every container a test or a provider under test creates carries either the label
`io.vk-provider.test=<id>` (raw Docker tests) or `io.vk-provider.node=<node>` for the
unique node name a test uses; both are removed after the test, pass or fail.
"""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUSYBOX_IMAGE = "vk-test/busybox:1"
PAUSE_IMAGE = "vk-test/pause:1"
TEST_LABEL = "io.vk-provider.test"
NODE_LABEL = "io.vk-provider.node"


@pytest.fixture(scope="session")
def docker_client() -> Iterator[object]:
    import docker

    subprocess.run(["bash", str(REPO / "scripts" / "ensure-docker.sh")], check=True)
    client = docker.from_env()
    client.ping()
    yield client
    client.close()


@pytest.fixture(scope="session")
def test_images(docker_client: object) -> dict[str, str]:
    subprocess.run(["bash", str(REPO / "scripts" / "build-test-images.sh")], check=True)
    return {"busybox": BUSYBOX_IMAGE, "pause": PAUSE_IMAGE}


def _remove_labelled(client: object, label: str) -> None:
    for container in client.containers.list(all=True, filters={"label": label}):  # type: ignore[attr-defined]
        with contextlib.suppress(Exception):  # already gone
            container.remove(force=True, v=True)


@pytest.fixture
def test_labels(docker_client: object) -> Iterator[dict[str, str]]:
    """Labels for raw Docker objects a test creates; they are removed afterwards."""
    test_id = uuid.uuid4().hex[:12]
    yield {TEST_LABEL: test_id}
    _remove_labelled(docker_client, f"{TEST_LABEL}={test_id}")


@pytest.fixture
def node_name(docker_client: object) -> Iterator[str]:
    """A unique virtual node name; every container labelled with it is removed afterwards."""
    name = f"vk-test-{uuid.uuid4().hex[:8]}"
    yield name
    _remove_labelled(docker_client, f"{NODE_LABEL}={name}")
