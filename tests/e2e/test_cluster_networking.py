"""`vk-provider sandbox --control-plane real --cluster-network`: a cluster, not only a control plane.

What a user sees with kubectl (issue 25 items 4 and 5, docs/networking.md): the `kubernetes`
Service's endpoint is this host's advertised address, every Node gets a podCIDR, and from a
pod on a virtual node `kubernetes.default.svc.cluster.local` and a Service of its namespace (by
its short name) resolve through CoreDNS behind `kube-dns`, and the Service answers on its
ClusterIP, from the pod and from the host (kube-proxy). Once the sandbox stops, the host's
routes and kube-proxy's iptables chains are gone. One sandbox for the module (it takes the
host's cluster-network lock); root only (kube-proxy and routes).

Across the two nodes (each node's pods on an engine network of its own, its podCIDR), a pod
reaches a pod of the other node by its address, and that pod sees the client's own address (no
NAT between pods), through a Service by ClusterIP and by short name too (`pod_forwarding`).
Each test runs in both pod-network modes (`--pod-network docker|cni`); `make test` runs the
Docker mode's but the webhook's, `make test-cluster` all (the others are marked `cluster_full`).
From this host: a NodePort, a hostPort and `kubectl port-forward svc/...`; a headless Service's
name and a StatefulSet pod's stable name resolve from a pod of the other node; the apiserver
calls a validating webhook served by a pod on a node through its Service.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.kubectl import KUBECTL, port_forward
from tests.support.planes import REPO, ensure_kube_bin, launch_sandbox, stop_process
from tests.support.polling import until
from vk_common.ports import free_port
from vk_provider.runtime.docker.pod_network import pod_network_name
from vk_sandbox.bridge_address import bridge_gateway
from vk_sandbox.pki.authority import SandboxPKI
from vk_sandbox.real.components import CLUSTER_CIDR, DNS_SERVICE_IP, NODE_CIDR_MASK_SIZE, SERVICE_IP
from vk_sandbox.real.host_network import EMPTY_INTERFACE, advertise_address
from vk_sandbox.real.pod_forwarding import COMMENT

pytestmark = [
    pytest.mark.docker,
    pytest.mark.kubectl,
    pytest.mark.real_only,
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="the cluster network needs root (kube-proxy, routes)"),
]

NODES = ("cluster-1", "cluster-2")
TOLERATE = [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}]
HOST_PORT = 28099  # below the NodePort range (30000-32767), which kube-proxy owns


@dataclass
class Cluster:
    kubeconfig: Path

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        run = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert run.returncode == 0 or not check, f"kubectl {' '.join(args)}: {run.stderr}"
        return run.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", "-o", "json", *args))

    def apply(self, *objects: dict[str, Any]) -> None:
        self.kubectl(
            "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        )


def _coredns_image() -> str:
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure-coredns.sh")], capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, f"scripts/ensure-coredns.sh failed:\n{built.stderr}"
    return built.stdout.strip().splitlines()[-1]


def _host_network_state() -> str:
    """What the cluster network changes on this host: routes, kube-proxy's chains, the pod
    forwarding rules, route_localnet."""
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True, check=True).stdout
    chains = subprocess.run(
        ["iptables", "-t", "nat", "-S"], capture_output=True, text=True, check=True
    ).stdout
    forwarding = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return "\n".join(
        [line.split(":")[1] for line in links.splitlines() if "vkcni" in line]
        + [line for line in routes.splitlines() if EMPTY_INTERFACE in line or CLUSTER_CIDR in line]
        + [line for line in chains.splitlines() if "KUBE-SERVICES" in line or COMMENT in line]
        + [line for line in forwarding.splitlines() if COMMENT in line]
        + [Path("/proc/sys/net/ipv4/conf/all/route_localnet").read_text().strip()]
    )


@pytest.fixture(scope="module", params=["docker", pytest.param("cni", marks=pytest.mark.cluster_full)])
def cluster(
    control_plane: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """The sandbox for the module (`control_plane`: the real tier only, by the module's mark), its
    pods on Docker networks or on the bridges of the CNI configuration the sandbox writes."""
    pod_network = str(request.param)
    if pod_network == "cni":
        subprocess.run(["bash", str(REPO / "scripts" / "ensure-cni-plugins.sh")], check=True, timeout=600)
    before = _host_network_state()
    directory = tmp_path_factory.mktemp("cluster")
    state = directory / "state"
    output = directory / "sandbox.out"
    gateway = bridge_gateway()
    assert gateway is not None, "the engine's bridge has no gateway address"
    args = [
        *("--control-plane", "real", "--cluster-network", "--kube-bin", ensure_kube_bin()),
        *("--coredns-image", _coredns_image(), "--state-dir", str(state), "--port", str(free_port())),
        *("--nodes", str(len(NODES)), "--node-prefix", "cluster-", "--node-address", gateway, "--clean"),
        *("--pod-network", pod_network),
    ]
    proc = launch_sandbox(args, output)

    def started() -> bool:
        text = output.read_text(errors="replace")
        assert proc.poll() is None, f"the sandbox exited:\n{text[-3000:]}"
        return "API server at" in text

    try:
        until("the cluster sandbox", started, deadline=300)
        yield Cluster(state / "kubeconfig")
    finally:
        stop_process(proc)
        for node in NODES:
            subprocess.run(
                ["docker", "network", "rm", pod_network_name(node)], capture_output=True, check=False
            )
    # Torn down with the sandbox: the routes and kube-proxy's chains; no sysctl changed.
    assert _host_network_state() == before, output.read_text(errors="replace")[-3000:]


def test_the_kubernetes_service_has_the_advertised_address_and_nodes_get_pod_cidrs(cluster: Cluster) -> None:
    slices = cluster.get("endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes")
    addresses = [a for s in slices["items"] for e in s.get("endpoints") or [] for a in e["addresses"]]
    assert addresses == [advertise_address()]
    assert cluster.get("service", "kubernetes")["spec"]["clusterIP"] == SERVICE_IP

    def cidrs() -> dict[str, str]:
        nodes = cluster.get("nodes")["items"]
        found = {n["metadata"]["name"]: n["spec"].get("podCIDR", "") for n in nodes}
        return found if len(found) == len(NODES) and all(found.values()) else {}

    found = until("podCIDRs on both nodes", cidrs, deadline=120)
    networks = [ipaddress.IPv4Network(c) for c in found.values()]
    assert all(n.subnet_of(ipaddress.IPv4Network(CLUSTER_CIDR)) for n in networks)
    assert {n.prefixlen for n in networks} == {NODE_CIDR_MASK_SIZE}
    assert len(set(networks)) == len(NODES)


def _pod(name: str, node: str, command: list[str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": TOLERATE,
            "containers": [
                {"name": "c", "image": "vk-test/busybox:1", "imagePullPolicy": "Never", "command": command}
            ],
        },
    }


def test_a_pod_resolves_cluster_names_and_reaches_a_cluster_ip(cluster: Cluster) -> None:
    def coredns_node() -> str:
        pods = cluster.get("pods", "-n", "kube-system", "-l", "k8s-app=kube-dns")["items"]
        ready = [
            p
            for p in pods
            if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        ]
        return str(ready[0]["spec"]["nodeName"]) if ready else ""

    node = until("a ready CoreDNS pod", coredns_node, deadline=240)
    assert cluster.get("service", "-n", "kube-system", "kube-dns")["spec"]["clusterIP"] == DNS_SERVICE_IP
    cluster.apply(
        _pod("web", node, ["httpd", "-f", "-p", "8080", "-h", "/var/www"], {"app": "web"}),
        _pod("client", node, ["sleep", "3600"]),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    cluster_ip = cluster.get("service", "web")["spec"]["clusterIP"]
    cluster.kubectl("wait", "--for=condition=Ready", "pod/web", "pod/client", "--timeout=180s")
    resolv = cluster.kubectl("exec", "client", "--", "cat", "/etc/resolv.conf")
    assert f"nameserver {DNS_SERVICE_IP}" in resolv

    def lookup(name: str) -> str:
        # busybox's nslookup also tries the other search domains (and exits 1 on their NXDOMAIN).
        return cluster.kubectl("exec", "client", "--", "nslookup", name, check=False)

    answer = until(
        "kubernetes.default.svc.cluster.local resolving in the pod",
        lambda: (
            (found := lookup("kubernetes.default.svc.cluster.local")) and f"Address: {SERVICE_IP}" in found
        ),
        deadline=120,
        interval=2,
    )
    assert answer
    short = lookup("web")
    assert "Name:\tweb.default.svc.cluster.local" in short and f"Address: {cluster_ip}" in short

    def get_through_cluster_ip() -> str:
        # nc, not busybox's wget: the static busybox's wget crashes in this image.
        request = "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 " + cluster_ip + " 80"
        return cluster.kubectl("exec", "client", "--", "sh", "-c", request, check=False)

    until(
        "the web Service answering on its ClusterIP",
        lambda: "hello from vk-test/busybox" in get_through_cluster_ip(),
        deadline=60,
        interval=2,
    )
    with urllib.request.urlopen(f"http://{cluster_ip}/", timeout=10) as from_host:  # kube-proxy on this host
        assert b"hello from vk-test/busybox" in from_host.read()


# A CGI page of busybox httpd that answers with the address the request came from.
_ECHO_SOURCE = (
    "mkdir -p /tmp/www/cgi-bin && printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\n"
    "echo from=$REMOTE_ADDR\\n' > /tmp/www/cgi-bin/ip && chmod +x /tmp/www/cgi-bin/ip && "
    "exec httpd -f -p 8080 -h /tmp/www"
)


def test_pods_on_two_nodes_reach_each_other_by_pod_ip_service_and_name(cluster: Cluster) -> None:
    """Kubernetes' network model across the sandbox's two nodes: a pod reaches a pod of the other
    node by its address and sees the client's own address (no NAT between pods), and through a
    Service by name and ClusterIP, whichever node CoreDNS runs on."""
    server_node, client_node = NODES
    cluster.apply(
        _pod("echo", server_node, ["sh", "-c", _ECHO_SOURCE], {"app": "echo"}),
        _pod("remote-client", client_node, ["sleep", "3600"]),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "echo"},
            "spec": {"selector": {"app": "echo"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    cluster.kubectl("wait", "--for=condition=Ready", "pod/echo", "pod/remote-client", "--timeout=180s")
    echo_ip = cluster.get("pod", "echo")["status"]["podIP"]
    client_ip = cluster.get("pod", "remote-client")["status"]["podIP"]
    networks = {n["metadata"]["name"]: n["spec"]["podCIDR"] for n in cluster.get("nodes")["items"]}
    assert ipaddress.ip_address(echo_ip) in ipaddress.ip_network(networks[server_node])
    assert ipaddress.ip_address(client_ip) in ipaddress.ip_network(networks[client_node])

    def source_seen(target: str, port: int = 80) -> str:
        """The client address the echo pod saw (busybox httpd writes IPv4 as [::ffff:a.b.c.d])."""
        request = f"printf 'GET /cgi-bin/ip HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {target} {port}"
        answer = cluster.kubectl("exec", "remote-client", "--", "sh", "-c", request, check=False)
        found = re.search(r"^from=\[?(?:::ffff:)?([0-9.]+)\]?$", answer, re.MULTILINE)
        return found.group(1) if found else ""

    until("the other node's pod by its address", lambda: source_seen(echo_ip, 8080) == client_ip, deadline=60)
    cluster_ip = cluster.get("service", "echo")["spec"]["clusterIP"]
    until(
        "the Service on the other node by ClusterIP",
        lambda: source_seen(cluster_ip) == client_ip,
        deadline=60,
    )
    until(
        "the Service on the other node by its short name",
        lambda: source_seen("echo") == client_ip,
        deadline=120,
        interval=2,
    )


def _http_get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return str(answer.read().decode())
    except OSError:
        return ""


def test_node_port_host_port_and_port_forward_to_a_service(cluster: Cluster) -> None:
    """From this host, as a user outside the pods: a NodePort on the node's address (kube-proxy),
    a hostPort (the engine's port publishing) and `kubectl port-forward svc/...` (the kubelet
    API's port-forward to the Service's pod)."""
    node = NODES[1]
    web = _pod("published", node, ["httpd", "-f", "-p", "8080", "-h", "/var/www"], {"app": "published"})
    web["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": HOST_PORT}]
    cluster.apply(
        web,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "published"},
            "spec": {
                "type": "NodePort",
                "selector": {"app": "published"},
                "ports": [{"port": 80, "targetPort": 8080}],
            },
        },
    )
    cluster.kubectl("wait", "--for=condition=Ready", "pod/published", "--timeout=180s")
    node_port = cluster.get("service", "published")["spec"]["ports"][0]["nodePort"]
    hello = "hello from vk-test/busybox"
    until(
        "the NodePort on the host's address",
        lambda: hello in _http_get(f"http://{advertise_address()}:{node_port}/"),
        deadline=60,
        interval=1,
    )
    until(
        "the hostPort on the host's address",
        lambda: hello in _http_get(f"http://{advertise_address()}:{HOST_PORT}/"),
        deadline=60,
        interval=1,
    )

    with port_forward(cluster.kubeconfig, "svc/published", 80, 8080) as port:
        until("kubectl port-forward svc/published", lambda: hello in _http_get(f"http://127.0.0.1:{port}/"))


def test_a_headless_service_and_a_stateful_set_pod_resolve_by_their_stable_names(cluster: Cluster) -> None:
    """A headless Service's name gives its pods' addresses; a StatefulSet's pod has its stable
    name `<pod>.<service>.<namespace>.svc.cluster.local` (the pod's hostname and subdomain, which
    the node writes into its /etc/hosts as the kubelet does, and CoreDNS serves to others)."""
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "db"},
            "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "serviceName": "db",
                "replicas": 1,
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {
                        "nodeSelector": {"kubernetes.io/hostname": NODES[0]},
                        "tolerations": TOLERATE,
                        "containers": [
                            {
                                "name": "c",
                                "image": "vk-test/busybox:1",
                                "imagePullPolicy": "Never",
                                "command": ["sleep", "3600"],
                            }
                        ],
                    },
                },
            },
        },
        _pod("dns-client", NODES[1], ["sleep", "3600"]),
    )
    until("the StatefulSet's pod", lambda: cluster.get("pods", "-l", "app=db")["items"], deadline=60)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/db-0", "pod/dns-client", "--timeout=180s")
    db_ip = cluster.get("pod", "db-0")["status"]["podIP"]
    assert (
        cluster.kubectl("exec", "db-0", "--", "hostname", "-f").strip() == "db-0.db.default.svc.cluster.local"
    )

    def resolves(name: str) -> bool:
        answer = cluster.kubectl("exec", "dns-client", "--", "nslookup", name, check=False)
        return f"Address: {db_ip}" in answer

    until(
        "the headless Service's name",
        lambda: resolves("db.default.svc.cluster.local"),
        deadline=120,
        interval=2,
    )
    until(
        "the StatefulSet pod's stable name",
        lambda: resolves("db-0.db.default.svc.cluster.local"),
        deadline=60,
    )


AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"  # built by scripts/build-conformance.sh


@pytest.mark.cluster_full  # make test-cluster: it needs agnhost (make conformance-build) and a minute
def test_the_apiserver_calls_a_webhook_served_by_a_pod_on_a_node_through_its_service(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A validating admission webhook (agnhost's, as the conformance suite deploys it) served by
    a pod on a virtual node: the apiserver reaches it through its Service's ClusterIP (kube-proxy
    on this host) and TLS with the Service's DNS name, and it denies what it must."""
    pki = SandboxPKI(tmp_path)
    cert, key = pki.issue_pair(
        "webhook", "webhook.default.svc", server=True, dns_names=["webhook.default.svc"]
    )
    server = {
        "name": "webhook",
        "image": AGNHOST,
        "imagePullPolicy": "Never",
        "args": [
            "webhook",
            "--tls-cert-file=/certs/tls.crt",
            "--tls-private-key-file=/certs/tls.key",
            "--port=8443",
        ],
        "volumeMounts": [{"name": "certs", "mountPath": "/certs", "readOnly": True}],
        "readinessProbe": {
            "httpGet": {"scheme": "HTTPS", "port": 8443, "path": "/readyz"},
            "periodSeconds": 1,
        },
    }
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "webhook-certs"},
            "stringData": {"tls.crt": cert.read_text(), "tls.key": key.read_text()},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "webhook", "labels": {"app": "webhook"}},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": NODES[1]},
                "tolerations": TOLERATE,
                "containers": [server],
                "volumes": [{"name": "certs", "secret": {"secretName": "webhook-certs"}}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "webhook"},
            "spec": {"selector": {"app": "webhook"}, "ports": [{"port": 443, "targetPort": 8443}]},
        },
    )
    cluster.kubectl("wait", "--for=condition=Ready", "pod/webhook", "--timeout=180s")
    hook = {
        "name": "deny-configmaps.vk-test.example.com",
        "clientConfig": {
            "service": {"namespace": "default", "name": "webhook", "path": "/configmaps", "port": 443},
            "caBundle": base64.b64encode(pki.ca_pem).decode(),
        },
        "rules": [
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}
        ],
        "objectSelector": {"matchLabels": {"vk-test-webhook": "yes"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
    }
    configuration = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "vk-test-deny-configmaps"},
        "webhooks": [hook],
    }
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(configuration))
    try:

        def create(name: str, value: str) -> str:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"vk-test-webhook": "yes"}},
                "data": {"webhook-e2e-test": value},
            }
            run = subprocess.run(
                [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "create", "-f", "-"],
                input=json.dumps(body),
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            return run.stdout + run.stderr

        denied = until(
            "the webhook denying a configmap",
            lambda: (
                (answer := create("denied", "webhook-disallow")) and "denied the request" in answer and answer
            ),
            deadline=60,
            interval=1,
        )
        assert "the configmap contains unwanted key and value" in denied
        assert "created" in create("allowed", "webhook-allow")
    finally:
        cluster.kubectl("delete", "validatingwebhookconfiguration", "vk-test-deny-configmaps", check=False)
