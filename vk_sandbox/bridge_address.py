"""The Docker bridge's gateway: a host address that is not loopback, for a sandbox node's
InternalIP when the real apiserver must reach the node (it refuses nodes/proxy to 127.0.0.1).

What lives here: `gateway_of(ipam_config)` (pure) and `bridge_gateway()`, which asks the local
engine through the `docker` CLI (the conformance run and the tests call it before any event loop).
Must not: fall back to another address itself (its callers decide), or change the engine.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any


def gateway_of(ipam_config: Sequence[Mapping[str, Any]]) -> str | None:
    """The bridge network's gateway from its `IPAM.Config`. The bridge an engine makes on its
    first start lists no Gateway (Docker 20.10, until dockerd restarts): it is then the subnet's
    first address, docker0's."""
    for entry in ipam_config:
        if entry.get("Gateway"):
            return str(entry["Gateway"])
        if entry.get("Subnet"):
            return str(next(ipaddress.ip_network(str(entry["Subnet"]), strict=False).hosts()))
    return None


def bridge_gateway() -> str | None:
    """The local engine's bridge gateway, or None when the engine does not answer."""
    try:
        found = subprocess.run(
            ["docker", "network", "inspect", "bridge", "--format", "{{json .IPAM.Config}}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if found.returncode != 0:
        return None
    try:
        config = json.loads(found.stdout)
    except ValueError:
        return None
    return gateway_of(config) if isinstance(config, list) else None
