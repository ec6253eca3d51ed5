"""Static pods through the provider: a manifest file runs as containers and shows up as a mirror pod."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.images import BUSYBOX_IMAGE
from tests.support.manifests import static_pod_dir
from tests.support.planes import Plane
from tests.support.pod_status import container_status
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker


async def test_static_pod_runs_is_mirrored_and_goes_away_with_its_file(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    containers = [{"name": "main", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}]
    static_dir = static_pod_dir(tmp_path, "web", containers, terminationGracePeriodSeconds=2)
    mirror_name = f"web-{node_name.lower()}"
    async with ProviderHarness.running(node_name, tmp_path, static_dir=static_dir, plane=plane) as harness:
        mirror = await harness.wait_for(
            mirror_name,
            lambda p: (
                (p.get("status") or {}).get("phase") == "Running"
                and container_status(p, "main").get("ready") is True
            ),
        )
        assert "kubernetes.io/config.mirror" in mirror["metadata"]["annotations"]
        label = f"io.vk-provider.pod.name={mirror_name}"
        # One sandbox and one app container: the mirror pod itself is never run.
        assert len(labelled(docker_client, label, all=False)) == 2
        (static_dir / "web.yaml").unlink()
        await harness.wait_gone(mirror_name, within=60)
        await eventually(
            lambda: not labelled(docker_client, label), within=60, interval=0.5, what="the containers removed"
        )
        assert not labelled(docker_client, label)
