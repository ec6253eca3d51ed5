"""The command lines of etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kube-proxy.

What lives here: `Ports` and `Files` (where each component listens and what it reads), the
cluster's address ranges, and one pure function per component returning its argv. The flags
follow what a kubeadm cluster passes: the apiserver advertising a non-loopback address of this
host (the `kubernetes` Service's endpoint, kept by the lease endpoint reconciler) with
`Node,RBAC` authorization, NodeRestriction on top of the default admission plugins, a kubelet
client certificate, InternalIP as the address it dials kubelets on and the aggregation layer's
front-proxy certificates; the controller manager with every default controller, the cluster
signing key (so CSRs get signed), per-controller service-account credentials and, with the
cluster network, node CIDRs allocated from CLUSTER_CIDR; kube-proxy in iptables mode.
Must not: start anything or touch files.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import ip_address
from pathlib import Path

SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"  # the first address: the `kubernetes` Service
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# The pods' range with the cluster network: routed nowhere on these machines (10.213/16 and
# 10.214/16 are the provider tests', 172.17/16 Docker's). A /22 per node holds 1022 pods, over
# the 500 of the performance issue (cmd/kubeadm's default mask is 24).
CLUSTER_CIDR = "10.244.0.0/16"
NODE_CIDR_MASK_SIZE = 22
DNS_SERVICE_IP = "10.96.0.10"  # the tenth address of the service range: kube-dns (kubeadm's convention)
CLUSTER_DOMAIN = "cluster.local"
FRONT_PROXY_CLIENT = "front-proxy-client"  # kubeadm's name (cmd/kubeadm/app/constants)


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    proxy_health: int
    proxy_metrics: int


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
    front_proxy_ca: Path
    front_proxy_client_cert: Path
    front_proxy_client_key: Path
    controller_manager_kubeconfig: Path
    scheduler_kubeconfig: Path
    kube_proxy_kubeconfig: Path


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


def apiserver_args(
    bin_dir: Path, ports: Ports, files: Files, bind_address: str, advertise_address: str
) -> list[str]:
    """`advertise_address` is the `kubernetes` Service's endpoint; a loopback one (a host with
    no other address) is refused in Endpoints, so the reconciler is then off."""
    reconciler = "none" if ip_address(advertise_address).is_loopback else "lease"
    return [
        str(bin_dir / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        f"--bind-address={bind_address}",
        f"--advertise-address={advertise_address}",
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
        f"--endpoint-reconciler-type={reconciler}",
        # The aggregation layer, as kubeadm sets it (cmd/kubeadm/app/phases/controlplane/manifests.go
        # getAPIServerCommand): requests proxied to an extension apiserver carry the user in
        # these headers, the apiserver authenticating as the front proxy's client.
        f"--requestheader-client-ca-file={files.front_proxy_ca}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={files.front_proxy_client_cert}",
        f"--proxy-client-key-file={files.front_proxy_client_key}",
        "--enable-aggregator-routing=true",
        # On SIGTERM, close the connections of open watches after 2 s instead of waiting up to
        # the request timeout (60 s) for them to end: pods of the cluster network (CoreDNS)
        # keep watching while the sandbox stops (k8s.io/apiserver pkg/server/genericapiserver.go).
        "--shutdown-send-retry-after=true",
        "--profiling=false",
    ]


def controller_manager_args(
    bin_dir: Path, ports: Ports, files: Files, node_grace_seconds: float, node_cidrs: bool
) -> list[str]:
    """`node_cidrs`: allocate each Node a /NODE_CIDR_MASK_SIZE of CLUSTER_CIDR (spec.podCIDR)."""
    kubeconfig = files.controller_manager_kubeconfig
    cidrs = [
        "--allocate-node-cidrs=true",
        f"--cluster-cidr={CLUSTER_CIDR}",
        f"--node-cidr-mask-size={NODE_CIDR_MASK_SIZE}",
    ]
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
        *(cidrs if node_cidrs else []),
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


def kube_proxy_args(bin_dir: Path, ports: Ports, files: Files, hostname: str) -> list[str]:
    """kube-proxy in iptables mode for this host (`hostname`: the Node name it proxies for;
    the provider's nodes are virtual, so the host's own name, which no Node has, is fine:
    kube-proxy only reads the Node for its topology labels and podCIDR)."""
    return [
        str(bin_dir / "kube-proxy"),
        f"--kubeconfig={files.kube_proxy_kubeconfig}",
        "--proxy-mode=iptables",
        f"--cluster-cidr={CLUSTER_CIDR}",
        f"--hostname-override={hostname}",
        f"--healthz-bind-address=127.0.0.1:{ports.proxy_health}",
        f"--metrics-bind-address=127.0.0.1:{ports.proxy_metrics}",
        # These machines do not let a container (nor a sandbox) change conntrack's sysctls:
        # leave them as they are (0 skips the max-per-core and TCP timeout settings).
        "--conntrack-max-per-core=0",
        "--conntrack-tcp-timeout-established=0",
        "--conntrack-tcp-timeout-close-wait=0",
        # NodePorts on 127.0.0.1 would need the host-wide route_localnet=1, which outlives the
        # sandbox (and is what CVE-2020-8558 was about): NodePorts answer on the host's other
        # addresses only.
        "--iptables-localhost-nodeports=false",
        "--profiling=false",
    ]
