"""The monitoring add-ons of a real cluster, run as host processes beside a real-plane sandbox.

What lives here: `go_tool(name)` (a binary of tools/NAME, scripts/ensure-go-tool.sh),
`service_account_kubeconfig` (a ServiceAccount with its RBAC and a token kubeconfig, as a pod of
that account would get), `metrics_server` (metrics-server v0.8.0 registered as the
`v1beta1.metrics.k8s.io` APIService: the objects of its `manifests/base`, with the Service's
Endpoints at this host's address because the process runs here, not in a pod),
`kube_state_metrics`, and `http_get`. Prometheus itself is in tests/support/prometheus.py.

The objects follow upstream's manifests (sigs.k8s.io/metrics-server@v0.8.0 manifests/base/*.yaml,
kube-state-metrics' examples/standard/cluster-role.yaml), narrowed to what the tests need.
Must not: assert anything about the product; the tests do that.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.polling import until
from tests.support.sandbox_process import Sandbox
from vk_common.ports import free_port
from vk_provider.node.agent import detect_node_ip
from vk_sandbox.kubeconfig import Credentials, write_kubeconfig

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "kube-system"


def go_tool(name: str) -> str:
    """The path of tools/NAME's program, built (and cached) by scripts/ensure-go-tool.sh."""
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure-go-tool.sh"), name],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, f"scripts/ensure-go-tool.sh {name} failed:\n{built.stderr}"
    return built.stdout.strip().splitlines()[-1]


def _binding(kind: str, name: str, role_kind: str, role: str, account: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if kind == "RoleBinding":
        metadata["namespace"] = NAMESPACE
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}],
    }


def _cluster_role(name: str, rules: list[dict[str, Any]], **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata,
        "rules": rules,
    }


def apply(sandbox: Sandbox, objects: list[dict[str, Any]]) -> None:
    sandbox.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))


def service_account_kubeconfig(
    sandbox: Sandbox, account: str, rules: list[dict[str, Any]], directory: Path
) -> Path:
    """ServiceAccount `account` in kube-system with a ClusterRole of `rules` bound to it, and a
    kubeconfig with a token of that account (`kubectl create token`, as a projected token)."""
    apply(
        sandbox,
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": NAMESPACE},
            },
            _cluster_role(f"vk-test:{account}", rules),
            _binding(
                "ClusterRoleBinding", f"vk-test:{account}", "ClusterRole", f"vk-test:{account}", account
            ),
        ],
    )
    token = sandbox.kubectl("create", "token", account, "-n", NAMESPACE, "--duration", "2h").stdout.strip()
    cluster = yaml.safe_load(sandbox.kubeconfig.read_text())["clusters"][0]["cluster"]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    credentials = Credentials(ca_file=Path(cluster["certificate-authority"]), token=token)
    path = write_kubeconfig(directory / "kubeconfig", cluster["server"], credentials)
    return path


@dataclass
class HostProcess:
    proc: subprocess.Popen[bytes]
    output: Path
    port: int

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.output.read_text(errors="replace").splitlines()[-lines:])

    def alive(self) -> bool:
        """True while it runs; an AssertionError with its last lines once it has exited."""
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.output.stem} exited with {self.proc.returncode}:\n{self.log_tail()}")
        return True


