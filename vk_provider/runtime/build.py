"""The one place that picks a container engine: the configured runtime, behind the Runtime protocol.

What lives here: `build_runtime`, which returns the Docker implementation for the node's
configuration (a second engine would be chosen here, and nowhere else).
Must not: start the runtime or be imported by anything but the app's wiring.
"""

from __future__ import annotations

from vk_provider.config import Config
from vk_provider.metrics import ProviderMetrics
from vk_provider.runtime.docker import DockerRuntime
from vk_provider.runtime.protocol import Runtime


def build_runtime(config: Config, metrics: ProviderMetrics | None = None) -> Runtime:
    """The node's runtime; its engine calls are counted in `metrics` (a private set when None)."""
    return DockerRuntime(config.docker, config.node.name, metrics, cluster_domain=config.pods.cluster_domain)
