"""Fixtures for the provider's integration tests: `harness`, the sandbox plus an in-process provider.

The provider runs for the test's unique `node_name` (its containers are removed afterwards by
the `node_name` fixture) with the default harness settings, on each control-plane tier chosen
(`plane`); a module that needs other settings defines its own `harness` fixture, which takes
precedence. `runtime` is a bare runtime of the engine under test (`--engine`) for the node,
without a provider (its pods are removed afterwards); `local_registry` (session) is a registry
with basic auth on 127.0.0.1, for pulls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.engine import engine_under_test
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.provider_harness import ProviderHarness
from tests.support.registry import LocalRegistry
from tests.support.runtime_calls import running_docker_runtime
from vk_provider.config import DockerConfig
from vk_provider.runtime.docker import DockerRuntime


@pytest.fixture
async def harness(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: EmulatorPlane | RealPlane
) -> AsyncIterator[ProviderHarness]:
    async with ProviderHarness.running(node_name, tmp_path, plane=plane) as h:
        yield h


@pytest.fixture
async def runtime(
    node_name: str, test_images: dict[str, str], tmp_path: Path
) -> AsyncIterator[DockerRuntime]:
    config = DockerConfig(
        engine=engine_under_test(),
        sandbox_image=test_images["pause"],
        max_concurrency=4,
        state_dir=str(tmp_path / "state"),
    )
    async with running_docker_runtime(config, node_name) as started:
        yield started


@pytest.fixture(scope="session")
def local_registry(
    docker_client: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalRegistry]:
    """Debian's docker-registry with htpasswd auth on 127.0.0.1 (tests/support/registry.py)."""
    registry = LocalRegistry.start(tmp_path_factory.mktemp("registry"))
    yield registry
    registry.stop()
