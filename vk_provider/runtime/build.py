"""The one place that picks a container engine: the configured runtime, behind the Runtime protocol.

What lives here: `build_runtime`, which returns the implementation of the configured engine
(`docker.engine`: Docker, or Podman's API service; chosen here and nowhere else), with the CNI invoker
of `network.plugin: cni` (runtime/cni; its result cache under `<docker.stateDir>/.cni/<node>`).
Must not: start the runtime or be imported by anything but the app's wiring.
"""

from __future__ import annotations

from pathlib import Path

from vk_provider.config import Config
from vk_provider.metrics import ProviderMetrics
from vk_provider.runtime.cni.network import CNINetwork, CNISettings
from vk_provider.runtime.docker import DockerRuntime
from vk_provider.runtime.docker.cni_sandbox import CNISandboxes
from vk_provider.runtime.podman import PodmanRuntime
from vk_provider.runtime.protocol import Runtime


def build_runtime(config: Config, metrics: ProviderMetrics | None = None) -> Runtime:
    """The node's runtime; its engine calls are counted in `metrics` (a private set when None)."""
    net = config.network
    cni = None
    if net.plugin == "cni":
        # Beside the node directories, not in one (its entries are taken for pods' directories);
        # `.cni` is no node name.
        cache_dir = str(Path(config.docker.state_dir) / ".cni" / config.node.name)
        cni = CNISandboxes(
            CNINetwork(CNISettings(net.cni_conf_dir, net.cni_bin_dir, cache_dir, net.cni_timeout))
        )
    engine = PodmanRuntime if config.docker.engine == "podman" else DockerRuntime
    return engine(config.docker, config.node.name, metrics, cni=cni)