@contextlib.contextmanager
def host_process(args: list[str], output: Path, port: int) -> Iterator[HostProcess]:
    """`args` running with its output in `output` (a file, never an unread pipe); stopped after."""
    with output.open("wb") as sink:
        proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT)
    try:
        yield HostProcess(proc, output, port)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _metrics_server_objects(address: str, port: int) -> list[dict[str, Any]]:
    """manifests/base of metrics-server v0.8.0 minus the Deployment: the APIService, the auth
    bindings, the aggregated reader role, and the Service with Endpoints at this host."""
    meta = {"name": "metrics-server", "namespace": NAMESPACE, "labels": {"k8s-app": "metrics-server"}}
    return [
        _cluster_role(
            "system:aggregated-metrics-reader",
            [
                {
                    "apiGroups": ["metrics.k8s.io"],
                    "resources": ["pods", "nodes"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
            **{
                f"rbac.authorization.k8s.io/aggregate-to-{role}": "true" for role in ("view", "edit", "admin")
            },
        ),
        _binding(
            "RoleBinding",
            "metrics-server-auth-reader",
            "Role",
            "extension-apiserver-authentication-reader",
            "metrics-server",
        ),
        _binding(
            "ClusterRoleBinding",
            "metrics-server:system:auth-delegator",
            "ClusterRole",
            "system:auth-delegator",
            "metrics-server",
        ),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": meta,
            "subsets": [{"addresses": [{"ip": address}], "ports": [{"name": "https", "port": port}]}],
        },
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
            "spec": {
                "service": {"name": "metrics-server", "namespace": NAMESPACE},
                "group": "metrics.k8s.io",
                "version": "v1beta1",
                "insecureSkipTLSVerify": True,
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
            },
        },
    ]


# manifests/base/rbac.yaml's system:metrics-server.
METRICS_SERVER_RULES = [
    {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
]


@contextlib.contextmanager
def metrics_server(sandbox: Sandbox, directory: Path) -> Iterator[HostProcess]:
    """metrics-server serving `metrics.k8s.io` for the sandbox's cluster, until it is Available.

    The apiserver reaches it through the Service's Endpoints (the sandbox's apiserver routes
    aggregated APIs to endpoints, `--enable-aggregator-routing`), so it listens on this host's
    address, not on loopback (an Endpoints address may not be loopback). Flags as upstream's
    Deployment, plus `--kubelet-insecure-tls`: the provider's serving certificate is
    self-signed, as a kubelet's is without `serverTLSBootstrap` (docs/metrics.md)."""
    kubeconfig = service_account_kubeconfig(sandbox, "metrics-server", METRICS_SERVER_RULES, directory)
    address, port = detect_node_ip(), free_port()
    assert address != "127.0.0.1", "metrics-server needs a non-loopback address on this host"
    args = [
        go_tool("metrics-server"),
        *(
            f"--{flag}={kubeconfig}"
            for flag in ("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig")
        ),
        f"--bind-address={address}",
        f"--secure-port={port}",
        f"--cert-dir={directory / 'certs'}",
        "--kubelet-preferred-address-types=InternalIP",
        "--kubelet-use-node-status-port",
        "--kubelet-insecure-tls",
        "--metric-resolution=15s",
    ]
    # Its RBAC first: at start-up it reads the apiserver's requestheader CA from the
    # extension-apiserver-authentication ConfigMap and panics if it may not.
    apply(sandbox, _metrics_server_objects(address, port))
    account = f"system:serviceaccount:{NAMESPACE}:metrics-server"
    until(
        f"{account} may read the requestheader CA",
        lambda: (
            sandbox.kubectl(
                "auth",
                "can-i",
                "get",
                "configmaps/extension-apiserver-authentication",
                "-n",
                NAMESPACE,
                "--as",
                account,
                check=False,
            ).stdout.strip()
            == "yes"
        ),
    )
    with host_process(args, directory / "metrics-server.out", port) as server:
        available = "jsonpath={.status.conditions[?(@.type=='Available')].status}"
        until(
            lambda: f"APIService v1beta1.metrics.k8s.io Available (metrics-server: {server.log_tail(10)})",
            lambda: (
                server.alive()
                and sandbox.kubectl(
                    "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", available, check=False
                ).stdout
                == "True"
            ),
        )
        try:
            yield server
        finally:
            sandbox.kubectl(
                "delete", "apiservice", "v1beta1.metrics.k8s.io", "--ignore-not-found", check=False
            )


# kube-state-metrics' cluster role, narrowed to the two resources the tests ask it for.
KUBE_STATE_METRICS_RULES = [{"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["list", "watch"]}]


@contextlib.contextmanager
def kube_state_metrics(sandbox: Sandbox, directory: Path) -> Iterator[HostProcess]:
    """kube-state-metrics v2.20.0 for pods and nodes (`kube_pod_info`, `kube_node_info`, ...) on
    127.0.0.1, until its /metrics has a pod series."""
    kubeconfig = service_account_kubeconfig(
        sandbox, "kube-state-metrics", KUBE_STATE_METRICS_RULES, directory
    )
    port, telemetry = free_port(), free_port()
    args = [
        go_tool("kube-state-metrics"),
        f"--kubeconfig={kubeconfig}",
        "--resources=pods,nodes",
        *("--host=127.0.0.1", f"--port={port}"),
        *("--telemetry-host=127.0.0.1", f"--telemetry-port={telemetry}"),
    ]
    with host_process(args, directory / "kube-state-metrics.out", port) as ksm:
        until(
            lambda: f"kube-state-metrics serving kube_pod_info ({ksm.log_tail(10)})",
            lambda: (
                ksm.alive() and b"kube_pod_info{" in (http_get(f"http://127.0.0.1:{port}/metrics") or b"")
            ),
        )
        yield ksm


def http_get(url: str) -> bytes | None:
    """The body of a plain GET of `url`, or None when nothing answered it with a 2xx."""
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=10) as response:
        return bytes(response.read())
    return None


def metrics_api(sandbox: Sandbox, path: str) -> dict[str, Any]:
    """GET /apis/metrics.k8s.io/v1beta1/PATH through the apiserver, as the admin."""
    raw = sandbox.kubectl("get", "--raw", f"/apis/metrics.k8s.io/v1beta1/{path}", check=False)
    return json.loads(raw.stdout) if raw.returncode == 0 else {}
