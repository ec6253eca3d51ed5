"""One pod's walk through the provider, from the watch to Docker and back to the status PATCH.

An architecture check (issue 26): the call stacks a real pod takes on a real engine, recorded at
the four points where it changes hands: the watch event reaching the pod workers, the worker's
call that starts its app container in Docker, the generated status reaching the status manager,
and the manager's status PATCH. A hop is one call from one module of the project into another
on those stacks; the walk is their sum (the status stack counted from where it leaves the
worker's path to Docker). The test prints the walk and holds it to at most 8 hops.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.manifests import sh
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.pod_status import phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from vk_provider.kube.client import KubeClient
from vk_provider.pods.workers import PodWorkers
from vk_provider.runtime.docker.engine import Engine
from vk_provider.status.manager import StatusManager

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("vk_common", "vk_provider")
MAX_HOPS = 8


def project_modules(callee: str) -> list[str]:
    """The project's modules on the current stack, outermost first, consecutive frames of one
    module as one, ending with `callee` (the module of the function being entered)."""
    modules: list[str] = []
    for frame in traceback.extract_stack():
        path = Path(frame.filename)
        if not path.is_relative_to(REPO) or path.relative_to(REPO).parts[0] not in PACKAGES:
            continue
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        if not modules or modules[-1] != name:
            modules.append(name)
    return modules if modules and modules[-1] == callee else [*modules, callee]


class Walk:
    """The stacks recorded at the four hand-offs (the first time each is seen for the pod)."""

    def __init__(self) -> None:
        self.stacks: dict[str, list[str]] = {}

    def record(self, point: str, callee: str) -> None:
        self.stacks.setdefault(point, project_modules(callee))

    def hops(self) -> dict[str, int]:
        docker, status = self.stacks["docker"], self.stacks["status"]
        shared = next(
            (i for i, (a, b) in enumerate(zip(docker, status, strict=False)) if a != b), len(status)
        )
        return {
            "watch": len(self.stacks["watch"]) - 1,
            "docker": len(docker) - 1,
            "status": len(status) - shared,
            "patch": len(self.stacks["patch"]) - 1,
        }


def wrap(monkeypatch: pytest.MonkeyPatch, cls: type, name: str, seen: Callable[..., None]) -> None:
    original = getattr(cls, name)

    if not inspect.iscoroutinefunction(original):

        def plain(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen(*args, **kwargs)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, plain)
        return

    async def coroutine(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen(*args, **kwargs)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, coroutine)


@pytest.fixture
def walk(monkeypatch: pytest.MonkeyPatch) -> Walk:
    """Recorders on the four hand-offs, in place before the provider starts."""
    walk = Walk()

    def engine_request(operation: str, *args: Any, params: Any = None, **kwargs: Any) -> None:
        if operation == "create_container" and str((params or {}).get("name", "")).startswith("k8s_app_"):
            walk.record("docker", Engine.__module__)

    def status_patch(path: str, *args: Any) -> None:
        if "/pods/walk/status" in path:
            walk.record("patch", KubeClient.__module__)

    wrap(monkeypatch, Engine, "request", engine_request)
    wrap(monkeypatch, PodWorkers, "update", lambda *a, **k: walk.record("watch", PodWorkers.__module__))
    wrap(
        monkeypatch,
        StatusManager,
        "set_pod_status",
        lambda *a: walk.record("status", StatusManager.__module__),
    )
    wrap(monkeypatch, KubeClient, "patch", status_patch)
    return walk


@pytest.fixture
async def harness(
    walk: Walk, node_name: str, test_images: dict[str, str], tmp_path: Path, plane: EmulatorPlane | RealPlane
) -> AsyncIterator[ProviderHarness]:
    async with ProviderHarness.running(node_name, tmp_path, plane=plane) as h:
        yield h


async def test_one_pods_walk_from_the_watch_to_docker_and_to_its_status_patch(
    harness: ProviderHarness, walk: Walk
) -> None:
    await harness.create(harness.manifest("walk", [sh("app", "sleep 300")]))
    await harness.wait_for("walk", lambda p: phase(p) == "Running", within=90)
    await eventually(lambda: len(walk.stacks) == 4, within=30, what="the four hand-offs recorded")
    hops = walk.hops()
    for point, modules in walk.stacks.items():
        print(f"{point:7} {hops[point]} hop(s): {' -> '.join(modules)}")
    print(f"walk: {sum(hops.values())} hops")
    assert sum(hops.values()) <= MAX_HOPS, walk.stacks
