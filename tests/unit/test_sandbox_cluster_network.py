"""`vk-provider sandbox --control-plane real --cluster-network`: the flags and what the providers get."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from vk_provider.config_load import load_config
from vk_provider.sandbox.command import add_parser, node_names, write_provider_configs
from vk_provider.sandbox.pki.authority import SandboxPKI
from vk_provider.sandbox.real.coredns import with_cluster_dns


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
    from vk_provider.sandbox.command import serve

    code = await serve(_parse("--cluster-network", "--state-dir", str(tmp_path)))
    assert code == 2
    assert "--cluster-network needs --control-plane real" in capsys.readouterr().err
