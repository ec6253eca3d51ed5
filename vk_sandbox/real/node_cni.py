"""The CNI configuration of the real-plane sandbox's nodes (`--cluster-network --pod-network cni`).

What lives here: `network_settings(state_dir, node)`, the `network` section a node's provider
gets (`plugin: cni`, a conf dir of the node's own under the state directory, Debian's plugins
in `/usr/lib/cni`), and `NodeCNIConfigs`, which does what a cluster's network add-on does on
each node (flannel writes its subnet, then the bridge configuration): it waits until the
controller manager gave the node its `spec.podCIDR`, then writes the node's conflist there,
`bridge` (a bridge `vkcni<N>` per node, the pod's default gateway on it, no masquerading: pods of
different nodes see each other's addresses, `pod_forwarding` lets them through) with
`host-local` over the podCIDR, `portmap` for hostPorts and `loopback`. Until then the
provider reports its Node NotReady (`NetworkPluginNotReady`, "cni plugin not initialized"),
as a kubelet does before its network add-on is up. `stop()` removes the bridges.
Must not: start providers or run plugins (the providers do).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp

from vk_common.logging import get_logger
from vk_common.tasks import BackgroundTask
from vk_sandbox.real.admin import AdminAPI, ApiError

log = get_logger("sandbox.real")

CNI_BIN = "/usr/lib/cni"  # Debian's containernetworking-plugins (scripts/ensure-cni-plugins.sh)
CONF_NAME = "10-vk-sandbox.conflist"
POLL_SECONDS = 1.0


def conf_dir(state_dir: Path, node: str) -> Path:
    return state_dir / "cni" / node / "net.d"


def network_settings(state_dir: Path, node: str) -> dict[str, Any]:
    """The provider's `network` section for `node` (config.example.yaml's keys)."""
    return {"plugin": "cni", "cniConfDir": str(conf_dir(state_dir, node)), "cniBinDir": [CNI_BIN]}


def bridge_name(index: int) -> str:
    return f"vkcni{index}"


def conflist(node: str, index: int, pod_cidr: str, ipam_dir: Path) -> dict[str, Any]:
    """bridge + host-local over the node's podCIDR, portmap, loopback (CNI spec 1.0.0)."""
    return {
        "cniVersion": "1.0.0",
        "name": f"vk-sandbox-{node}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge_name(index),
                "isGateway": True,
                "isDefaultGateway": True,  # the pod's default route: Services and the apiserver
                "ipMasq": False,
                "hairpinMode": True,  # a pod reaches itself through its Service
                "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_cidr}]], "dataDir": str(ipam_dir)},
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
            {"type": "loopback"},
        ],
    }


class NodeCNIConfigs:
    def __init__(self, admin: AdminAPI, state_dir: Path, nodes: list[str]) -> None:
        self._admin = admin
        self._state_dir = state_dir
        self._nodes = nodes
        self._task = BackgroundTask("write the nodes' CNI configurations")

    def network_of(self, node: str) -> dict[str, Any]:
        return network_settings(self._state_dir, node)

    def start(self) -> None:
        self._task.start(self._write_all)

    async def _write_all(self) -> None:
        waiting = dict(enumerate(self._nodes))
        while waiting:
            for index, node in list(waiting.items()):
                try:
                    found = await self._admin.call("GET", f"/api/v1/nodes/{node}")
                except (ApiError, aiohttp.ClientError):
                    continue  # not registered yet, or the apiserver restarts
                pod_cidr = str((found.get("spec") or {}).get("podCIDR") or "")
                if pod_cidr:
                    await asyncio.to_thread(self._write, node, index, pod_cidr)
                    del waiting[index]
            if waiting:
                await asyncio.sleep(POLL_SECONDS)

    def _write(self, node: str, index: int, pod_cidr: str) -> None:
        target = conf_dir(self._state_dir, node)
        target.mkdir(parents=True, exist_ok=True)
        body: Mapping[str, Any] = conflist(node, index, pod_cidr, self._state_dir / "cni" / node / "ipam")
        staged = target / f".{CONF_NAME}.tmp"
        staged.write_text(json.dumps(body, indent=1))
        staged.replace(target / CONF_NAME)  # the provider never reads half a file
        log.info("wrote the node's CNI configuration", extra={"node": node, "podCIDR": pod_cidr})

    async def stop(self) -> None:
        try:
            await self._task.stop()
        except OSError as exc:
            log.error("cannot write a node's CNI configuration", extra={"err": str(exc)})
        for index in range(len(self._nodes)):
            proc = await asyncio.create_subprocess_exec(
                "ip",
                "link",
                "del",
                bridge_name(index),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            await proc.wait()
