"""The `network` section: its defaults, one bin dir or a list, and `cni` refused with an engine
that is not on this host (exit 2 with the key path, from `vk-provider run`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vk_provider.config_load import ConfigError, config_from_mapping
from vk_provider.node.conditions import desired_conditions
from vk_provider.runtime.cni.network import NOT_READY_MESSAGE

REPO = Path(__file__).resolve().parents[2]


def test_defaults_and_bin_dirs() -> None:
    net = config_from_mapping({}).network
    assert (net.plugin, net.cni_conf_dir, net.cni_bin_dir, net.cni_timeout) == (
        "docker",
        "/etc/cni/net.d",
        ("/opt/cni/bin",),
        120.0,
    )
    one = config_from_mapping({"network": {"plugin": "cni", "cniBinDir": "/usr/lib/cni"}}).network
    assert one.cni_bin_dir == ("/usr/lib/cni",)
    two = config_from_mapping({"network": {"cniBinDir": ["/usr/lib/cni", "/opt/cni/bin"]}}).network
    assert two.cni_bin_dir == ("/usr/lib/cni", "/opt/cni/bin")


@pytest.mark.parametrize(
    ("network", "docker", "message"),
    [
        ({"plugin": "calico"}, {}, r"^c: network\.plugin: expected one of docker, cni"),
        ({"cniBinDir": []}, {}, r"^c: network\.cniBinDir: expected at least one directory"),
        ({"cniBinDir": ["bin"]}, {}, r"^c: network\.cniBinDir\[0\]: must be an absolute path"),
        ({"cniConfDir": "net.d"}, {}, r"^c: network\.cniConfDir: must be an absolute path"),
        (
            {"plugin": "cni"},
            {"host": "tcp://10.0.0.1:2376"},
            r"^c: network\.plugin: cni needs the Docker engine",
        ),
        (
            {"plugin": "cni"},
            {"engineLocation": "remote"},
            r"^c: network\.plugin: cni needs the Docker engine",
        ),
    ],
)
def test_bad_values_name_their_key(
    network: dict[str, object], docker: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_mapping({"network": network, "docker": docker}, "c")


def test_cni_with_a_remote_engine_stops_run_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("docker: {host: 'tcp://10.0.0.1:2376'}\nnetwork: {plugin: cni}\n")
    done = subprocess.run(
        [sys.executable, "-m", "vk_cli", "run", "--config", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "network.plugin: cni needs the Docker engine on this host" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_network_that_is_not_ready_makes_the_node_not_ready() -> None:
    ready = next(c for c in desired_conditions(None, NOT_READY_MESSAGE) if c["type"] == "Ready")
    assert ready == {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": NOT_READY_MESSAGE,
    }
    down = next(c for c in desired_conditions("engine down", NOT_READY_MESSAGE) if c["type"] == "Ready")
    assert down["message"] == "engine down"
