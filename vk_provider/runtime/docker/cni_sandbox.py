"""CNI mode on Docker (`network.plugin: cni`): the engine's part of a sandbox's network.

What lives here: `CNISandboxes`, the glue between a Docker sandbox and the runtime-neutral CNI
invoker (runtime/cni): `setup` runs ADD on the started sandbox's network namespace
(`NetworkSettings.SandboxKey`) with the pod's hostPorts as `portMappings`, `ips` gives the
addresses of its cached result (read once from disk after a restart, when the sandbox is
adopted: CHECK then, as dockershim-era runtimes did on a restarted kubelet), `teardown` runs
DEL before the sandbox container is stopped or removed. Sandboxes created with Docker's own networks (an
earlier `docker` mode) have no cached result and are left alone.
Must not: decide the plugins' arguments (runtime/cni does) or block the event loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_common.logging import get_logger
from vk_provider.runtime.cni.invoke import CNIPluginError
from vk_provider.runtime.cni.network import CNINetwork, PodNetworkRequest
from vk_provider.runtime.configs import SandboxConfig
from vk_provider.runtime.types import RuntimeFailure

log = get_logger("runtime.docker.cni")


def port_mappings(config: SandboxConfig) -> tuple[dict[str, Any], ...]:
    """The pod's hostPorts as the portMappings capability (dockershim buildCNIRuntimeConf)."""
    return tuple(
        {
            "hostPort": p.host_port,
            "containerPort": p.container_port,
            "protocol": p.protocol.lower(),
            "hostIP": p.host_ip,
        }
        for p in config.port_mappings
    )


def netns_of(inspect: Mapping[str, Any]) -> str:
    """The running sandbox's network namespace; "" once it stopped (the path may remain as a
    plain file; the spec's DEL takes an empty CNI_NETNS and only releases what it holds)."""
    if not (inspect.get("State") or {}).get("Running"):
        return ""
    return str((inspect.get("NetworkSettings") or {}).get("SandboxKey") or "")


class CNISandboxes:
    def __init__(self, network: CNINetwork) -> None:
        self.network = network
        self._ips: dict[str, tuple[str, ...]] = {}  # sandbox id -> addresses, once known here

    async def not_ready(self) -> str | None:
        return await self.network.status()

    async def setup(self, config: SandboxConfig, inspect: Mapping[str, Any]) -> tuple[str, ...]:
        """ADD; raises RuntimeFailure (the invoker has undone what it did)."""
        sandbox_id = str(inspect.get("Id", ""))
        netns = netns_of(inspect)
        if not netns:
            raise RuntimeFailure(f"sandbox {sandbox_id[:12]} has no network namespace")
        request = PodNetworkRequest(
            namespace=config.metadata.namespace,
            name=config.metadata.name,
            uid=config.metadata.uid,
            sandbox_id=sandbox_id,
            netns=netns,
            port_mappings=port_mappings(config),
        )
        try:
            ips = await self.network.add(request)
        except CNIPluginError as exc:
            raise RuntimeFailure(
                f'failed to set up sandbox container "{sandbox_id[:12]}" network for pod '
                f'"{config.metadata.name}": {exc.message}'
            ) from exc
        self._ips[sandbox_id] = ips
        return ips

    async def ips(self, inspect: Mapping[str, Any]) -> tuple[str, ...]:
        """The running sandbox's addresses; one this process did not set up is adopted: its
        cached result read, and CHECKed."""
        sandbox_id = str(inspect.get("Id", ""))
        known = self._ips.get(sandbox_id)
        if known is not None:
            return known
        ips = await self.network.ips(sandbox_id)
        if ips:
            try:
                await self.network.check(sandbox_id, netns_of(inspect))
                log.info(
                    "adopted sandbox: CNI CHECK passed", extra={"sandboxID": sandbox_id[:12], "ips": ips}
                )
            except CNIPluginError as exc:
                log.warning(
                    "adopted sandbox: CNI CHECK failed",
                    extra={"sandboxID": sandbox_id[:12], "err": exc.message},
                )
        self._ips[sandbox_id] = ips
        return ips

    async def teardown(self, sandbox_id: str, inspect: Mapping[str, Any] | None) -> None:
        """DEL (nothing for a sandbox without a cached ADD); raises RuntimeFailure so the
        container stays, and the removal is tried again, while the plugins hold its address."""
        try:
            await self.network.delete(sandbox_id, netns_of(inspect or {}))
        except CNIPluginError as exc:
            raise RuntimeFailure(
                f'failed to tear down sandbox container "{sandbox_id[:12]}" network: {exc.message}'
            ) from exc
        self._ips.pop(sandbox_id, None)
