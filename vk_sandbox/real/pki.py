"""Certificates and keys of the real control plane, under `<state_dir>/pki`.

What lives here: `ClusterPKI`, which extends the sandbox CA (`SandboxPKI`: the CA and the
apiserver's kubelet-client certificate, laid out as kubeadm does) with the apiserver's
serving certificate, client certificates for the admin, the controller manager, the
scheduler and node identities, and the RSA key pair that signs service-account tokens.
Existing files are reused, so a kubeconfig written by one run still works in the next.
Must not: start processes or talk to the network.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from vk_sandbox.pki.authority import SandboxPKI
from vk_sandbox.real.components import FRONT_PROXY_CLIENT

ADMIN_USER = "vk-sandbox-admin"
MASTERS_GROUP = "system:masters"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
SCHEDULER_USER = "system:kube-scheduler"
KUBE_PROXY_USER = "system:kube-proxy"  # bound to the system:node-proxier ClusterRole by default
NODES_GROUP = "system:nodes"
# The names the apiserver's serving certificate answers to (kubeadm's list, on loopback).
APISERVER_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


class ClusterPKI(SandboxPKI):
    """The sandbox CA plus what the upstream components need. `service_ip` is the first
    address of the service range (the `kubernetes` Service), a name the serving cert carries,
    as do `extra_addresses` (others the apiserver is reached at: the advertised one...).
    The aggregation layer's front proxy has a CA of its own, as kubeadm's `front-proxy-ca`
    (an extension apiserver trusts the request headers of that CA's clients only), under
    `<state_dir>/front-proxy/pki`."""

    def __init__(self, state_dir: Path, service_ip: str, extra_addresses: tuple[str, ...] = ()) -> None:
        super().__init__(state_dir)
        self.apiserver = self.issue_pair(
            "apiserver",
            "kube-apiserver",
            server=True,
            dns_names=APISERVER_DNS_NAMES,
            ips=("127.0.0.1", service_ip, *dict.fromkeys(extra_addresses)),
        )
        self.admin = self.issue_pair("admin", ADMIN_USER, [MASTERS_GROUP])
        self.controller_manager = self.issue_pair("controller-manager", CONTROLLER_MANAGER_USER)
        self.scheduler = self.issue_pair("scheduler", SCHEDULER_USER)
        self.kube_proxy = self.issue_pair("kube-proxy", KUBE_PROXY_USER)
        self.front_proxy = SandboxPKI(state_dir / "front-proxy")
        self.front_proxy_client = self.front_proxy.issue_pair(FRONT_PROXY_CLIENT, FRONT_PROXY_CLIENT)
        self.sa_key_path = self.dir / "sa.key"
        self.sa_pub_path = self.dir / "sa.pub"
        self._ensure_service_account_keys()

    def node_identity(self, node: str) -> tuple[Path, Path]:
        """A kubelet's client certificate: CN `system:node:<node>`, O `system:nodes`."""
        return self.issue_pair(f"node-{node}", f"system:node:{node}", [NODES_GROUP])

    def _ensure_service_account_keys(self) -> None:
        if self.sa_key_path.exists() and self.sa_pub_path.exists():
            return
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        tmp = self.sa_key_path.with_suffix(".tmp")
        tmp.write_bytes(private)
        tmp.chmod(0o600)
        tmp.replace(self.sa_key_path)
        self.sa_pub_path.write_bytes(public)
