"""`vk-provider sandbox`: the flags, and the provider config generated for each sandbox node."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from vk_provider.config_load import load_config
from vk_sandbox.command import (
    SandboxUsageError,
    add_parser,
    load_user_config,
    node_names,
    write_provider_configs,
)
from vk_sandbox.pki.authority import SandboxPKI


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vk-provider")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["sandbox", *argv])


def test_flags_and_defaults() -> None:
    args = _parse()
    assert (args.state_dir, args.port, args.nodes, args.config) == (".sandbox", 0, 1, None)
    assert not args.no_provider and not args.clean
    assert args.node_grace_seconds == 50.0
    args = _parse("--state-dir", "D", "--port", "8080", "--nodes", "3", "--no-provider", "--clean")
    assert (args.state_dir, args.port, args.nodes, args.no_provider, args.clean) == ("D", 8080, 3, True, True)
    assert _parse("--node-grace-seconds", "2.5").node_grace_seconds == 2.5
    assert node_names(3) == ["sandbox-1", "sandbox-2", "sandbox-3"]
    assert node_names(2, "t-") == ["t-1", "t-2"]
    assert _parse("--node-prefix", "t-").node_prefix == "t-"


def test_generated_configs_keep_user_settings_and_load(tmp_path: Path) -> None:
    user_file = tmp_path / "user.yaml"
    user_file.write_text(
        yaml.safe_dump(
            {
                "node": {"name": "ignored", "labels": {"team": "a"}},
                "logging": {"level": "debug"},
                "kubeletServer": {"listen": "0.0.0.0:10250"},
            }
        )
    )
    user = load_user_config(str(user_file))
    kubeconfig = tmp_path / "kubeconfig"
    ca_file = SandboxPKI(tmp_path).ca_cert_path
    paths = write_provider_configs(tmp_path, user, dict.fromkeys(node_names(2), kubeconfig), ca_file)
    assert [p.name for p in paths] == ["sandbox-1.yaml", "sandbox-2.yaml"]
    listens = set()
    for node, path in zip(node_names(2), paths, strict=True):
        raw = yaml.safe_load(path.read_text())
        assert raw["node"] == {"name": node, "labels": {"team": "a"}, "internalIP": "127.0.0.1"}
        assert raw["kubernetes"]["kubeconfig"] == str(kubeconfig)
        assert raw["kubeletServer"]["clientCAFile"] == str(tmp_path / "pki" / "ca.crt")
        assert raw["kubeletServer"]["listen"].startswith("127.0.0.1:")
        assert raw["kubeletServer"]["auth"] == "x509"
        assert raw["docker"]["stateDir"] == str(tmp_path / "docker")
        listens.add(raw["kubeletServer"]["listen"])
        config = load_config(path)  # the provider accepts it
        assert config.node.name == node
        assert config.logging.level == "debug"
    assert len(listens) == 2
    assert user["node"]["name"] == "ignored"  # the user's config is not modified


def test_node_address_is_the_internal_ip_and_the_kubelet_listen_host(tmp_path: Path) -> None:
    ca_file = SandboxPKI(tmp_path).ca_cert_path
    kubeconfigs = {"sandbox-1": tmp_path / "kubeconfig"}
    (path,) = write_provider_configs(tmp_path, {}, kubeconfigs, ca_file, node_address="127.0.0.2")
    raw = yaml.safe_load(path.read_text())
    assert raw["node"]["internalIP"] == "127.0.0.2"
    assert raw["kubeletServer"]["listen"].startswith("127.0.0.2:")
    assert load_config(path).node.internal_ip == "127.0.0.2"
    two = {"sandbox-1": tmp_path / "kubeconfig", "sandbox-2": tmp_path / "kubeconfig"}
    paths = write_provider_configs(tmp_path, {}, two, ca_file, kubelet_port=10250)
    listens = [yaml.safe_load(p.read_text())["kubeletServer"]["listen"] for p in paths]
    assert listens == ["127.0.0.1:10250", "127.0.0.1:10251"]


def test_bad_user_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a list\n")
    with pytest.raises(SandboxUsageError, match="must be a mapping"):
        load_user_config(str(bad))
    with pytest.raises(SandboxUsageError):
        load_user_config(str(tmp_path / "missing.yaml"))
    assert load_user_config(None) == {}
