"""The Node's pod address ranges, as a runtime gets them for a new sandbox (pure).

What lives here: `node_pod_cidrs`, the Node's `spec.podCIDRs` (or its single `spec.podCIDR`)
as written by the controller manager's node IPAM (`--allocate-node-cidrs`) or an admin, each
checked to be a network; `ipv4_cidr`, the first IPv4 one.
Must not: read the API or know about an engine.

Upstream: pkg/kubelet/kubelet_network.go (updatePodCIDR: the kubelet hands `spec.podCIDRs`
to the runtime as the CRI's RuntimeConfig.NetworkConfig.PodCidr, comma-joined).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any


def node_pod_cidrs(node: Mapping[str, Any]) -> tuple[str, ...]:
    """The Node's pod CIDRs, in their order; ones that are not networks are left out."""
    spec = node.get("spec") or {}
    raw = list(spec.get("podCIDRs") or []) or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
    out: list[str] = []
    for value in raw:
        try:
            out.append(str(ipaddress.ip_network(str(value), strict=True)))
        except ValueError:
            continue
    return tuple(out)


def ipv4_cidr(cidrs: Sequence[str]) -> str | None:
    """The first IPv4 range of `cidrs` (None without one)."""
    return next((c for c in cidrs if ipaddress.ip_network(c).version == 4), None)
