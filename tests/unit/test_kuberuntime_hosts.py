"""The pod's hostname, FQDN and managed /etc/hosts, as the kubelet makes them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support import docker_kwargs, manifests
from tests.support.etc_hosts import MANAGED_HOSTS_PREAMBLE
from tests.support.launches import launch
from vk_provider.config import DockerConfig
from vk_provider.kuberuntime import hosts
from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.runtime.types import ContainerCreateError


def pod(name: str = "web", **fields: Any) -> dict[str, Any]:
    return manifests.pod(name, [{"name": "app", "image": "busybox:1"}], namespace="ns", uid="u1", **fields)


def test_hostname_and_subdomain_make_the_pod_fqdn() -> None:
    assert hosts.hostname_and_domain(pod(), "cluster.local") == ("web", "")
    assert hosts.hostname_and_domain(pod(hostname="h", subdomain="sub"), "cluster.local") == (
        "h",
        "sub.ns.svc.cluster.local",
    )
    assert hosts.kernel_hostname(pod(hostname="h", subdomain="sub"), "cluster.local") == "h"
    assert hosts.kernel_hostname(
        pod(hostname="h", subdomain="sub", setHostnameAsFQDN=True), "cluster.local"
    ) == ("h.sub.ns.svc.cluster.local")
    assert (
        hosts.kernel_hostname(pod(setHostnameAsFQDN=True), "cluster.local") == "web"
    )  # no subdomain: no FQDN


def test_an_fqdn_past_64_characters_is_the_kubelets_error() -> None:
    long = pod(hostname="h" * 40, subdomain="sub", setHostnameAsFQDN=True)  # 40 + 25 = 65
    with pytest.raises(ContainerCreateError) as caught:
        hosts.kernel_hostname(long, "cluster.local")
    fqdn = "h" * 40 + ".sub.ns.svc.cluster.local"
    assert caught.value.message == (
        "failed to construct FQDN from pod hostname and cluster domain, "
        f"FQDN {fqdn} is too long (64 characters is the max, 65 characters requested)"
    )
    at_limit = pod(hostname="h" * 39, subdomain="sub", setHostnameAsFQDN=True)
    assert len(hosts.kernel_hostname(at_limit, "cluster.local")) == 64
    with pytest.raises(ContainerCreateError, match="is too long"):
        docker_kwargs.sandbox_create_kwargs(
            long, node_name="vk", config=DockerConfig(), attempt=0, dns=None, cluster_domain="cluster.local"
        )


def test_invalid_names_and_override() -> None:
    with pytest.raises(ContainerCreateError, match='pod Hostname "Bad_Name" is not a valid DNS label'):
        hosts.hostname_and_domain(pod(hostname="Bad_Name"), "cluster.local")
    with pytest.raises(ContainerCreateError, match=re.escape('pod Subdomain "a.b" is not a valid DNS label')):
        hosts.hostname_and_domain(pod(subdomain="a.b"), "cluster.local")
    assert hosts.hostname_and_domain(pod(hostnameOverride="x.example", subdomain="sub"), "cluster.local") == (
        "x.example",
        "",
    )


def test_managed_hosts_file_is_the_kubelets_byte_for_byte() -> None:
    aliases = [
        {"ip": "10.1.2.3", "hostnames": ["foo.local", "bar.local"]},
        {"ip": "10.9.9.9", "hostnames": ["z"]},
    ]
    content = hosts.pod_hosts_file(
        pod(hostname="h", subdomain="sub", hostAliases=aliases), ["172.17.0.3"], "cluster.local"
    )
    assert content == (
        MANAGED_HOSTS_PREAMBLE + "172.17.0.3\th.sub.ns.svc.cluster.local\th\n"
        "\n"
        "# Entries added by HostAliases.\n"
        "10.1.2.3\tfoo.local\tbar.local\n"
        "10.9.9.9\tz\n"
    )
    assert (
        hosts.pod_hosts_file(pod(), ["172.17.0.3"], "cluster.local")
        == MANAGED_HOSTS_PREAMBLE + "172.17.0.3\tweb\n"
    )


def test_the_fqdn_ends_with_the_nodes_cluster_domain() -> None:
    content = hosts.pod_hosts_file(pod(hostname="h", subdomain="sub"), ["172.17.0.3"], "corp.example")
    assert content == MANAGED_HOSTS_PREAMBLE + "172.17.0.3\th.sub.ns.svc.corp.example\th\n"


def _launch(p: dict[str, Any]) -> ContainerLaunch:
    return launch(p, ip="172.17.0.3")


def test_the_hosts_file_is_mounted_unless_the_container_mounts_its_own() -> None:
    p = pod()
    kw = docker_kwargs.container_create_kwargs(
        _launch(p), node_name="vk", termination_file=None, hosts_file="/s/etc-hosts"
    )
    assert "/s/etc-hosts:/etc/hosts:rw" in kw["volumes"]
    p = pod(volumes=[{"name": "h", "emptyDir": {}}])
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "h", "mountPath": "/etc/hosts"}]
    kw = docker_kwargs.container_create_kwargs(
        _launch(p), node_name="vk", termination_file=None, volumes_root="/v", hosts_file="/s/etc-hosts"
    )
    assert not any(b.startswith("/s/etc-hosts") for b in kw.get("volumes") or [])


def test_a_host_network_pods_hosts_file_is_the_nodes_with_its_host_aliases() -> None:
    """nodeHostsFileContent: the upstream "should write entries to /etc/hosts when hostNetwork
    is enabled" spec reads the aliases from a host-network pod's /etc/hosts."""
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {
            "hostNetwork": True,
            "hostAliases": [{"ip": "123.45.67.89", "hostnames": ["foo", "bar"]}],
            "containers": [],
        },
    }
    node = "127.0.0.1\tlocalhost\n10.0.0.5\tnode-1\n"
    assert hosts.pod_hosts_file(pod, [], "cluster.local", node) == (
        "# Kubernetes-managed hosts file (host network).\n"
        "127.0.0.1\tlocalhost\n10.0.0.5\tnode-1\n"
        "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"
    )
    del pod["spec"]["hostAliases"]
    assert (
        hosts.pod_hosts_file(pod, [], "cluster.local", node)
        == "# Kubernetes-managed hosts file (host network).\n" + node
    )
