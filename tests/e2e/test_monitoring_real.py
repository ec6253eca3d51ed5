"""The cluster's usual monitoring against a vk-provider node on the real control plane.

metrics-server v0.8.0 (built from its Go module) behind the `metrics.k8s.io` APIService, so the
real `kubectl top` shows the node and its pod; kube-state-metrics v2.20.0 and Prometheus
(Debian's 2.42) scraping the node's four kubelet endpoints as kube-prometheus-stack does, with
its Prometheus' RBAC (`nodes/metrics`, through the kubelet API's fine-grained authorization):
every target up, kube-prometheus' recording rules giving the pod's CPU and working set on the
node, and `promtool check metrics` clean on every endpoint. The add-ons run as host processes
beside one `vk-provider sandbox --control-plane real` (tests/support/cluster_addons.py,
tests/support/prometheus.py).
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import prometheus as prom
from tests.support.cluster_addons import (
    HostProcess,
    kube_state_metrics,
    metrics_api,
    metrics_server,
    service_account_kubeconfig,
)
from tests.support.manifests import burner
from tests.support.polling import until
from tests.support.raw_clients import insecure_context
from tests.support.sandbox_process import Sandbox, module_sandbox, pod_manifest

pytestmark = [pytest.mark.kubectl, pytest.mark.docker, pytest.mark.real_only]

POD = "busy"
DEADLINE = 150.0  # two metrics-server or Prometheus scrapes after the pod starts, on a loaded machine


sandbox = module_sandbox("monitoring")


@pytest.fixture(scope="module", autouse=True)
def busy(sandbox: Sandbox, test_images: dict[str, str]) -> None:
    """Pod `busy`: one container burning a little CPU (limited to 100m), with a readiness probe."""
    container = burner(readinessProbe={"exec": {"command": ["true"]}, "periodSeconds": 2})
    sandbox.apply(pod_manifest(POD, sandbox.node, [container]))
    ready = "jsonpath={.status.conditions[?(@.type=='Ready')].status}"
    until(
        f"pod {POD} Ready",
        lambda: sandbox.kubectl("get", "pod", POD, "-o", ready, check=False).stdout == "True",
    )


@pytest.fixture(scope="module")
def addons_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("addons")


def test_kubectl_top_shows_the_node_and_its_pod_through_metrics_server(
    sandbox: Sandbox, addons_dir: Path
) -> None:
    with metrics_server(sandbox, addons_dir / "metrics-server") as server:
        until(
            lambda: f"metrics of pod {POD} ({server.log_tail(10)})",
            lambda: metrics_api(sandbox, f"namespaces/default/pods/{POD}").get("containers"),
            DEADLINE,
        )
        top_pod = sandbox.kubectl("top", "pod", POD, "--containers").stdout
        row = next(line.split() for line in top_pod.splitlines() if line.startswith(POD))
        assert row[1] == "burn" and re.fullmatch(r"\d+m", row[2]) and re.fullmatch(r"\d+Mi", row[3]), top_pod
        assert 0 < int(row[2][:-1]) <= 150, f"the pod burns under its 100m limit: {top_pod}"

        until(
            lambda: f"metrics of node {sandbox.node} ({server.log_tail(10)})",
            lambda: metrics_api(sandbox, f"nodes/{sandbox.node}").get("usage"),
            DEADLINE,
        )
        top_node = sandbox.kubectl("top", "node", sandbox.node).stdout
        cells = next(line.split() for line in top_node.splitlines() if line.startswith(sandbox.node))
        assert re.fullmatch(r"\d+m", cells[1]) and re.fullmatch(r"\d+Mi", cells[3]), top_node


@pytest.fixture(scope="module")
def prometheus(sandbox: Sandbox, addons_dir: Path) -> Iterator[HostProcess]:
    directory = addons_dir / "prometheus"
    service_account_kubeconfig(sandbox, "prometheus", prom.PROMETHEUS_RULES, directory)
    nodes = json.loads(sandbox.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    (directory / "nodes.json").write_text(json.dumps(prom.node_targets(nodes)))
    with kube_state_metrics(sandbox, addons_dir / "kube-state-metrics") as ksm:
        config = prom.prometheus_config(
            directory / "nodes.json", directory / "token", ksm.port, directory / "rules.yaml"
        )
        with prom.prometheus(config, directory) as server:
            yield server


def test_prometheus_scrapes_every_kubelet_endpoint_of_the_node(
    sandbox: Sandbox, prometheus: HostProcess
) -> None:
    def all_up() -> list[dict[str, Any]] | None:
        found = prom.targets(prometheus)
        kubelet = [t for t in found if t["labels"].get("node") == sandbox.node]
        paths = {t["labels"].get("metrics_path") for t in kubelet}
        if paths == set(prom.KUBELET_PATHS) and all(t["health"] == "up" for t in found):
            return found
        return None

    found = until(
        lambda: (
            "every target up: "
            + str([(t["scrapePool"], t["health"], t["lastError"]) for t in prom.targets(prometheus)])
        ),
        all_up,
        DEADLINE,
    )
    assert {t["labels"]["job"] for t in found} == {"kubelet", "kube-state-metrics"}


@pytest.mark.parametrize(
    "series",
    [
        'container_cpu_usage_seconds_total{job="kubelet",metrics_path="/metrics/cadvisor",pod="busy",container="burn"}',
        'container_memory_working_set_bytes{job="kubelet",metrics_path="/metrics/cadvisor",pod="busy",container="burn"}',
        'prober_probe_total{job="kubelet",metrics_path="/metrics/probes",pod="busy",probe_type="Readiness"}',
        'container_cpu_usage_seconds_total{job="kubelet",metrics_path="/metrics/resource",pod="busy"}',
        'kubelet_running_pods{job="kubelet",metrics_path="/metrics"}',
    ],
)
def test_prometheus_has_the_series_kube_prometheus_queries(
    sandbox: Sandbox, prometheus: HostProcess, series: str
) -> None:
    result = until(f"series {series}", lambda: prom.query(prometheus, series), DEADLINE)
    assert all(r["metric"]["node"] == sandbox.node for r in result), result


@pytest.mark.parametrize("record", sorted(prom.RECORDING_RULES))
def test_kube_prometheus_recording_rules_give_the_pod_on_the_node(
    sandbox: Sandbox, prometheus: HostProcess, record: str
) -> None:
    selector = f'{record}{{namespace="default",pod="{POD}",container="burn"}}'
    result = until(f"recording rule {selector}", lambda: prom.query(prometheus, selector), DEADLINE)
    assert [r["metric"]["node"] for r in result] == [sandbox.node], result
    assert float(result[0]["value"][1]) > 0, result


@pytest.mark.parametrize("path", prom.KUBELET_PATHS)
def test_promtool_finds_nothing_to_lint_on_each_endpoint(
    sandbox: Sandbox, prometheus: HostProcess, addons_dir: Path, path: str
) -> None:
    """What Prometheus scraped, fetched again with its token: `promtool check metrics` is clean."""
    port = sandbox.kubectl(
        "get", "node", sandbox.node, "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}"
    )
    token = (addons_dir / "prometheus" / "token").read_text()
    request = urllib.request.Request(
        f"https://127.0.0.1:{port.stdout}{path}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30, context=insecure_context()) as response:
        exposition = response.read().decode()
    assert exposition.strip(), path
    linted = prom.promtool_check(exposition)
    assert linted.returncode == 0 and not (linted.stdout + linted.stderr).strip(), (
        linted.stdout + linted.stderr
    )
