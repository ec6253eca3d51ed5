"""Docker mode with a Node podCIDR (runtime/docker/pod_network.py): pods get their addresses
from the Node's `spec.podCIDR` on the engine's network of the node, see the cluster
nameservers in their own resolv.conf (not Docker's 127.0.0.11), publish hostPorts, keep
their addresses across a provider restart; a subnet the engine refuses is a
FailedCreatePodSandBox Event, retried until it can be made; `vk-provider clean` removes the
network after the pods."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import ipaddress
from pathlib import Path
from typing import Any

import pytest
from docker.errors import NotFound
from docker.types import IPAMConfig, IPAMPool

from tests.integration.test_pods_dns import CLUSTER_DNS, ClusterDNSHarness, resolv_conf_of
from tests.integration.test_runtime_docker import http_get
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import has_ip, running_ip
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from vk_common.ports import free_port
from vk_provider.app import clean_node
from vk_provider.runtime.docker.pod_network import pod_network_name

pytestmark = pytest.mark.docker


def cidr_for(node_name: str, third: int = 0) -> str:
    """A /24 of 10.213.0.0/16 (used nowhere else on these machines) picked by the node's name."""
    index = (int(hashlib.sha256(node_name.encode()).hexdigest(), 16) + third) % 250
    return f"10.213.{index}.0/24"


async def give_pod_cidr(harness: ProviderHarness, node_name: str, cidr: str) -> str:
    """The Node's podCIDR: `cidr` set by the test, or the one a real plane's controller manager
    allocated already; returned once the provider has seen it."""
    node = await harness.api.get(f"/api/v1/nodes/{node_name}")
    if not (node.get("spec") or {}).get("podCIDR"):
        await harness.api.patch(f"/api/v1/nodes/{node_name}", {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}})
    assert harness.provider is not None
    agent = harness.provider.node
    assert agent is not None
    seen: str = await eventually(
        lambda: (agent.node_object().get("spec") or {}).get("podCIDR"), what="the provider to see the podCIDR"
    )
    return seen


async def test_pods_get_addresses_from_the_pod_cidr_their_resolv_conf_and_hostports(
    node_name: str, tmp_path: Path, plane: Plane, docker_client: Any
) -> None:
    async with ClusterDNSHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        cidr = ipaddress.ip_network(await give_pod_cidr(harness, node_name, cidr_for(node_name)))
        port = free_port()
        server = sh(
            "server", "exec httpd -f -p 8080 -h /var/www", ports=[{"containerPort": 8080, "hostPort": port}]
        )
        await harness.create(harness.manifest("web", [server]))
        ip = running_ip(await harness.wait_for("web", has_ip))
        assert ipaddress.ip_address(ip) in cidr
        web = await harness.get("web")
        assert web is not None and web["status"]["podIPs"] == [{"ip": ip}]
        body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/")
        assert "hello from vk-test/busybox" in body

        network = docker_client.networks.get(pod_network_name(node_name))
        assert [c["Subnet"] for c in network.attrs["IPAM"]["Config"]] == [str(cidr)]

        # Docker would answer from 127.0.0.11 on this network: the pod sees the kubelet's file.
        lines = await resolv_conf_of(harness, "resolver", dnsPolicy="ClusterFirst")
        assert [line for line in lines if line.startswith("nameserver")] == [f"nameserver {CLUSTER_DNS}"]
        assert "options ndots:5" in lines

        # A restarted provider finds the network and the pod as they were.
        await harness.stop_provider()
        await harness.start_provider()
        await harness.create(harness.manifest("second", [sh("main", "sleep 3600")]))
        second = running_ip(await harness.wait_for("second", has_ip))
        assert ipaddress.ip_address(second) in cidr and second != ip
        assert docker_client.networks.get(pod_network_name(node_name)).id == network.id
        web = await harness.get("web")
        assert web is not None and running_ip(web) == ip
        assert not [e for e in await harness.events("web") if e["reason"] == "FailedCreatePodSandBox"]


async def test_a_subnet_the_engine_refuses_is_failed_create_pod_sandbox_retried(
    node_name: str,
    tmp_path: Path,
    plane: Plane,
    docker_client: Any,
    test_labels: dict[str, str],
) -> None:
    async with ProviderHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        node = await harness.api.get(f"/api/v1/nodes/{node_name}")
        cidr = (node.get("spec") or {}).get("podCIDR") or cidr_for(node_name, 1)
        # Another network holds the range: the engine will not make the node's.
        holder = docker_client.networks.create(
            f"{node_name}-holder",
            driver="bridge",
            ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=cidr)]),
            labels=test_labels,
        )
        try:
            await give_pod_cidr(harness, node_name, cidr)
            await harness.create(harness.manifest("blocked", [sh("main", "sleep 3600")]))
            event = await harness.wait_event("blocked", "FailedCreatePodSandBox")
            assert event["type"] == "Warning"
            assert (
                f'cannot create the pod network "{pod_network_name(node_name)}" for podCIDR {cidr}'
                in event["message"]
            )
            pod = await harness.get("blocked")
            assert pod is not None and pod["status"].get("phase") == "Pending"
        finally:
            holder.remove()
        # The range is free again: the next attempt makes the network and the pod runs in it.
        ip = running_ip(await harness.wait_for("blocked", has_ip, within=120.0))
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(cidr)


async def test_clean_removes_the_pod_network_of_the_node_after_its_pods(
    node_name: str, tmp_path: Path, plane: Plane, docker_client: Any
) -> None:
    """`vk-provider clean` (app.clean_node) leaves nothing of the node in the engine: its pods,
    then the network `vk-pods-<node>` they were on; another node's clean leaves it."""
    async with ProviderHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        await give_pod_cidr(harness, node_name, cidr_for(node_name, 2))
        await harness.create(harness.manifest("one", [sh("main", "sleep 3600")]))
        await harness.wait_for("one", has_ip)
        await harness.stop_provider()
        config = harness.config()
        other = dataclasses.replace(config, node=dataclasses.replace(config.node, name=f"{node_name}-other"))
        assert await clean_node(other) == 0
        assert docker_client.networks.get(pod_network_name(node_name))
        assert await clean_node(config) == 0
        with pytest.raises(NotFound):
            docker_client.networks.get(pod_network_name(node_name))
