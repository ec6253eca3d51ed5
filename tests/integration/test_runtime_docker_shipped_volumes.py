"""DockerRuntime.ship_volume on real Docker: what a container mounting the shipped volume sees.

The runtime is told the engine is remote (`docker.engineLocation: remote`), so it writes
nothing under its state directory; a busybox container mounts the volume as the runtime mounts
it for a pod (read-only) and prints what it finds.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.images import BUSYBOX_IMAGE
from vk_provider.config import DockerConfig
from vk_provider.runtime.docker import DockerRuntime
from vk_provider.runtime.types import RuntimeFailure, VolumeFile

pytestmark = pytest.mark.docker


def remote_runtime(node_name: str, pause: str, state: Path) -> DockerRuntime:
    config = DockerConfig(
        sandbox_image=pause, max_concurrency=2, state_dir=str(state), engine_location="remote"
    )
    return DockerRuntime(config, node_name)


@pytest.fixture
async def runtime(
    node_name: str, test_images: dict[str, str], tmp_path: Path
) -> AsyncIterator[DockerRuntime]:
    rt = remote_runtime(node_name, test_images["pause"], tmp_path)
    await rt.start()
    yield rt
    await rt.close()


def seen(docker_client: Any, volume: str, script: str) -> str:
    out: bytes = docker_client.containers.run(
        BUSYBOX_IMAGE, ["sh", "-c", script], volumes=[f"{volume}:/v:ro"], remove=True
    )
    return out.decode()


async def test_shipped_files_update_in_place_survive_a_restart_and_go_with_the_pod(
    runtime: DockerRuntime, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    uid = str(uuid.uuid4())
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": uid}, "spec": {}}
    volume = f"k8s_{uid}_cfg"
    files = [VolumeFile("a", b"one", 0o640, gid=3000), VolumeFile("dir/b", b"two", 0o400, uid=1000)]
    assert await runtime.ship_volume(pod, "cfg", files, 3000)
    assert not (tmp_path / node_name).exists()
    script = (
        "cat /v/a /v/dir/b; echo; stat -c '%a %u %g' /v /v/..data/ /v/..data/a /v/..data/dir/b;"
        " echo $(ls -A /v)"
    )
    assert seen(docker_client, volume, script).splitlines() == [
        "onetwo",
        "2755 0 3000",
        "2755 0 3000",
        "640 0 3000",
        "400 1000 0",
        "..data ..slot_a ..slot_b a dir",
    ]
    assert not await runtime.ship_volume(pod, "cfg", files, 3000)  # unchanged: not shipped again

    restarted = remote_runtime(node_name, test_images["pause"], tmp_path)
    await restarted.start()
    try:
        # a new process reads the volume back: the same files are not shipped again
        assert not await restarted.ship_volume(pod, "cfg", files, 3000)
        assert await restarted.ship_volume(pod, "cfg", [VolumeFile("a", b"new", 0o644)], None)
        after = "cat /v/a; echo; readlink /v/..data; echo $(ls -A /v/..slot_a); cat /v/dir/b || echo gone"
        lines = seen(docker_client, volume, after).splitlines()
        assert lines[0] == "new"
        assert lines[1].startswith("..slot_b/..20")
        assert lines[2:] == ["", "gone"]  # the old payload is emptied; `dir` dangles
        assert [c.name for c in docker_client.containers.list(all=True, filters={"volume": volume})] == []
        await restarted.remove_pod(uid)
        assert docker_client.volumes.list(filters={"name": volume}) == []
    finally:
        await restarted.close()


async def test_a_helper_image_that_cannot_be_pulled_fails_the_volume_with_the_engine_error(
    node_name: str, test_images: dict[str, str], tmp_path: Path
) -> None:
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": str(uuid.uuid4())}, "spec": {}}
    rt = remote_runtime(node_name, "vk-test/absent-helper:1", tmp_path)
    await rt.start()
    try:
        with pytest.raises(RuntimeFailure) as info:
            await rt.ship_volume(pod, "cfg", [VolumeFile("a", b"1", 0o644)], None)
        message = info.value.message
        assert message.startswith("cannot ship the volume's files to the engine: "), message
        assert "vk-test/absent-helper:1" in message, message
    finally:
        await rt.remove_pod(str(pod["metadata"]["uid"]))  # nothing of it may be left
        await rt.close()
