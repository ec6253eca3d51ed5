"""Loading and strict validation of the configuration (vk_provider.config_load)."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from vk_provider.config import Config, Taint
from vk_provider.config_load import (
    ConfigError,
    apply_overrides,
    config_from_mapping,
    effective_config,
    load_config,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config.example.yaml"


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else key))
        return out
    return {prefix: data}


def test_example_equals_defaults_key_by_key() -> None:
    loaded = effective_config(load_config(EXAMPLE))
    defaults = effective_config(Config())
    example_keys = _flatten(yaml.safe_load(EXAMPLE.read_text()))
    assert set(example_keys) == set(_flatten(defaults)), "the example must list every key"
    for key, value in _flatten(defaults).items():
        assert _flatten(loaded)[key] == value, key
    assert load_config(EXAMPLE) == Config()


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("# nothing\n")
    assert load_config(path) == Config()


def test_values_are_read_into_the_dataclasses() -> None:
    config = config_from_mapping(
        {
            "node": {
                "name": "docker-1",
                "labels": {"example.com/zone": "a", "tier": ""},
                "taints": [{"key": "k", "effect": "NoExecute"}],
                "capacity": {"cpu": "500m", "memory": "16Gi", "pods": 20, "ephemeral-storage": "2e3"},
                "internalIP": "10.0.0.5",
                "leaseDurationSeconds": 20,
                "statusReportInterval": "1h30m",
            },
            "kubernetes": {"qps": 5.5, "burst": 10},
            "docker": {
                "host": "tcp://10.0.0.1:2376",
                "seccompProfileRoot": "/var/lib/kubelet/seccomp",
                "allow": {"hostPath": True, "capabilities": ["NET_ADMIN"], "unconfined": True},
            },
            "staticPods": {"path": "/etc/vk/manifests", "relistInterval": "250ms"},
            "kubeletServer": {
                "listen": "[::]:10250",
                "tls": {"mode": "files", "certFile": "/c.pem", "keyFile": "/k.pem"},
                "auth": "x509",
                "clientCAFile": "/ca.pem",
            },
            "logging": {"level": "debug", "format": "json"},
        }
    )
    assert config.node.name == "docker-1"
    assert config.node.labels == {"example.com/zone": "a", "tier": ""}
    assert config.node.taints == (Taint(key="k", effect="NoExecute"),)
    assert config.node.capacity.memory == "16Gi"
    assert config.node.capacity.pods == "20"
    assert config.node.status_report_interval == 5400.0
    assert config.kubernetes.qps == 5.5
    assert config.docker.allow.host_path is True
    assert config.docker.allow.capabilities == ("NET_ADMIN",)
    assert config.docker.allow.unconfined is True
    assert config.docker.seccomp_profile_root == "/var/lib/kubelet/seccomp"
    assert config.docker.max_concurrency == 8
    assert config.static_pods.relist_interval == 0.25
    assert config.kubelet_server.tls.mode == "files"
    out = effective_config(config)
    assert out["staticPods"]["relistInterval"] == "250ms"
    assert out["node"]["statusReportInterval"] == "1h30m"
    assert config_from_mapping(out) == config, "the effective config loads back to the same config"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"docker": {"maxConcurrency": "many"}},
            "docker.maxConcurrency: expected a positive integer, got 'many'",
        ),
        (
            {"docker": {"maxConcurrency": True}},
            "docker.maxConcurrency: expected a positive integer, got true",
        ),
        ({"docker": {"maxConcurrency": 0}}, "docker.maxConcurrency: expected a positive integer, got 0"),
        ({"kubernetes": {"qps": "fast"}}, "kubernetes.qps: expected a positive number"),
        ({"metrics": {"enabled": "yes"}}, "metrics.enabled: expected true or false, got 'yes'"),
        ({"node": {"capacity": {"cpu": "16GB"}}}, "node.capacity.cpu: expected a Kubernetes quantity"),
        ({"node": {"capacity": {"pods": "auto"}}}, "node.capacity.pods: expected a Kubernetes quantity"),
        ({"node": {"capacity": {"memory": "-1Gi"}}}, "node.capacity.memory: expected a Kubernetes quantity"),
        ({"status": {"syncPeriod": "10"}}, "status.syncPeriod: expected a duration"),
        ({"status": {"syncPeriod": 10}}, "status.syncPeriod: expected a duration"),
        ({"pods": {"resyncInterval": "-5s"}}, "pods.resyncInterval: expected a duration"),
        ({"staticPods": {"relistInterval": "0s"}}, "staticPods.relistInterval: expected a positive duration"),
        (
            {"node": {"taints": [{"key": "a", "effect": "Sometimes"}]}},
            "node.taints[0].effect: expected one of",
        ),
        ({"node": {"taints": [{"effect": "NoSchedule"}]}}, "node.taints[0].key: is required"),
        (
            {"node": {"taints": [{"key": "a", "effect": "NoSchedule", "x": 1}]}},
            "node.taints[0].x: unknown key",
        ),
        ({"node": {"labels": {"bad key": "v"}}}, 'node.labels["bad key"]: invalid label key'),
        ({"node": {"labels": {"ok": "bad value"}}}, 'node.labels["ok"]: invalid label value'),
        ({"node": {"name": "Docker_1"}}, "node.name: must be a DNS-1123 subdomain"),
        ({"node": {"internalIP": "10.0.0"}}, "node.internalIP: expected an IP address"),
        ({"kubeletServer": {"tls": {"mode": "files"}}}, "kubeletServer.tls.certFile: is required when mode"),
        (
            {"kubeletServer": {"tls": {"mode": "acme"}}},
            "kubeletServer.tls.mode: expected one of files, selfSigned",
        ),
        ({"kubeletServer": {"auth": "x509"}}, "kubeletServer.clientCAFile: is required when auth is 'x509'"),
        ({"kubeletServer": {"auth": "token"}}, "kubeletServer.auth: expected one of webhook, x509, none"),
        ({"kubeletServer": {"listen": "10250"}}, "kubeletServer.listen: expected host:port"),
        ({"logging": {"level": "verbose"}}, "logging.level: expected one of debug, info, warning, error"),
        ({"docker": {"allow": {"capabilities": "NET_ADMIN"}}}, "docker.allow.capabilities: expected a list"),
        (
            {"docker": {"allow": {"capabilities": ["net admin"]}}},
            "docker.allow.capabilities[0]: expected a capability",
        ),
        ({"docker": {"host": "/var/run/docker.sock"}}, "docker.host: expected a Docker host URL"),
        (
            {"docker": {"seccompProfileRoot": "seccomp"}},
            "docker.seccompProfileRoot: expected an absolute path",
        ),
        ({"kubeletServer": {"healthzListen": "10248"}}, "kubeletServer.healthzListen: expected host:port"),
        (
            {"kubeletServer": {"healthzListen": "127.0.0.1:10250"}},
            "kubeletServer.healthzListen: port 10250 is the kubelet API's (listen)",
        ),
        (
            {"docker": {"runtimes": {"Kata_1": "kata"}}},
            'docker.runtimes["Kata_1"]: expected a RuntimeClass handler',
        ),
        (
            {"docker": {"runtimes": {"crun": ""}}},
            'docker.runtimes["crun"]: expected the name of one of the engine',
        ),
        ({"docker": {"runtimes": ["crun"]}}, "docker.runtimes: expected a mapping of RuntimeClass handlers"),
        ({"docker": {"cgroupRoot": "vk"}}, "docker.cgroupRoot: expected an absolute cgroup path"),
        ({"docker": {"cgroupRoot": "/kubepods/x"}}, "docker.cgroupRoot: must not be the kubelet's kubepods"),
        ({"dokcer": {}}, "dokcer: unknown key"),
        ({"docker": {"allow": {"hostpath": True}}}, "docker.allow.hostpath: unknown key"),
        ({"\n\n  ": None}, "unknown key, not shown as it is not a key name (known keys here: node,"),
        ({"docker": {"max concurrency\n": 1}}, "docker: unknown key, not shown as it is not a key name"),
        ({"node.name": "a"}, '["node.name"]: unknown key (known keys here: node,'),
        ({"root:$6$SECRET:19700:0:99999:7::": None}, "unknown key, not shown as it is not a key name"),
        ({"docker": {"x" * 25: 1}}, "docker: unknown key, not shown as it is not a key name"),
        ({"node": ["a"]}, "node: expected a mapping, got a list"),
        ({"logging": {"components": ["pods"]}}, "logging.components: expected a mapping of components"),
        (
            {"logging": {"components": {"pods": "loud"}}},
            "logging.components[\"pods\"]: expected one of debug, info, warning, error, got 'loud'",
        ),
        (
            {"logging": {"components": {"Pods/x": "debug"}}},
            'logging.components["Pods/x"]: expected a component such as pods or kube.client',
        ),
    ],
)
def test_bad_values_name_the_key_path(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_mapping(data, "config.yaml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"config.yaml: {expected}"), message


def test_per_component_log_levels_are_read() -> None:
    config = config_from_mapping({"logging": {"components": {"pods": "debug", "kube.client": "warning"}}})
    assert config.logging.components == {"pods": "debug", "kube.client": "warning"}


def test_non_mapping_top_level() -> None:
    with pytest.raises(
        ConfigError, match=r"^c\.yaml: expected a mapping of sections at the top level, got a list$"
    ):
        config_from_mapping([1, 2], "c.yaml")


def test_overrides_apply_and_validate() -> None:
    config = apply_overrides(Config(), node_name="n-2", kubeconfig="/k", log_level="debug", log_format="json")
    assert (config.node.name, config.kubernetes.kubeconfig) == ("n-2", "/k")
    assert (config.logging.level, config.logging.format) == ("debug", "json")
    assert apply_overrides(config) == config
    with pytest.raises(ConfigError, match=r"^command line: --node-name: must be a DNS-1123"):
        apply_overrides(Config(), node_name="UPPER")
    with pytest.raises(ConfigError, match=r"^command line: --log-format: expected one of text, json"):
        apply_overrides(Config(), log_format="xml")


def test_every_key_of_the_example_has_a_comment_with_its_default() -> None:
    leaves = set(_flatten(effective_config(Config())))
    stack: list[tuple[int, str]] = []
    lines = EXAMPLE.read_text().splitlines()
    documented: set[str] = set()
    for number, line in enumerate(lines):
        match = re.match(r"^( *)([A-Za-z][\w-]*):", line)
        if not match:
            continue
        indent, key = len(match[1]), match[2]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        stack.append((indent, key))
        if path not in leaves:
            continue
        comment: list[str] = []
        for above in reversed(lines[:number]):
            if not above.strip().startswith("#"):
                break
            comment.append(above)
        assert any("Default:" in c for c in comment), f"{path} needs a comment with its default"
        documented.add(path)
    assert documented == leaves
