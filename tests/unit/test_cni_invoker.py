"""The CNI invoker (runtime/cni) driving real executables: fake plugins written by the test
that record their environment and stdin, answer like CNI plugins, fail or hang."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from vk_provider.runtime.cni.conf import CNIConfigError, load_network
from vk_provider.runtime.cni.invoke import CNIPluginError
from vk_provider.runtime.cni.network import (
    NOT_READY_MESSAGE,
    CNINetwork,
    CNISettings,
    PodNetworkRequest,
    result_ips,
)

SANDBOX = "a" * 64
PLUGIN = """#!{python}
import json, os, sys, time
conf = json.load(sys.stdin)
name = os.path.basename(sys.argv[0])
with open({log!r}, "a") as f:
    env = {{k: v for k, v in os.environ.items() if k.startswith("CNI_")}}
    f.write(json.dumps({{"plugin": name, "env": env, "conf": conf}}) + "\\n")
mode = conf.get("mode", "")
if mode == "hang":
    time.sleep(600)
if mode == "fail" and env["CNI_COMMAND"] == "ADD":
    error = {{"cniVersion": "1.0.0", "code": 11, "msg": "no addresses left", "details": "range full"}}
    print(json.dumps(error))
    sys.exit(1)
if env["CNI_COMMAND"] == "ADD":
    prev = conf.get("prevResult") or {{
        "cniVersion": "1.0.0",
        "interfaces": [{{"name": "cni0"}}, {{"name": "eth0", "sandbox": env["CNI_NETNS"]}}],
        "ips": [{{"address": "10.99.0.7/24", "interface": 1}}, {{"address": "fd99::7/64", "interface": 1}},
                {{"address": "10.99.0.1/24", "interface": 0}}],
    }}
    print(json.dumps(prev))
