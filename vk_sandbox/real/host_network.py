"""This host's side of the real-plane sandbox's cluster network: its address, routes and lock.

What lives here: `advertise_address()`, the address kube-apiserver advertises (the `kubernetes`
Service's endpoint), and `HostNetwork`, what the cluster network changes on this host while the
sandbox runs: an exclusive lock (kube-proxy owns the host's `KUBE-*` iptables chains, so one
cluster network per host), an empty interface the service range is routed to (a bridge with no
port: these machines' kernels have no `dummy` link type, every Docker host has bridges), and a blackhole
route for the cluster (pod) range. A ClusterIP that kube-proxy does not rewrite, or a pod
address of a node that is gone, thus ends on this machine instead of leaving through the
default gateway. The service range goes to an interface, not a blackhole, because the
host's own connections to a ClusterIP must get a route before kube-proxy's OUTPUT rule
rewrites them (kube-proxy's IPVS mode does the same with `kube-ipvs0`); the nodes' pod networks
are more specific routes (a /22 of the cluster range on an engine bridge) and win over the
blackhole. `stop()` removes all of it. Needs root (CAP_NET_ADMIN) and iproute2's `ip`.
Must not: touch iptables (kube-proxy's own `--cleanup` does) or start components.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

from vk_common.host_address import detect_node_ip
from vk_common.logging import get_logger

log = get_logger("sandbox.real")

EMPTY_INTERFACE = "vk-svc0"
LOCK_PATH = Path("/run/vk-provider-sandbox-cluster.lock")


class HostNetworkError(Exception):
    """The cluster network cannot be set up on this host; the message says why."""


def advertise_address() -> str:
    """The address of the interface holding the default route: reachable from the engine's
    containers (they reach the host's addresses through their bridge) and stable while the
    sandbox runs. 127.0.0.1 on a host without a default route (the reconciler is then off)."""
    return detect_node_ip()


async def _ip(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "ip", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode(errors="replace").strip()


class HostNetwork:
    def __init__(self, service_cidr: str, cluster_cidr: str) -> None:
        self.service_cidr = service_cidr
        self.cluster_cidr = cluster_cidr
        self._lock: IO[bytes] | None = None

    async def start(self) -> None:
        if os.geteuid() != 0:
            raise HostNetworkError("the cluster network (kube-proxy, routes) needs root")
        self._lock = await asyncio.to_thread(_take_lock)
        # A sandbox killed before its stop() leaves the interface: take it over.
        await _ip("link", "del", EMPTY_INTERFACE)
        for args in (
            ("link", "add", EMPTY_INTERFACE, "type", "bridge"),
            ("link", "set", EMPTY_INTERFACE, "up"),
            ("route", "replace", self.service_cidr, "dev", EMPTY_INTERFACE),
            ("route", "replace", "blackhole", self.cluster_cidr),
        ):
            code, out = await _ip(*args)
            if code != 0:
                await self.stop()
                raise HostNetworkError(f"ip {' '.join(args)}: {out}")
        log.info(
            "cluster network: service range routed to an empty interface, cluster range blackholed",
            extra={
                "serviceCIDR": self.service_cidr,
                "interface": EMPTY_INTERFACE,
                "clusterCIDR": self.cluster_cidr,
            },
        )

    async def stop(self) -> None:
        if self._lock is None:
            return
        await _ip("route", "del", "blackhole", self.cluster_cidr)
        await _ip("link", "del", EMPTY_INTERFACE)  # its route goes with it
        with contextlib.suppress(OSError):
            self._lock.close()  # releases the flock
        self._lock = None


def _take_lock() -> IO[bytes]:
    handle = LOCK_PATH.open("a+b")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().decode(errors="replace").strip() or "?"
        handle.close()
        raise HostNetworkError(
            f"another sandbox (pid {owner}) runs the cluster network on this host: kube-proxy "
            "owns the host's KUBE-* iptables chains, so only one may run at a time"
        ) from None
    handle.truncate(0)
    handle.write(str(os.getpid()).encode())
    handle.flush()
    return handle
