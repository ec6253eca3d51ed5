"""The node's pod network on a Docker engine: pods get their addresses from the Node's podCIDR.

What lives here: `pod_network_name` (`vk-pods-<node>`), `PodNetwork.ensure`, which finds or
creates the engine's bridge network of this node whose subnet is the Node's IPv4 pod CIDR
(runtime/pod_cidrs.py), so a restarted provider reuses it and its pods keep their
addresses. A network of that name with another subnet is replaced only while no container
is attached to it; otherwise, or when the engine refuses the subnet (a range another network
holds), the sandbox is not created (`RuntimeFailure`: FailedCreatePodSandBox, retried).
Without an IPv4 pod CIDR the sandbox joins `docker.network` as before. `PodNetwork.remove`
takes the network away once no container is attached (`vk-provider clean`).
Must not: remove a network with containers, or one without this node's label; block the
event loop (the engine's calls go through its pool).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from docker.errors import APIError, NotFound
from docker.types import IPAMConfig, IPAMPool
from vk_common.logging import get_logger
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.engine import Engine
from vk_provider.runtime.docker.pull import engine_message
from vk_provider.runtime.pod_cidrs import ipv4_cidr
from vk_provider.runtime.types import RuntimeFailure

log = get_logger("runtime.docker.network")

POD_CIDR_LABEL = lb.PREFIX + "pod-cidr"


def pod_network_name(node_name: str) -> str:
    return f"vk-pods-{node_name}"


def _subnets(network: dict[str, Any]) -> list[str]:
    return [str(c.get("Subnet", "")) for c in (network.get("IPAM") or {}).get("Config") or []]


class PodNetwork:
    """The node's pod network on one engine; `ensure` is serialized so concurrent sandboxes
    create it once."""

    def __init__(self, engine: Engine, node_name: str, fallback: str) -> None:
        self._engine = engine
        self._node_name = node_name
        self._fallback = fallback
        self._lock = asyncio.Lock()

    async def ensure(self, pod_cidrs: Sequence[str]) -> str:
        """The network a new sandbox joins: the node's pod network when the Node has an IPv4
        pod CIDR (made or fixed first), else `docker.network`."""
        subnet = ipv4_cidr(pod_cidrs)
        if subnet is None:
            return self._fallback
        name = pod_network_name(self._node_name)
        async with self._lock:
            try:
                await self._engine.call(self._ensure, name, subnet)
            except APIError as exc:
                raise RuntimeFailure(
                    f'cannot create the pod network "{name}" for podCIDR {subnet}: {engine_message(exc)}'
                ) from exc
        return name

    def _ensure(self, name: str, subnet: str) -> None:
        api = self._engine.client.api
        try:
            found: dict[str, Any] | None = api.inspect_network(name)
        except NotFound:
            found = None
        if found is not None:
            subnets = _subnets(found)
            if subnet in subnets:
                return
            if (found.get("Labels") or {}).get(lb.NODE) != self._node_name:
                raise RuntimeFailure(f'network "{name}" exists and is not this node\'s (no {lb.NODE} label)')
            attached = len(found.get("Containers") or {})
            if attached:
                raise RuntimeFailure(
                    f'pod network "{name}" has subnet {", ".join(subnets)} but the Node\'s podCIDR is '
                    f"{subnet}; {attached} container(s) still use it"
                )
            log.info("replacing pod network", extra={"network": name, "subnets": subnets, "podCIDR": subnet})
            api.remove_network(found["Id"])
        api.create_network(
            name,
            driver="bridge",
            ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=subnet)]),
            labels={lb.NODE: self._node_name, POD_CIDR_LABEL: subnet},
            check_duplicate=True,
        )
        log.info("created pod network", extra={"network": name, "subnet": subnet})

    async def remove(self) -> str | None:
        """Remove the node's pod network if it exists, carries this node's label and no container
        is attached to it; its name when it was removed (`vk-provider clean`, after the pods)."""
        async with self._lock:
            try:
                removed: str | None = await self._engine.call(self._remove, pod_network_name(self._node_name))
            except APIError as exc:
                raise RuntimeFailure(f"cannot remove the pod network: {engine_message(exc)}") from exc
        return removed

    def _remove(self, name: str) -> str | None:
        api = self._engine.client.api
        try:
            found: dict[str, Any] = api.inspect_network(name)
        except NotFound:
            return None
        if (found.get("Labels") or {}).get(lb.NODE) != self._node_name or found.get("Containers"):
            return None
        api.remove_network(found["Id"])
        return name
