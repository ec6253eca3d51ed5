"""The command lines of etcd, kube-apiserver, kube-controller-manager and kube-scheduler.

What lives here: `Ports` and `Files` (where each component listens and what it reads) and one
pure function per component returning its argv. The flags follow what a kubeadm cluster
passes, reduced to loopback: the apiserver with `Node,RBAC` authorization, NodeRestriction on
top of the default admission plugins, a kubelet client certificate and InternalIP as the
address it dials kubelets on; the controller manager with every default controller, the
cluster signing key (so CSRs get signed) and per-controller service-account credentials.
Must not: start anything or touch files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"  # the first address: the `kubernetes` Service
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int


@dataclass(frozen=True)
class Files:
    """Paths the components read; kubeconfigs are written before the components start."""

    etcd_data: Path
    ca_cert: Path
    ca_key: Path
    apiserver_cert: Path
    apiserver_key: Path
    kubelet_client_cert: Path
    kubelet_client_key: Path
    sa_key: Path
    sa_pub: Path
    controller_manager_kubeconfig: Path
    scheduler_kubeconfig: Path


def etcd_args(bin_dir: Path, ports: Ports, files: Files) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(bin_dir / "etcd"),
        "--name=default",
        f"--data-dir={files.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=default={peer}",
        "--listen-metrics-urls=",
        "--log-level=warn",
        # A throw-away data directory: durability across power loss buys nothing here and
        # fsync on shared disks is what makes etcd slow (envtest does the same).
        "--unsafe-no-fsync",
    ]


def apiserver_args(bin_dir: Path, ports: Ports, files: Files, bind_address: str = "127.0.0.1") -> list[str]:
    return [
        str(bin_dir / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        f"--bind-address={bind_address}",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--tls-cert-file={files.apiserver_cert}",
        f"--tls-private-key-file={files.apiserver_key}",
        f"--client-ca-file={files.ca_cert}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={files.sa_pub}",
        f"--service-account-signing-key-file={files.sa_key}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--allow-privileged=true",
        f"--kubelet-client-certificate={files.kubelet_client_cert}",
        f"--kubelet-client-key={files.kubelet_client_key}",
        "--kubelet-preferred-address-types=InternalIP",
        # Endpoints of the `kubernetes` Service may not be a loopback address.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
    ]


def controller_manager_args(
    bin_dir: Path, ports: Ports, files: Files, node_grace_seconds: float
) -> list[str]:
    kubeconfig = files.controller_manager_kubeconfig
    return [
        str(bin_dir / "kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.controller_manager}",
        "--leader-elect=false",
        "--controllers=*",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={files.sa_key}",
        f"--root-ca-file={files.ca_cert}",
        f"--cluster-signing-cert-file={files.ca_cert}",
        f"--cluster-signing-key-file={files.ca_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--node-monitor-grace-period={node_grace_seconds:g}s",
        "--profiling=false",
    ]


def scheduler_args(bin_dir: Path, ports: Ports, files: Files) -> list[str]:
    kubeconfig = files.scheduler_kubeconfig
    return [
        str(bin_dir / "kube-scheduler"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.scheduler}",
        "--leader-elect=false",
        "--profiling=false",
    ]
