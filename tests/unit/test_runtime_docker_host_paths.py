"""DockerRuntime.setup_host_paths without an engine: what the checks make and answer on this host,
what a remote engine answers, and that a pod the node refuses gets nothing made for it (the pod
workers ask for the hostPaths `pods/runtime_configs.allowed_host_paths` gives)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import manifests
from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.pods.runtime_configs import allowed_host_paths
from vk_provider.runtime.docker.runtime import DockerRuntime


def pod(path: Path, path_type: str, **spec: Any) -> dict[str, Any]:
    volume = {"name": "h", "hostPath": {"path": str(path), "type": path_type}}
    return manifests.pod("p", [], namespace=None, uid="u1", volumes=[volume], **spec)


def runtime(host: str, tmp_path: Path, *, host_path: bool = True) -> DockerRuntime:
    allow = DockerAllow(host_path=host_path)
    return DockerRuntime(DockerConfig(host=host, state_dir=str(tmp_path / "state"), allow=allow), "n1")


async def set_up(rt: DockerRuntime, pod: dict[str, Any]) -> dict[str, str]:
    """As the pod workers ask: the hostPaths of a pod the allowances admit."""
    return await rt.setup_host_paths(allowed_host_paths(pod, rt.config.allow))


async def test_a_local_engine_checks_and_creates_on_this_host(tmp_path: Path) -> None:
    local = runtime("unix:///nonexistent/docker.sock", tmp_path)
    assert await set_up(local, pod(tmp_path / "made", "DirectoryOrCreate")) == {}
    assert (tmp_path / "made").is_dir()
    assert await set_up(local, pod(tmp_path / "made", "File")) == {
        "h": f"hostPath type check failed: {tmp_path}/made is not a file, it's a Directory"
    }


async def test_a_remote_engines_typed_host_path_cannot_be_checked(tmp_path: Path) -> None:
    remote = runtime("tcp://127.0.0.1:9", tmp_path)
    assert await set_up(remote, pod(tmp_path / "x", "")) == {}
    assert await set_up(remote, pod(tmp_path / "x", "DirectoryOrCreate")) == {
        "h": f"hostPath type check failed: {tmp_path}/x is on the engine's host, which is not this one "
        "(tcp://127.0.0.1:9): type DirectoryOrCreate cannot be checked"
    }
    assert not (tmp_path / "x").exists()


async def test_nothing_is_made_for_a_pod_the_node_refuses(tmp_path: Path) -> None:
    not_allowed = runtime("unix:///nonexistent/docker.sock", tmp_path, host_path=False)
    assert await set_up(not_allowed, pod(tmp_path / "a", "DirectoryOrCreate")) == {}
    allowed = runtime("unix:///nonexistent/docker.sock", tmp_path)
    assert await set_up(allowed, pod(tmp_path / "b", "DirectoryOrCreate", hostNetwork=True)) == {}
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
