"""`vk-provider sandbox --control-plane real --cluster-network`: the flags and what the providers get."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from vk_provider.config_load import load_config
from vk_sandbox.command import add_parser, node_names, write_provider_configs
from vk_sandbox.pki.authority import SandboxPKI
from vk_sandbox.real.coredns import with_cluster_dns
from vk_sandbox.real.node_cni import conf_dir, conflist, network_settings


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vk-provider")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["sandbox", *argv])


def test_the_flag_is_off_by_default_and_takes_a_coredns_image() -> None:
    assert not _parse().cluster_network and _parse().coredns_image is None
    args = _parse("--control-plane", "real", "--cluster-network", "--coredns-image", "dns:1")
    assert args.cluster_network and args.coredns_image == "dns:1"


def test_providers_resolve_through_kube_dns_and_may_run_coredns(tmp_path: Path) -> None:
    user: dict[str, Any] = {
        "pods": {"clusterDomain": "cluster.local"},
        "docker": {"allow": {"capabilities": ["NET_ADMIN"]}},
    }
    config = with_cluster_dns(user)
    assert config["pods"]["clusterDNS"] == ["10.96.0.10"]
    assert config["docker"]["allow"]["capabilities"] == ["NET_ADMIN", "NET_BIND_SERVICE"]
    assert "clusterDNS" not in user["pods"]  # the user's config is not modified
    ca_file = SandboxPKI(tmp_path).ca_cert_path
    [path] = write_provider_configs(tmp_path, config, dict.fromkeys(node_names(1), tmp_path / "kc"), ca_file)
    loaded = load_config(path)  # the provider accepts it
    assert loaded.pods.cluster_dns == ("10.96.0.10",)


def test_a_cluster_dns_of_the_user_is_kept() -> None:
    config = with_cluster_dns({"pods": {"clusterDNS": ["10.0.0.53"]}})
    assert config["pods"]["clusterDNS"] == ["10.0.0.53"]
    assert config["docker"]["allow"]["capabilities"] == ["NET_BIND_SERVICE"]


async def test_the_flag_needs_the_real_control_plane(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vk_sandbox.command import serve

    code = await serve(_parse("--cluster-network", "--state-dir", str(tmp_path)))
    assert code == 2
    assert "--cluster-network needs --control-plane real" in capsys.readouterr().err


async def test_cni_pod_networking_needs_the_cluster_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vk_sandbox.command import serve

    argv = ("--control-plane", "real", "--pod-network", "cni", "--state-dir", str(tmp_path))
    assert await serve(_parse(*argv)) == 2
    assert "--pod-network cni needs --cluster-network" in capsys.readouterr().err


def test_in_cni_mode_each_node_gets_a_conf_dir_and_a_bridge_conflist_over_its_pod_cidr(
    tmp_path: Path,
) -> None:
    ca_file = SandboxPKI(tmp_path).ca_cert_path
    nodes = node_names(2)
    paths = write_provider_configs(
        tmp_path,
        with_cluster_dns({}),
        dict.fromkeys(nodes, tmp_path / "kc"),
        ca_file,
        network_of=lambda node: network_settings(tmp_path, node),
    )
    loaded = [load_config(p).network for p in paths]  # the providers accept it
    assert [(n.plugin, n.cni_conf_dir, n.cni_bin_dir) for n in loaded] == [
        ("cni", str(conf_dir(tmp_path, node)), ("/usr/lib/cni",)) for node in nodes
    ]
    body = conflist(nodes[1], 1, "10.244.4.0/22", tmp_path / "ipam")
    bridge, portmap, loopback = body["plugins"]
    assert (bridge["type"], bridge["bridge"], bridge["ipMasq"], bridge["hairpinMode"]) == (
        "bridge",
        "vkcni1",
        False,
        True,
    )
    assert bridge["isDefaultGateway"]  # a ClusterIP, the apiserver: the pod needs a default route
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.4.0/22"}]]
    assert (portmap["capabilities"], loopback["type"]) == ({"portMappings": True}, "loopback")