"""


@pytest.fixture
def rig(tmp_path: Path) -> tuple[CNINetwork, Path, Path]:
    """A bin dir with `fake-ipam` and `fake-ports`, a conf dir, a cache dir; the log of runs."""
    bin_dir, conf_dir, log = tmp_path / "bin", tmp_path / "net.d", tmp_path / "runs.log"
    bin_dir.mkdir()
    conf_dir.mkdir()
    for name in ("fake-ipam", "fake-ports"):
        path = bin_dir / name
        path.write_text(PLUGIN.format(python=sys.executable, log=str(log)))
        path.chmod(0o755)
    settings = CNISettings(str(conf_dir), ("/nonexistent", str(bin_dir)), str(tmp_path / "cache"), 10.0)
    return CNINetwork(settings), conf_dir, log


def write_list(conf_dir: Path, name: str, *plugins: dict[str, Any], version: str = "1.0.0") -> None:
    (conf_dir / name).write_text(
        json.dumps({"cniVersion": version, "name": "testnet", "plugins": list(plugins)})
    )


def runs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


REQUEST = PodNetworkRequest(
    "shop",
    "web",
    "uid-1",
    SANDBOX,
    "/var/run/docker/netns/abc",
    ({"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": ""},),
)


async def test_no_config_is_not_ready_and_the_first_usable_list_is_taken(
    rig: tuple[CNINetwork, Path, Path],
) -> None:
    network, conf_dir, _ = rig
    assert await network.status() == NOT_READY_MESSAGE
    with pytest.raises(CNIConfigError, match="no networks found"):
        load_network(str(conf_dir), network.settings.bin_dirs)
    (conf_dir / "05-broken.conflist").write_text("{not json")
    write_list(conf_dir, "07-missing.conflist", {"type": "no-such-plugin"})
    (conf_dir / "README.md").write_text("not a config")
    assert await network.status() == NOT_READY_MESSAGE
    (conf_dir / "10-single.conf").write_text(
        json.dumps({"cniVersion": "0.4.0", "name": "single", "type": "fake-ipam"})
    )
    write_list(conf_dir, "20-list.conflist", {"type": "fake-ipam"})
    found = load_network(str(conf_dir), network.settings.bin_dirs)
    assert (found.name, found.cni_version, [p["type"] for p in found.plugins]) == (
        "single",
        "0.4.0",
        ["fake-ipam"],
    )
    assert await network.status() is None


async def test_add_check_del_run_the_plugins_as_libcni_and_cache_the_result(
    rig: tuple[CNINetwork, Path, Path],
) -> None:
    network, conf_dir, log = rig
    write_list(
        conf_dir,
        "10-net.conflist",
        {"type": "fake-ipam"},
        {"type": "fake-ports", "capabilities": {"portMappings": True}},
    )

    assert await network.add(REQUEST) == ("10.99.0.7", "fd99::7")
    first, second = runs(log)
    assert [first["plugin"], second["plugin"]] == ["fake-ipam", "fake-ports"]
    assert first["env"] == {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": SANDBOX,
        "CNI_NETNS": "/var/run/docker/netns/abc",
        "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web;"
        f"K8S_POD_INFRA_CONTAINER_ID={SANDBOX};K8S_POD_UID=uid-1",
        "CNI_IFNAME": "eth0",
        "CNI_PATH": f"/nonexistent:{network.settings.bin_dirs[1]}",
    }
    assert (first["conf"]["name"], first["conf"]["cniVersion"]) == ("testnet", "1.0.0")
    assert "runtimeConfig" not in first["conf"] and "prevResult" not in first["conf"]
    assert second["conf"]["runtimeConfig"] == {"portMappings": [dict(REQUEST.port_mappings[0])]}
    assert result_ips(second["conf"]["prevResult"]) == ("10.99.0.7", "fd99::7")

    cached = json.loads(
        (Path(network.settings.cache_dir) / "results" / f"testnet-{SANDBOX}-eth0").read_text()
    )
    assert cached["kind"] == "cniCacheV1" and cached["containerId"] == SANDBOX and cached["ifName"] == "eth0"
    assert json.loads(base64.b64decode(cached["config"]))["name"] == "testnet"
    assert await network.ips(SANDBOX) == ("10.99.0.7", "fd99::7")

    # The conf dir may change meanwhile: CHECK and DEL use the cached list.
    (conf_dir / "10-net.conflist").unlink()
    await network.check(SANDBOX, REQUEST.netns)
    checks = runs(log)[2:]
    assert [(r["plugin"], r["env"]["CNI_COMMAND"]) for r in checks] == [
        ("fake-ipam", "CHECK"),
        ("fake-ports", "CHECK"),
    ]
    assert checks[0]["conf"]["prevResult"] == cached["result"]
    await network.delete(SANDBOX, REQUEST.netns)
    dels = runs(log)[4:]
    assert [(r["plugin"], r["env"]["CNI_COMMAND"]) for r in dels] == [
        ("fake-ports", "DEL"),
        ("fake-ipam", "DEL"),
    ]
    assert await network.ips(SANDBOX) == ()
    await network.delete(SANDBOX, REQUEST.netns)  # nothing cached: nothing to do
    assert len(runs(log)) == 6
    with pytest.raises(CNIPluginError, match="no cached ADD"):
        await network.check(SANDBOX, REQUEST.netns)


async def test_a_failing_plugin_is_undone_and_its_message_given(rig: tuple[CNINetwork, Path, Path]) -> None:
    network, conf_dir, log = rig
    write_list(conf_dir, "10-net.conflist", {"type": "fake-ipam"}, {"type": "fake-ports", "mode": "fail"})
    with pytest.raises(CNIPluginError) as info:
        await network.add(REQUEST)
    assert info.value.message == 'plugin type="fake-ports" failed (add): no addresses left; range full'
    assert [(r["plugin"], r["env"]["CNI_COMMAND"]) for r in runs(log)] == [
        ("fake-ipam", "ADD"),
        ("fake-ports", "ADD"),
        ("fake-ports", "DEL"),
        ("fake-ipam", "DEL"),
    ]
    assert await network.ips(SANDBOX) == ()


async def test_a_hanging_plugin_is_killed_at_the_timeout(
    tmp_path: Path, rig: tuple[CNINetwork, Path, Path]
) -> None:
    network, conf_dir, log = rig
    network.settings = CNISettings(
        network.settings.conf_dir, network.settings.bin_dirs, network.settings.cache_dir, 1.0
    )
    write_list(conf_dir, "10-net.conflist", {"type": "fake-ipam", "mode": "hang"})
    with pytest.raises(CNIPluginError, match="timed out after 1s"):
        await network.add(REQUEST)
    # The DEL that undoes it hangs too and is killed the same way; nothing is cached.
    assert [r["env"]["CNI_COMMAND"] for r in runs(log)] == ["ADD", "DEL"]
    assert await network.ips(SANDBOX) == ()
