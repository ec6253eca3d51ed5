"""A runtime driven the way the pod workers drive it: admit and compile the pod, then the engine verbs.

What lives here: `ensure_sandbox(runtime, pod, ...)` and `start_container(runtime, launch, ...)`,
for tests that call a Runtime directly: the pod is admitted and compiled into its configurations
(`pods/runtime_configs.py`, the same calls the workers make) with the runtime's own Docker
settings when it has them (`DockerRuntime.config`), then handed to the runtime.
`engine_runtime(config, node)` is a runtime of the engine under test (`--engine`: Docker or
Podman), `engine_socket()` that engine's socket path, and `running_docker_runtime(config, node)`
a started runtime of it that, when the block ends, removes every pod it still has and closes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from bench.docker_engine import DOCKER_SOCKET
from tests.support.engine import PODMAN_SOCKET, engine_under_test
from vk_provider.config import DockerConfig
from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.kuberuntime.dns import DEFAULT_CLUSTER_DOMAIN
from vk_provider.kuberuntime.sandbox_config import sandbox_config
from vk_provider.pods.runtime_configs import admit_sandbox, container_config_for
from vk_provider.runtime.configs import ResolvConf
from vk_provider.runtime.docker import DockerRuntime
from vk_provider.runtime.docker.engine import EngineErrors
from vk_provider.runtime.podman import PodmanRuntime
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerInstance, PodSandboxState

CLUSTER_DOMAIN = DEFAULT_CLUSTER_DOMAIN


def _docker(runtime: Any) -> DockerConfig:
    config = getattr(runtime, "config", None)
    return config if isinstance(config, DockerConfig) else DockerConfig()


async def ensure_sandbox(
    runtime: Runtime,
    pod: Mapping[str, Any],
    dns: ResolvConf | None = None,
    pod_cidrs: Sequence[str] = (),
    cluster_domain: str = CLUSTER_DOMAIN,
) -> PodSandboxState:
    admit_sandbox(runtime, _docker(runtime), pod)
    return await runtime.ensure_sandbox(sandbox_config(pod, dns, pod_cidrs, cluster_domain))


async def start_container(
    runtime: Runtime, launch: ContainerLaunch, cluster_domain: str = CLUSTER_DOMAIN
) -> ContainerInstance:
    config = await container_config_for(runtime, _docker(runtime), launch, cluster_domain)
    return await runtime.start_container(config)


def engine_runtime(config: DockerConfig, node_name: str) -> DockerRuntime:
    """A runtime of the engine under test (`--engine`, tests/support/engine.py) with `config`."""
    if engine_under_test() == "podman":
        return PodmanRuntime(dataclasses.replace(config, engine="podman"), node_name)
    return DockerRuntime(config, node_name)


def engine_socket() -> str:
    """The path of the socket of the engine under test (for a proxy in front of it)."""
    return PODMAN_SOCKET.removeprefix("unix://") if engine_under_test() == "podman" else DOCKER_SOCKET


@asynccontextmanager
async def running_docker_runtime(config: DockerConfig, node_name: str) -> AsyncIterator[DockerRuntime]:
    """A started runtime of the engine under test for `node_name`; its pods are removed and it
    is closed afterwards."""
    runtime = engine_runtime(config, node_name)
    await runtime.start()
    yield runtime
    for uid in await _listed_pods(runtime):
        await runtime.remove_pod(uid)
    await runtime.close()


async def _listed_pods(runtime: DockerRuntime, attempts: int = 5) -> list[str]:
    """The runtime's pods, the list asked again after an engine error: Podman's container list
    can fail while a container's process exits (a 500, `read /proc/<pid>/cgroup: no such
    process`; seen once in CI, at a test's teardown)."""
    for _ in range(attempts - 1):
        try:
            return list(await runtime.list_pods())
        except EngineErrors:
            await asyncio.sleep(0.5)
    return list(await runtime.list_pods())  # the last try's error is the test's
