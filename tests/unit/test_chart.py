"""The Helm chart (charts/vk-provider): its files (defaults, schema, README) and what `helm template` renders.

The file tests need no helm: config defaults equal config.example.yaml, values.schema.json
equal to a fresh `python -m vk_provider.chart_schema`, the README's values table equal to
values.yaml, Chart.yaml's kubeVersion the supported minors. The rendering tests run the real
`helm` binary (tests/support/chart.py) on the defaults, the ci/*-values.yaml variants and
single --set values, and validate every rendered object with kubernetes_validate against the
schema of each cluster minor `helm install` supports (KUBE_VERSION's and the two before it,
docs/sandbox.md); without helm they are skipped. The RBAC is test_chart_rbac.py's.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.support.chart import CHART, REPO, SUPPORTED_MINORS, helm_template, one, render, validate
from vk_common.kube_version import KUBE_MAJOR, KUBE_MINOR
from vk_provider.chart_readme import MissingDescription, leaves
from vk_provider.chart_readme import render as render_readme
from vk_provider.chart_schema import render as render_schema
from vk_provider.chart_schema import values_schema
from vk_provider.config import Config
from vk_provider.config_load import (
    ConfigError,
    config_from_mapping,
    config_json_schema,
    effective_config,
    load_config,
)

EXAMPLE = REPO / "config.example.yaml"
CONFIG_MOUNT = "/etc/vk-provider"
CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"


def _values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return values


def _chart_config(values: dict[str, Any]) -> dict[str, Any]:
    """What the ConfigMap template renders: `config` with node.name from `node.name` and
    kubernetes.credentials from `credentials`."""
    config: dict[str, Any] = dict(values["config"])
    config["node"] = {"name": values["node"]["name"], **config["node"]}
    config["kubernetes"] = {**config["kubernetes"], "credentials": values["credentials"]}
    return config


# --- defaults: no helm needed --------------------------------------------------------------------


def test_chart_config_defaults_equal_config_example_key_by_key() -> None:
    chart = dict(leaves(_chart_config(_values())))
    example = dict(leaves(yaml.safe_load(EXAMPLE.read_text())))
    assert sorted(chart) == sorted(example), "the chart's config must have exactly the example's keys"
    for key, value in example.items():
        assert chart[key] == value, f"{key}: chart {chart[key]!r}, config.example.yaml {value!r}"
    from_chart = config_from_mapping(_chart_config(_values()), "values.yaml")
    assert from_chart == load_config(EXAMPLE) == Config()
    assert effective_config(from_chart) == effective_config(Config())


def test_chart_node_name_is_the_providers_default_and_config_has_no_second_one() -> None:
    values = _values()
    assert values["node"]["name"] == Config().node.name
    assert "name" not in values["config"]["node"], "node.name is the one place for the Node's name"
    assert values["credentials"] == Config().kubernetes.credentials
    assert "credentials" not in values["config"]["kubernetes"], "credentials is its one place"


def test_readme_values_table_lists_every_value_with_its_default() -> None:
    """charts/vk-provider/README.md's table under `## Values`: one row per leaf of values.yaml
    (a mapping's keys joined by dots; a list or an empty mapping is one value), in order, the
    default as JSON, the description from values.yaml; equal to a fresh
    `python -m vk_provider.chart_readme` (run it after changing values.yaml)."""
    committed = (CHART / "README.md").read_text()
    assert committed == render_readme(committed, (CHART / "values.yaml").read_text())
    readme = committed.split("\n## Values\n", 1)[1]
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]*)` \| (.+) \|$", readme, re.MULTILINE)
    assert [(key, json.loads(default)) for key, default, _ in rows] == list(leaves(_values()))
    assert all(description.strip() for _, _, description in rows)


def test_readme_generation_refuses_a_value_without_a_description() -> None:
    text = (CHART / "values.yaml").read_text() + "newValue: 1\n"
    with pytest.raises(MissingDescription, match="newValue: no `# -- ` description"):
        render_readme((CHART / "README.md").read_text(), text)


# --- rendering with the real helm -----------------------------------------------------------------


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def _volumes(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    return {v["name"]: v for v in pod["volumes"]}


def _mounts(objects: list[dict[str, Any]]) -> dict[str, str]:
    """Mount path -> volume name."""
    return {m["mountPath"]: m["name"] for m in _container(objects)["volumeMounts"]}


def _env(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in _container(objects).get("env", [])}


def _rendered_config(objects: list[dict[str, Any]], tmp_path: Path) -> Config:
    path = tmp_path / "config.yaml"
    path.write_text(one(objects, "ConfigMap")["data"]["config.yaml"])
    return load_config(path)


VARIANT_FILES = sorted((CHART / "ci").glob("*-values.yaml"))


@pytest.mark.parametrize("values", [None, *VARIANT_FILES], ids=lambda v: v.name if v else "defaults")
def test_helm_lint_is_clean(helm: str, values: Path | None) -> None:
    flags = ["--values", str(values)] if values else ["--set", "node.name=docker-1"]
    out = subprocess.run(
        [helm, "lint", "--strict", str(CHART), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[WARNING]" not in out.stdout and "[INFO]" not in out.stdout, out.stdout


@pytest.mark.parametrize("values", VARIANT_FILES, ids=lambda v: v.name)
def test_variant_values_render_valid_objects_and_a_config_the_provider_loads(
    helm: str, tmp_path: Path, values: Path
) -> None:
    assert len(VARIANT_FILES) >= 4
    objects = render(helm, f"--values={values}")  # render validates each object
    _rendered_config(objects, tmp_path)


def test_chart_metadata_and_kube_version_range_are_the_supported_minors() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    # No public address exists yet: no home or sources rather than a placeholder; the icon is
    # docs/icon.svg as a data URL.
    assert not {"home", "sources"} & chart.keys() and chart["maintainers"][0]["name"]
    icon = base64.b64encode((REPO / "docs" / "icon.svg").read_bytes()).decode()
    assert chart["icon"] == f"data:image/svg+xml;base64,{icon}"
    low, high = SUPPORTED_MINORS[0], f"{KUBE_MAJOR}.{int(KUBE_MINOR) + 1}"
    assert chart["kubeVersion"] == f">={low}.0-0 <{high}.0-0"


@pytest.mark.parametrize(
    ("sets", "port"), [((), 10248), (("config.kubeletServer.healthzListen=:10300",), 10300)]
)
def test_the_providers_container_is_probed_on_its_healthz_port(
    helm: str, tmp_path: Path, sets: tuple[str, ...], port: int
) -> None:
    objects = render(helm, *sets)
    container = _container(objects)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"kubelet": 10250, "healthz": port}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "healthz"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "healthz"}
    assert _rendered_config(objects, tmp_path).kubelet_server.healthz_listen.endswith(f":{port}")


def test_service_and_service_monitor_are_off_by_default_and_scrape_metrics(helm: str) -> None:
    assert not [o for o in render(helm) if o["kind"] in ("Service", "ServiceMonitor")]
    objects = render(helm, "serviceMonitor.enabled=true", "serviceMonitor.labels.release=prom")
    service, monitor = one(objects, "Service"), one(objects, "ServiceMonitor")
    selector = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= selector.items()
    port = {"name": "kubelet", "port": 10250, "targetPort": "kubelet", "protocol": "TCP"}
    assert service["spec"]["ports"] == [port]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["metadata"]["labels"]["release"] == "prom"
    [endpoint] = monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["scheme"], endpoint["path"]) == ("kubelet", "https", "/metrics")
    assert one(render(helm, "service.enabled=true"), "Service")


def test_service_monitor_authorizes_with_a_token_secret_allowed_only_this_nodes_metrics(helm: str) -> None:
    """`authorization` (prometheus-operator's SafeAuthorization: type and a Secret key), not the
    deprecated bearerTokenFile; by default the chart's own reader account's token."""
    objects = render(helm, "serviceMonitor.enabled=true")
    [endpoint] = one(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert "bearerTokenFile" not in endpoint
    secret = one(objects, "Secret")
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": secret["metadata"]["name"], "key": "token"},
    }
    name = secret["metadata"]["name"]
    by_name = {o["kind"]: o for o in objects if o["metadata"]["name"] == name}
    assert sorted(by_name) == ["ClusterRole", "ClusterRoleBinding", "Secret", "ServiceAccount"]
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == name
    assert by_name["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes/metrics"], "resourceNames": ["docker-1"], "verbs": ["get"]}
    ]
    binding = by_name["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == name
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": "vk-system"}]

    objects = render(
        helm,
        "serviceMonitor.enabled=true",
        "serviceMonitor.authorization.secretName=prom-token",
        "serviceMonitor.authorization.key=jwt",
    )
    [endpoint] = one(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["authorization"]["credentials"] == {"name": "prom-token", "key": "jwt"}
    assert not [o for o in objects if o["kind"] == "Secret"], "an existing Secret: nothing created"


def test_provider_pod_is_node_critical_and_the_quota_for_it_is_optional(helm: str) -> None:
    objects = render(helm)
    assert (
        one(objects, "Deployment")["spec"]["template"]["spec"]["priorityClassName"] == "system-node-critical"
    )
    assert not [o for o in objects if o["kind"] == "ResourceQuota"]
    quota = one(render(helm, "priorityQuota.create=true"), "ResourceQuota")
    assert quota["metadata"]["namespace"] == "vk-system"
    assert quota["spec"] == {
        "hard": {"pods": "2"},
        "scopeSelector": {
            "matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["system-node-critical"]}
            ]
        },
    }
    none = render(helm, "priorityClassName=", "priorityQuota.create=true")
    assert "priorityClassName" not in one(none, "Deployment")["spec"]["template"]["spec"]
    assert not [o for o in none if o["kind"] == "ResourceQuota"], "no class, nothing to allow"


@pytest.mark.parametrize(
    ("sets", "kubelet", "healthz"),
    [
        ((), 10350, 10348),
        (("hostNetworkPorts.kubelet=11250", "hostNetworkPorts.healthz=11248"), 11250, 11248),
        (
            ("config.kubeletServer.listen=0.0.0.0:12250", "config.kubeletServer.healthzListen=:12248"),
            12250,
            12248,
        ),
    ],
)
def test_host_network_moves_the_ports_off_the_host_kubelets(
    helm: str, tmp_path: Path, sets: tuple[str, ...], kubelet: int, healthz: int
) -> None:
    """The host's kubelet holds 10250 and 10248: with hostNetwork the container ports, the
    Service and the configuration the provider reads name the same other ports."""
    objects = render(helm, "hostNetwork=true", "service.enabled=true", *sets)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert (pod["hostNetwork"], pod["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    ports = {p["name"]: p["containerPort"] for p in _container(objects)["ports"]}
    assert ports == {"kubelet": kubelet, "healthz": healthz}
    assert one(objects, "Service")["spec"]["ports"][0]["port"] == kubelet
    server = _rendered_config(objects, tmp_path).kubelet_server
    assert server.listen.endswith(f":{kubelet}") and server.healthz_listen.endswith(f":{healthz}")


def test_without_host_network_the_pod_keeps_its_own_network_and_the_kubelet_ports(helm: str) -> None:
    objects = render(helm)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert "hostNetwork" not in pod and "dnsPolicy" not in pod
    assert {p["name"]: p["containerPort"] for p in _container(objects)["ports"]} == {
        "kubelet": 10250,
        "healthz": 10248,
    }


def test_default_render_is_valid_and_configures_the_named_node(helm: str, tmp_path: Path) -> None:
    objects = render(helm)
    assert sorted(o["kind"] for o in objects) == sorted(
        [
            "ServiceAccount",
            "ConfigMap",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
        ]
    )
    defaults = Config()
    expected = replace(
        defaults,
        node=replace(defaults.node, name="docker-1"),
        kubelet_server=replace(
            defaults.kubelet_server, client_ca_file=CLUSTER_CA, healthz_listen="0.0.0.0:10248"
        ),
    )
    assert _rendered_config(objects, tmp_path) == expected


@pytest.mark.parametrize(
    ("sets", "client_ca"),
    [
        ((), CLUSTER_CA),
        (("config.kubeletServer.auth=x509",), CLUSTER_CA),
        (("config.kubeletServer.clientCAFile=/etc/kubelet-ca/ca.crt",), "/etc/kubelet-ca/ca.crt"),
        (("config.kubeletServer.auth=none",), ""),
    ],
)
def test_kubelet_api_trusts_the_cluster_ca_unless_told_otherwise(
    helm: str, tmp_path: Path, sets: tuple[str, ...], client_ca: str
) -> None:
    """The apiserver's kubelet client certificate is signed by the cluster CA on standard
    clusters (and on the real control plane of the tests: vk_sandbox/real), which is
    the service account's ca.crt: with it logs/exec through the apiserver authenticate."""
    assert _rendered_config(render(helm, *sets), tmp_path).kubelet_server.client_ca_file == client_ca


def test_set_config_values_reach_the_config_file(helm: str, tmp_path: Path) -> None:
    objects = render(helm, "config.logging.format=json", "config.docker.maxConcurrency=4")
    config = _rendered_config(objects, tmp_path)
    assert (config.logging.format, config.docker.max_concurrency) == ("json", 4)


def test_unknown_config_keys_skipping_the_schema_reach_the_provider_to_be_refused(
    helm: str, tmp_path: Path
) -> None:
    objects = render(helm, "config.dockr.host=x", "--skip-schema-validation")
    text = one(objects, "ConfigMap")["data"]["config.yaml"]
    assert yaml.safe_load(text)["dockr"] == {"host": "x"}
    with pytest.raises(ConfigError, match=r"dockr: unknown key"):
        _rendered_config(objects, tmp_path)


def test_deployment_runs_one_provider_with_the_config_file_and_downward_api(helm: str) -> None:
    objects = render(helm)
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    container = _container(objects)
    assert container["image"] == "vk-provider:0.1.0"
    assert container["args"] == ["run", "--config", f"{CONFIG_MOUNT}/config.yaml"]
    assert _mounts(objects)[CONFIG_MOUNT] == "config"
    configmap = one(objects, "ConfigMap")["metadata"]["name"]
    assert _volumes(objects)["config"]["configMap"]["name"] == configmap
    assert _env(objects)["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert "NODE_IP" not in _env(objects), "status.hostIP would point the apiserver at the host's kubelet"
    assert container["ports"] == [
        {"name": "kubelet", "containerPort": 10250, "protocol": "TCP"},
        {"name": "healthz", "containerPort": 10248, "protocol": "TCP"},
    ]
    template = deployment["spec"]["template"]
    assert template["spec"]["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    assert template["metadata"]["annotations"]["checksum/config"]


def test_kubelet_port_follows_kubelet_server_listen(helm: str) -> None:
    objects = render(helm, "config.kubeletServer.listen=[::]:11250")
    assert _container(objects)["ports"][0]["containerPort"] == 11250


def test_config_change_changes_the_pod_template(helm: str) -> None:
    def checksum(*sets: str) -> str:
        deployment = one(render(helm, *sets), "Deployment")
        value: str = deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return value

    assert checksum() != checksum("config.logging.level=debug")


def test_local_engine_mounts_the_socket_and_the_state_dir_at_host_paths(helm: str) -> None:
    objects = render(helm)
    volumes, mounts = _volumes(objects), _mounts(objects)
    assert volumes["docker-socket"]["hostPath"] == {"path": "/var/run/docker.sock", "type": "Socket"}
    assert mounts["/var/run/docker.sock"] == "docker-socket"
    assert _env(objects)["DOCKER_HOST"]["value"] == "unix:///var/run/docker.sock"
    # The engine bind-mounts termination-message files from stateDir: same path both sides.
    state_dir = Config().docker.state_dir
    assert volumes["state"]["hostPath"] == {"path": state_dir, "type": "DirectoryOrCreate"}
    assert mounts[state_dir] == "state"


def test_subpath_mounts_make_the_provider_privileged_with_bidirectional_state(helm: str) -> None:
    """Off by default: no privilege, no propagation (the provider refuses writable subPaths).
    On: the provider's bind mounts under stateDir reach the host's engine."""
    default = _container(render(helm))
    assert "privileged" not in default["securityContext"]
    assert all("mountPropagation" not in m for m in default["volumeMounts"])
    objects = render(helm, "engine.subPathMounts=true")
    container = _container(objects)
    assert container["securityContext"]["privileged"] is True
    assert "allowPrivilegeEscalation" not in container["securityContext"], (
        "the API refuses it with privileged"
    )
    state = next(m for m in container["volumeMounts"] if m["name"] == "state")
    assert state["mountPropagation"] == "Bidirectional"
    assert _values()["securityContext"]["allowPrivilegeEscalation"] is False, "the values are not changed"


def test_unix_docker_host_is_mounted_from_its_path(helm: str) -> None:
    objects = render(helm, "config.docker.host=unix:///run/user/1000/docker.sock")
    assert _volumes(objects)["docker-socket"]["hostPath"]["path"] == "/run/user/1000/docker.sock"
    assert _env(objects)["DOCKER_HOST"]["value"] == "unix:///run/user/1000/docker.sock"


def test_remote_engine_with_tls_mounts_no_host_path(helm: str, tmp_path: Path) -> None:
    objects = render(helm, "config.docker.host=tcp://10.0.0.5:2376", "engine.tlsSecretName=docker-certs")
    volumes = _volumes(objects)
    assert not [name for name, v in volumes.items() if "hostPath" in v]
    assert volumes["docker-tls"]["secret"] == {"secretName": "docker-certs"}
    env = _env(objects)
    assert "DOCKER_HOST" not in env, "docker.host in the config file names the engine"
    assert env["DOCKER_TLS_VERIFY"]["value"] == "1"
    assert _mounts(objects)[env["DOCKER_CERT_PATH"]["value"]] == "docker-tls"
    assert _rendered_config(objects, tmp_path).docker.host == "tcp://10.0.0.5:2376"


def test_scheduling_values_reach_the_providers_pod(helm: str) -> None:
    objects = render(
        helm,
        "nodeSelector.docker=present",
        "tolerations[0].key=dedicated",
        "tolerations[0].operator=Exists",
    )
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"docker": "present"}
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (("nodeName=docker-1",), "Additional property nodeName is not allowed"),
        (("node.name=Docker_1",), "node.name: Does not match pattern"),
        (("node.name=docker-1", "config.node.name=docker-2"), "config.node.name"),
        (("node.name=docker-1", "engine.socket=/x"), "Additional property socket is not allowed"),
        (
            ("node.name=docker-1", "config.docker.maxConcurency=4"),
            "config.docker: Additional property maxConcurency is not allowed",
        ),
        (("node.name=docker-1", "config.dockr.host=x"), "config: Additional property dockr is not allowed"),
        (("node.name=docker-1", "config.logging.level=loud"), "config.logging.level"),
        (("node.name=docker-1", "config.docker.maxConcurrency=0"), "config.docker.maxConcurrency"),
        (("node.name=docker-1", "config.kubeletServer.listen=10250"), "config.kubeletServer.listen"),
        (("node.name=docker-1", "config.node.taints[0].effect=NoSchedule"), "config.node.taints.0"),
    ],
)
def test_values_schema_refuses_typos_and_bad_node_names(
    helm: str, sets: tuple[str, ...], message: str
) -> None:
    out = helm_template(helm, *sets)
    assert out.returncode != 0, "helm rendered values the schema should refuse"
    assert message in out.stderr


def test_values_schema_is_the_fresh_generation_from_the_config_table() -> None:
    """`python -m vk_provider.chart_schema` rewrites values.schema.json; run it after changing
    the configuration table (vk_provider/config_load.py)."""
    committed = (CHART / "values.schema.json").read_text()
    assert committed == render_schema(values_schema(json.loads(committed)))


def test_values_schema_takes_the_chart_defaults_and_every_example_key() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.validate(_values(), schema)
    config_schema = config_json_schema()
    jsonschema.validate(yaml.safe_load(EXAMPLE.read_text()), config_schema)
    jsonschema.validate(effective_config(Config()), config_schema)


# --- NOTES.txt --------------------------------------------------------------------------------------


def _render_notes(helm: str, tmp_path: Path, *sets: str) -> str:
    """NOTES.txt as `helm install` prints it: rendered through `tpl` in a copy of the chart."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "files").mkdir()
    shutil.copy(chart / "templates" / "NOTES.txt", chart / "files" / "notes.txt")
    (chart / "templates" / "notes-check.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n"
        'data:\n  notes: {{ tpl (.Files.Get "files/notes.txt") . | quote }}\n'
    )
    objects = render(helm, *sets, chart=chart)
    notes: str = next(o for o in objects if o["metadata"]["name"] == "notes")["data"]["notes"]
    return notes


def _pod_spec_in(notes: str) -> dict[str, Any]:
    """The indented `spec:` block NOTES.txt shows, parsed as YAML."""
    lines = notes.splitlines()
    start = lines.index("  spec:")
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if line and not line.startswith("    "):
            break
        block.append(line)
    spec: dict[str, Any] = yaml.safe_load("\n".join(block))["spec"]
    return spec


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    """k8s.io/api/core/v1 Toleration.ToleratesTaint."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


@pytest.mark.parametrize(
    "sets",
    [
        (),
        ("config.node.taints[0].key=example.com/docker", "config.node.taints[0].effect=NoExecute"),
    ],
)
def test_notes_show_a_pod_spec_that_lands_on_the_node(
    helm: str, tmp_path: Path, sets: tuple[str, ...]
) -> None:
    notes = _render_notes(helm, tmp_path, *sets)
    spec = _pod_spec_in(notes)
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "docker-1"}
    taints = yaml.safe_load(one(render(helm, *sets), "ConfigMap")["data"]["config.yaml"])["node"]["taints"]
    assert taints
    for taint in taints:
        assert _tolerates(spec["tolerations"], taint), taint
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {**spec, "containers": [{"name": "c", "image": "busybox"}]},
    }
    validate(pod)
    assert "root-equivalent" in notes
    assert "kubectl label namespace vk-system pod-security.kubernetes.io/enforce=privileged" in notes
    assert "helm test vk -n vk-system --logs" in notes
    assert "stops the provider, removes the node's\ncontainers from the engine and deletes the Node" in notes
    assert "set apiServer.host and apiServer.port" in notes


def test_notes_without_the_uninstall_hook_say_what_to_remove_by_hand(helm: str, tmp_path: Path) -> None:
    notes = _render_notes(helm, tmp_path, "uninstallHook.enabled=false", "apiServer.host=10.0.0.1")
    assert "kubectl delete node docker-1" in notes
    assert "vk-provider clean --config" in notes
    assert "apiServer.host" not in notes


def test_notes_for_a_remote_engine_name_it_and_warn_of_no_socket(helm: str, tmp_path: Path) -> None:
    notes = _render_notes(
        helm, tmp_path, "config.docker.host=tcp://10.0.0.5:2376", "--set-json=config.node.taints=[]"
    )
    assert "tcp://10.0.0.5:2376" in notes
    assert "root-equivalent" not in notes
    assert "enforce=privileged" not in notes and "baseline" in notes
    assert "tolerations" not in _pod_spec_in(notes)
