"""Cluster DNS as the kubelet writes it: a ClusterFirst pod's /etc/resolv.conf on a node with
`pods.clusterDNS`, and the MissingClusterDNS fallback without it (kuberuntime/dns.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import container_status
from tests.support.provider_harness import NAMESPACE, ProviderHarness
from vk_provider.config import Config

pytestmark = pytest.mark.docker

CLUSTER_DNS = "10.96.0.10"


class ClusterDNSHarness(ProviderHarness):
    """`pods.clusterDNS: [10.96.0.10]`, `pods.clusterDomain: cluster.local`."""

    def config(self) -> Config:
        base = super().config()
        return dataclasses.replace(base, pods=dataclasses.replace(base.pods, cluster_dns=(CLUSTER_DNS,)))


async def resolv_conf_of(harness: ProviderHarness, name: str, **spec: Any) -> list[str]:
    """The lines of the pod's /etc/resolv.conf, as its container wrote them to its termination message."""
    manifest = harness.manifest(
        name, [sh("main", "cat /etc/resolv.conf > /dev/termination-log")], restartPolicy="Never", **spec
    )
    await harness.create(manifest)

    def done(pod: dict[str, Any]) -> bool:
        return "terminated" in ((container_status(pod, "main") or {}).get("state") or {})

    pod = await harness.wait_for(name, done)
    message = str(container_status(pod, "main")["state"]["terminated"].get("message", ""))
    return [line for line in message.splitlines() if line and not line.startswith("#")]


async def test_a_cluster_first_pod_gets_the_cluster_nameserver_searches_and_ndots(
    node_name: str, tmp_path: Path, plane: Plane
) -> None:
    async with ClusterDNSHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        lines = await resolv_conf_of(harness, "clusterfirst", dnsPolicy="ClusterFirst")
        assert [line for line in lines if line.startswith("nameserver")] == [f"nameserver {CLUSTER_DNS}"]
        search = next(line for line in lines if line.startswith("search")).split()
        assert search[:4] == [
            "search",
            f"{NAMESPACE}.svc.cluster.local",
            "svc.cluster.local",
            "cluster.local",
        ]
        assert "options ndots:5" in lines
        assert not [e for e in await harness.events("clusterfirst") if e["reason"] == "MissingClusterDNS"]

        # dnsConfig is merged: one more nameserver and search, an option overriding ndots.
        merged = await resolv_conf_of(
            harness,
            "merged",
            dnsConfig={
                "nameservers": ["192.0.2.1"],
                "searches": ["my.example"],
                "options": [{"name": "ndots", "value": "2"}],
            },
        )
        assert [line for line in merged if line.startswith("nameserver")] == [
            f"nameserver {CLUSTER_DNS}",
            "nameserver 192.0.2.1",
        ]
        assert next(line for line in merged if line.startswith("search")).split()[-1] == "my.example"
        assert "options ndots:2" in merged


async def test_without_cluster_dns_a_cluster_first_pod_falls_back_to_default_with_a_warning(
    harness: ProviderHarness, node_name: str
) -> None:
    lines = await resolv_conf_of(harness, "fallback", dnsPolicy="ClusterFirst")
    assert "options ndots:5" not in lines  # the engine's own copy of its host's resolv.conf
    assert not any("svc.cluster.local" in line for line in lines)
    message = (
        'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" '
        'policy. Falling back to "Default" policy.'
    )
    on_pod = await harness.wait_event("fallback", "MissingClusterDNS")
    assert on_pod["type"] == "Warning"
    uid = on_pod["involvedObject"]["uid"]
    assert on_pod["message"] == f'pod: "fallback_{NAMESPACE}({uid})". {message}'
    on_node = await harness.wait_event(node_name, "MissingClusterDNS")
    assert (on_node["type"], on_node["message"], on_node["involvedObject"]["kind"]) == (
        "Warning",
        message,
        "Node",
    )
