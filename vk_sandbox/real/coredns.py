"""Cluster DNS of the real-plane sandbox: CoreDNS behind the `kube-dns` Service, as kubeadm deploys it.

What lives here: `coredns_objects(image)`, the objects of kubeadm's CoreDNS add-on
(k8s.io/kubernetes cmd/kubeadm/app/phases/addons/dns/manifests.go: ServiceAccount, ClusterRole
and ClusterRoleBinding `system:coredns`, the `coredns` ConfigMap with kubeadm's Corefile, the
Deployment and the `kube-dns` Service at DNS_SERVICE_IP) with the image scripts/ensure-coredns.sh
builds, `deploy_coredns(admin, image)`, which applies them, and `with_cluster_dns(config)`, a
provider configuration whose pods use it. The Deployment's pod runs on a
vk-provider node like any other; with no provider node it stays Pending (nothing resolves).
Differences from kubeadm: one replica (one small host; kubeadm runs two for availability),
`imagePullPolicy: Never` (the image is local; no registry is reachable), and a toleration of
the provider nodes' default taint in place of the control-plane taint's (the sandbox has no
control-plane node).
Must not: start processes or build the image.
"""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path
from typing import Any

from vk_common.vocabulary import PROVIDER_TAINT_EFFECT, PROVIDER_TAINT_KEY
from vk_sandbox.real.admin import AdminAPI
from vk_sandbox.real.components import CLUSTER_DOMAIN, DNS_SERVICE_IP

# In a source checkout: scripts/ensure-coredns.sh beside this package.
ENSURE_COREDNS_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure-coredns.sh"
NAMESPACE = "kube-system"
NAME = "coredns"
LABELS = {"k8s-app": "kube-dns"}
COREFILE = f""".:53 {{
    errors
    health {{
       lameduck 5s
    }}
    ready
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }}
    prometheus :9153
    forward . /etc/resolv.conf {{
       max_concurrent 1000
    }}
    cache 30 {{
       disable success {CLUSTER_DOMAIN}
       disable denial {CLUSTER_DOMAIN}
    }}
    loop
    reload
    loadbalance
}}
"""


def default_coredns_image() -> str | None:
    """$VK_COREDNS_IMAGE, else the image scripts/ensure-coredns.sh of this source checkout
    builds when the local engine has it (its `--print`: nothing is built), else None (blocking)."""
    if os.environ.get("VK_COREDNS_IMAGE"):
        return os.environ["VK_COREDNS_IMAGE"]
    script = ENSURE_COREDNS_SCRIPT
    if not script.is_file():
        return None
    found = subprocess.run(["bash", str(script), "--print"], capture_output=True, text=True, check=False)
    image = found.stdout.strip() if found.returncode == 0 else ""
    if not image:
        return None
    # --print names the image without building it: None unless the local engine has it.
    try:
        present = subprocess.run(
            ["docker", "image", "inspect", image], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return image if present.returncode == 0 else None


def _port(name: str, port: int, protocol: str = "TCP") -> dict[str, Any]:
    return {"name": name, "containerPort": port, "protocol": protocol}


def _pod_spec(image: str) -> dict[str, Any]:
    container = {
        "name": NAME,
        "image": image,
        "imagePullPolicy": "Never",
        "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
        "args": ["-conf", "/etc/coredns/Corefile"],
        "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}],
        "ports": [
            _port("dns", 53, "UDP"),
            _port("dns-tcp", 53),
            _port("metrics", 9153),
            _port("liveness-probe", 8080),
            _port("readiness-probe", 8181),
        ],
        "livenessProbe": {
            "httpGet": {"path": "/health", "port": "liveness-probe", "scheme": "HTTP"},
            "initialDelaySeconds": 60,
            "timeoutSeconds": 5,
            "successThreshold": 1,
            "failureThreshold": 5,
        },
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "readiness-probe", "scheme": "HTTP"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
    }
    return {
        "priorityClassName": "system-cluster-critical",
        "serviceAccountName": NAME,
        "tolerations": [
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"key": PROVIDER_TAINT_KEY, "operator": "Exists", "effect": PROVIDER_TAINT_EFFECT},
        ],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "containers": [container],
        "dnsPolicy": "Default",
        "volumes": [
            {
                "name": "config-volume",
                "configMap": {"name": NAME, "items": [{"key": "Corefile", "path": "Corefile"}]},
            }
        ],
    }


def coredns_objects(image: str) -> list[tuple[str, dict[str, Any]]]:
    """(object path, object) for each object of the add-on, in the order to apply them."""
    ns_path = f"/api/v1/namespaces/{NAMESPACE}"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    meta = {"name": NAME, "namespace": NAMESPACE}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:coredns"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["endpoints", "services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "system:coredns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**meta, "labels": LABELS},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "selector": {"matchLabels": LABELS},
            "template": {"metadata": {"labels": LABELS}, "spec": _pod_spec(image)},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kube-dns",
            "namespace": NAMESPACE,
            "labels": {**LABELS, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
            "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
        },
        "spec": {
            "clusterIP": DNS_SERVICE_IP,
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
            "selector": LABELS,
        },
    }
    return [
        (
            f"{ns_path}/serviceaccounts/{NAME}",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        ),
        (f"{rbac}/clusterroles/system:coredns", role),
        (f"{rbac}/clusterrolebindings/system:coredns", binding),
        (
            f"{ns_path}/configmaps/{NAME}",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"Corefile": COREFILE}},
        ),
        (f"{ns_path}/services/kube-dns", service),
        (f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{NAME}", deployment),
    ]


async def deploy_coredns(admin: AdminAPI, image: str) -> None:
    for path, obj in coredns_objects(image):
        await admin.apply(path, obj)


def with_cluster_dns(user: dict[str, Any]) -> dict[str, Any]:
    """A copy of a provider configuration (camelCase, as --config) for the sandbox's nodes:
    `pods.clusterDNS` the kube-dns Service, as a kubeadm node's kubelet (unless the user set
    it), and NET_BIND_SERVICE allowed (CoreDNS's container adds it; a provider refuses added
    capabilities by default). Sections of the wrong type are left for config_load to report."""
    config = copy.deepcopy(user)
    pods = config.setdefault("pods", {})
    if isinstance(pods, dict):
        pods.setdefault("clusterDNS", [DNS_SERVICE_IP])
    docker = config.setdefault("docker", {})
    allow = docker.setdefault("allow", {}) if isinstance(docker, dict) else None
    allowed = allow.setdefault("capabilities", []) if isinstance(allow, dict) else None
    if isinstance(allowed, list) and "NET_BIND_SERVICE" not in allowed:
        allowed.append("NET_BIND_SERVICE")
    return config
