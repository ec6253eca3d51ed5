"""The DNS configuration of a pod's new sandbox, with the Events it calls for.

What lives here: `sandbox_dns`, which reads the node's resolv.conf (the kubelet's resolvConf,
read again for each sandbox as GetPodDNS does), forms the pod's configuration with
`kuberuntime/dns.py` and records its Warning Events (MissingClusterDNS on the Node and the pod,
DNSConfigForming on the pod). A file that cannot be read or parsed is a `RuntimeFailure`: the
sandbox is not created (FailedCreatePodSandBox), as the kubelet's generatePodSandboxConfig fails.
Must not: decide the DNS rules (kuberuntime/dns.py does) or know about an engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from vk_common.objects import meta
from vk_provider.kuberuntime.dns import (
    MAX_RESOLV_CONF_BYTES,
    NodeDNS,
    ResolvConfError,
    parse_resolv_conf,
    pod_dns,
    resolv_conf_error_message,
)
from vk_provider.pods.work import EventSink
from vk_provider.runtime.configs import ResolvConf
from vk_provider.runtime.types import RuntimeFailure


def _read_head(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(MAX_RESOLV_CONF_BYTES + 1)  # one byte past the limit tells it is reached


async def sandbox_dns(
    pod: Mapping[str, Any],
    node: NodeDNS,
    recorder: EventSink,
    *,
    node_object: Mapping[str, Any],
    node_ip: str,
) -> ResolvConf | None:
    """The pod's resolver configuration for the runtime (None: the engine's own, `PodDNS`)."""
    host = None
    if node.resolv_conf:
        try:
            host = parse_resolv_conf(await asyncio.to_thread(_read_head, node.resolv_conf))
        except (OSError, ResolvConfError) as exc:
            raise RuntimeFailure(resolv_conf_error_message(node.resolv_conf, exc)) from exc
    result = pod_dns(pod, node, host, [node_ip] if node_ip else [])
    node_ref = {"kind": "Node", "metadata": {"name": meta(node_object).get("name", "")}}
    for event in result.events:
        recorder.event(node_ref if event.on_node else pod, "Warning", event.reason, event.message)
    return result.config
