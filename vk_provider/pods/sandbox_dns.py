"""The DNS configuration of a pod's new sandbox, with the Events it calls for.

What lives here: `sandbox_dns`, which reads the node's resolv.conf (the kubelet's resolvConf,
read for each sandbox as GetPodDNS does; `HostResolvConf` reads the file again only when its
stat changed), forms the pod's configuration with
`kuberuntime/dns.py` and records its Warning Events (MissingClusterDNS on the Node and the pod,
DNSConfigForming on the pod). A file that cannot be read or parsed is a `RuntimeFailure`: the
sandbox is not created (FailedCreatePodSandBox), as the kubelet's generatePodSandboxConfig fails.
Must not: decide the DNS rules (kuberuntime/dns.py does) or know about an engine.
"""

from __future__ import annotations

import asyncio
import os
import time
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


class HostResolvConf:
    """The node's resolv.conf, parsed; read again (on a worker thread) whenever its `stat` (device,
    inode, size, modification and change times) differs from the last read's, or the file had
    changed less than RACY_NS before that read began (a file's times come from a coarse clock:
    an edit of the same size within the same tick would keep its stat; git's "racily clean"
    rule). The same answer as reading it for every sandbox, without a thread hop per pod (about
    0.1 ms of the loop's CPU on a two-core machine, docs/performance.md, 2026-12-07, late
    night). A file that cannot be parsed is not kept: it is read again next time."""

    RACY_NS = 2_000_000_000

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._parsed: ResolvConf | None = None

    async def read(self, path: str) -> ResolvConf:
        """Raises OSError or ResolvConfError."""
        st = os.stat(path)  # a stat of a local file: microseconds, no hop
        key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if key == self._key and self._parsed is not None:
            return self._parsed
        began = time.time_ns()
        self._parsed = parsed = parse_resolv_conf(await asyncio.to_thread(_read_head, path))
        settled = max(st.st_mtime_ns, st.st_ctime_ns) < began - self.RACY_NS
        self._key = key if settled else None
        return parsed


async def sandbox_dns(
    pod: Mapping[str, Any],
    node: NodeDNS,
    recorder: EventSink,
    *,
    node_object: Mapping[str, Any],
    node_ip: str,
    host_resolv_conf: HostResolvConf,
) -> ResolvConf | None:
    """The pod's resolver configuration for the runtime (None: the engine's own, `PodDNS`)."""
    host = None
    if node.resolv_conf:
        try:
            host = await host_resolv_conf.read(node.resolv_conf)
        except (OSError, ResolvConfError) as exc:
            raise RuntimeFailure(resolv_conf_error_message(node.resolv_conf, exc)) from exc
    result = pod_dns(pod, node, host, [node_ip] if node_ip else [])
    node_ref = {"kind": "Node", "metadata": {"name": meta(node_object).get("name", "")}}
    for event in result.events:
        recorder.event(node_ref if event.on_node else pod, "Warning", event.reason, event.message)
    return result.config
