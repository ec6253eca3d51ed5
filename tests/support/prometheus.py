"""Prometheus (Debian's package, scripts/ensure-prometheus.sh) scraping a real-plane sandbox's nodes
the way kube-prometheus-stack scrapes kubelets, and promtool's metrics linter.

What lives here: `KUBELET_PATHS`, `PROMETHEUS_RULES` (the RBAC kube-prometheus-stack gives its
Prometheus), `prometheus_config` (the four kubelet jobs of the stack's kubelet ServiceMonitor:
`/metrics`, `/metrics/cadvisor`, `/metrics/probes`, `/metrics/resource`, HTTPS with the
ServiceAccount's bearer token, `job="kubelet"`, a `metrics_path` and a `node` label; plus
kube-state-metrics), `RECORDING_RULES` (two of kube-prometheus's `k8s.rules`), `prometheus`
(the server until it is ready), `query` and `targets` (its HTTP API) and `promtool_check`.

The scrape jobs follow kube-prometheus-stack's charts/kube-prometheus-stack/templates/exporters/
kubelet/servicemonitor.yaml (`https: true`, `insecureSkipVerify: true`, honorLabels,
the `metrics_path` relabeling). The ServiceMonitor finds the nodes through the operator's
`kubelet` Endpoints (each node's InternalIP and kubelet port); Debian builds Prometheus without
its Kubernetes service discovery (`kubernetes_sd_configs` is not a known field there), so
`node_targets` writes the same addresses from the Node objects into a `file_sd_configs` file.
Must not: assert anything about the product; the tests do that.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.support.cluster_addons import HostProcess, host_process, http_get
from tests.support.polling import until
from vk_common.ports import free_port

KUBELET_PATHS = ("/metrics", "/metrics/cadvisor", "/metrics/probes", "/metrics/resource")
SCRAPE_SECONDS = 5

# kube-prometheus-stack's templates/prometheus/clusterrole.yaml (less ingresses).
PROMETHEUS_RULES = [
    {
        "apiGroups": [""],
        "resources": ["nodes", "nodes/metrics", "services", "endpoints", "pods"],
        "verbs": ["get", "list", "watch"],
    },
    {"nonResourceURLs": ["/metrics", "/metrics/cadvisor"], "verbs": ["get"]},
]

# kube-prometheus (kubernetes-mixin rules/apps.libsonnet, group k8s.rules.container_*): the
# per-container CPU and working set with the pod's node joined from kube-state-metrics.
_POD_NODE = (
    'topk by (cluster, namespace, pod) (1, max by (cluster, namespace, pod, node) (kube_pod_info{node!=""}))'
)
_CADVISOR = 'job="kubelet", metrics_path="/metrics/cadvisor", image!=""'
RECORDING_RULES = {
    "node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate": (
        "sum by (cluster, namespace, pod, container)"
        f" (irate(container_cpu_usage_seconds_total{{{_CADVISOR}}}[5m]))"
        f" * on (cluster, namespace, pod) group_left(node) {_POD_NODE}"
    ),
    "node_namespace_pod_container:container_memory_working_set_bytes": (
        f"container_memory_working_set_bytes{{{_CADVISOR}}}"
        f" * on (cluster, namespace, pod) group_left(node) {_POD_NODE}"
    ),
}


def node_targets(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """file_sd groups for `nodes` (Node objects): InternalIP and kubelet port, the `node` label."""
    groups = []
    for node in nodes:
        status = node["status"]
        address = next(a["address"] for a in status["addresses"] if a["type"] == "InternalIP")
        port = status["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        groups.append({"targets": [f"{address}:{port}"], "labels": {"node": node["metadata"]["name"]}})
    return groups


def _kubelet_job(path: str, targets: Path, token: Path) -> dict[str, Any]:
    return {
        "job_name": f"kubelet{path.replace('/', '-')}",
        "scheme": "https",
        "metrics_path": path,
        "honor_labels": True,
        "authorization": {"credentials_file": str(token)},
        "tls_config": {"insecure_skip_verify": True},
        "file_sd_configs": [{"files": [str(targets)]}],
        "relabel_configs": [
            {"target_label": "job", "replacement": "kubelet"},
            {"source_labels": ["__metrics_path__"], "target_label": "metrics_path"},
        ],
    }


def prometheus_config(
    targets: Path, token: Path, kube_state_metrics_port: int, rules: Path
) -> dict[str, Any]:
    """Scrape the kubelets listed in `targets` (node_targets) with `token`, and kube-state-metrics."""
    jobs = [_kubelet_job(path, targets, token) for path in KUBELET_PATHS]
    jobs.append(
        {
            "job_name": "kube-state-metrics",
            "honor_labels": True,
            "static_configs": [{"targets": [f"127.0.0.1:{kube_state_metrics_port}"]}],
        }
    )
    interval = f"{SCRAPE_SECONDS}s"
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(rules)],
        "scrape_configs": jobs,
    }


@contextlib.contextmanager
def prometheus(config: dict[str, Any], directory: Path) -> Iterator[HostProcess]:
    """Prometheus with `config` (and RECORDING_RULES in the file it names), until /-/ready."""
    directory.mkdir(parents=True, exist_ok=True)
    rules = {
        "groups": [
            {"name": "k8s.rules", "rules": [{"record": k, "expr": v} for k, v in RECORDING_RULES.items()]}
        ]
    }
    Path(config["rule_files"][0]).write_text(yaml.safe_dump(rules))
    (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
    checked = subprocess.run(
        ["promtool", "check", "config", str(directory / "prometheus.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    port = free_port()
    args = [
        "prometheus",
        f"--config.file={directory / 'prometheus.yml'}",
        f"--storage.tsdb.path={directory / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with host_process(args, directory / "prometheus.out", port) as server:
        until(
            lambda: f"Prometheus ready ({server.log_tail(10)})",
            lambda: server.alive() and _get(server, "/-/ready") is not None,
        )
        yield server


def _get(server: HostProcess, path: str) -> bytes | None:
    return http_get(f"http://127.0.0.1:{server.port}{path}")


def _api(server: HostProcess, path: str) -> Any:
    body = _get(server, path)
    assert body is not None, f"Prometheus did not answer {path}: {server.log_tail()}"
    answer = json.loads(body)
    assert answer.get("status") == "success", answer
    return answer["data"]


def targets(server: HostProcess) -> list[dict[str, Any]]:
    """The active targets (`/api/v1/targets`): scrapePool, labels, health, lastError."""
    return list(_api(server, "/api/v1/targets?state=active")["activeTargets"])


def query(server: HostProcess, promql: str) -> list[dict[str, Any]]:
    """An instant query's result vector (`/api/v1/query`)."""
    return list(_api(server, "/api/v1/query?" + urllib.parse.urlencode({"query": promql}))["result"])


def promtool_check(exposition: str) -> subprocess.CompletedProcess[str]:
    """`promtool check metrics` on one scrape's text: its lint problems on stdout/stderr."""
    return subprocess.run(
        ["promtool", "check", "metrics"], input=exposition, capture_output=True, text=True, check=False
    )
