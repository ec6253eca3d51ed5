"""The real control plane's pure parts: component command lines, its PKI, kubeconfigs with credentials."""

from __future__ import annotations

from ipaddress import ip_network
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from vk_common.kube_version import KUBE_VERSION
from vk_sandbox.kubeconfig import Credentials, kubeconfig_dict
from vk_sandbox.real import coredns, identities
from vk_sandbox.real.cluster import default_kube_bin, missing_binaries
from vk_sandbox.real.components import (
    DNS_SERVICE_IP,
    SERVICE_CIDR,
    SERVICE_IP,
    Files,
    Ports,
    apiserver_args,
    controller_manager_args,
    etcd_args,
    kube_proxy_args,
    scheduler_args,
)
from vk_sandbox.real.coredns import coredns_objects
from vk_sandbox.real.pki import ClusterPKI

PORTS = Ports(
    etcd_client=2379,
    etcd_peer=2380,
    apiserver=6443,
    controller_manager=10257,
    scheduler=10259,
    proxy_health=10256,
    proxy_metrics=10249,
)


def files(tmp: Path) -> Files:
    p = tmp / "pki"
    return Files(
        etcd_data=tmp / "etcd",
        ca_cert=p / "ca.crt",
        ca_key=p / "ca.key",
        apiserver_cert=p / "apiserver.crt",
        apiserver_key=p / "apiserver.key",
        kubelet_client_cert=p / "kubelet-client.crt",
        kubelet_client_key=p / "kubelet-client.key",
        sa_key=p / "sa.key",
        sa_pub=p / "sa.pub",
        front_proxy_ca=tmp / "front-proxy" / "ca.crt",
        front_proxy_client_cert=tmp / "front-proxy" / "front-proxy-client.crt",
        front_proxy_client_key=tmp / "front-proxy" / "front-proxy-client.key",
        controller_manager_kubeconfig=tmp / "cm.kubeconfig",
        scheduler_kubeconfig=tmp / "sched.kubeconfig",
        kube_proxy_kubeconfig=tmp / "proxy.kubeconfig",
    )


def test_apiserver_runs_like_a_kubeadm_one_advertising_a_host_address(tmp_path: Path) -> None:
    args = apiserver_args(Path("/bin"), PORTS, files(tmp_path), "0.0.0.0", "192.0.2.2")
    assert args[0] == "/bin/kube-apiserver"
    for flag in (
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--kubelet-preferred-address-types=InternalIP",
        "--bind-address=0.0.0.0",
        "--advertise-address=192.0.2.2",
        "--endpoint-reconciler-type=lease",
        f"--requestheader-client-ca-file={tmp_path / 'front-proxy' / 'ca.crt'}",
        "--requestheader-allowed-names=front-proxy-client",
        f"--proxy-client-cert-file={tmp_path / 'front-proxy' / 'front-proxy-client.crt'}",
        "--secure-port=6443",
        "--etcd-servers=http://127.0.0.1:2379",
        f"--kubelet-client-certificate={tmp_path / 'pki' / 'kubelet-client.crt'}",
        f"--service-account-signing-key-file={tmp_path / 'pki' / 'sa.key'}",
    ):
        assert flag in args
    # A host without a non-loopback address: Endpoints refuse loopback, so no reconciler.
    loopback = apiserver_args(Path("/bin"), PORTS, files(tmp_path), "127.0.0.1", "127.0.0.1")
    assert "--endpoint-reconciler-type=none" in loopback


def test_controller_manager_signs_csrs_and_watches_nodes_with_the_grace_period(tmp_path: Path) -> None:
    args = controller_manager_args(Path("/bin"), PORTS, files(tmp_path), 20.0, False)
    assert not [a for a in args if a.startswith("--allocate-node-cidrs")]
    assert f"--cluster-signing-key-file={tmp_path / 'pki' / 'ca.key'}" in args
    assert "--node-monitor-grace-period=20s" in args
    assert "--leader-elect=false" in args and "--controllers=*" in args
    assert "--use-service-account-credentials=true" in args
    cluster = controller_manager_args(Path("/bin"), PORTS, files(tmp_path), 20.0, True)
    for flag in ("--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16", "--node-cidr-mask-size=22"):
        assert flag in cluster


def test_kube_proxy_runs_in_iptables_mode_for_the_cluster_range(tmp_path: Path) -> None:
    args = kube_proxy_args(Path("/bin"), PORTS, files(tmp_path), "host-1")
    assert args[0] == "/bin/kube-proxy"
    for flag in (
        "--proxy-mode=iptables",
        "--cluster-cidr=10.244.0.0/16",
        "--hostname-override=host-1",
        f"--kubeconfig={tmp_path / 'proxy.kubeconfig'}",
        "--healthz-bind-address=127.0.0.1:10256",
        "--iptables-localhost-nodeports=false",  # leaves the host's route_localnet alone
    ):
        assert flag in args


def test_etcd_and_scheduler_listen_on_loopback_only(tmp_path: Path) -> None:
    etcd = etcd_args(Path("/bin"), PORTS, files(tmp_path))
    assert "--listen-client-urls=http://127.0.0.1:2379" in etcd
    assert f"--data-dir={tmp_path / 'etcd'}" in etcd
    scheduler = scheduler_args(Path("/bin"), PORTS, files(tmp_path))
    assert "--bind-address=127.0.0.1" in scheduler and "--leader-elect=false" in scheduler


def _subject(path: Path) -> tuple[str, list[str]]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    orgs = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return str(cn), [str(o) for o in orgs]


def test_cluster_pki_issues_the_identities_the_components_and_kubelets_use(tmp_path: Path) -> None:
    pki = ClusterPKI(tmp_path, SERVICE_IP)
    assert _subject(pki.admin[0]) == ("vk-sandbox-admin", ["system:masters"])
    assert _subject(pki.controller_manager[0]) == ("system:kube-controller-manager", [])
    assert _subject(pki.kube_proxy[0]) == ("system:kube-proxy", [])
    assert _subject(pki.front_proxy_client[0]) == ("front-proxy-client", [])
    assert pki.front_proxy.ca_cert_path.read_bytes() != pki.ca_cert_path.read_bytes()
    assert _subject(pki.node_identity("docker-1")[0]) == ("system:node:docker-1", ["system:nodes"])
    serving = x509.load_pem_x509_certificate(pki.apiserver[0].read_bytes())
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "kubernetes.default.svc" in sans.get_values_for_type(x509.DNSName)
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", SERVICE_IP}
    assert (pki.sa_key_path.stat().st_mode & 0o777) == 0o600
    assert (pki.admin[1].stat().st_mode & 0o777) == 0o600
    before = pki.admin[0].read_bytes()
    assert ClusterPKI(tmp_path, SERVICE_IP).admin[0].read_bytes() == before  # reused, not re-issued


def test_kubeconfig_names_the_ca_and_the_credentials(tmp_path: Path) -> None:
    cert = kubeconfig_dict(
        "https://127.0.0.1:6443", Credentials(tmp_path / "ca", tmp_path / "c", tmp_path / "k")
    )
    assert cert["clusters"][0]["cluster"]["certificate-authority"] == str(tmp_path / "ca")
    assert cert["users"][0]["user"] == {
        "client-certificate": str(tmp_path / "c"),
        "client-key": str(tmp_path / "k"),
    }
    token = kubeconfig_dict("https://x", Credentials(tmp_path / "ca", token="abc"))
    assert token["users"][0]["user"] == {"token": "abc"}
    assert yaml.safe_load(yaml.safe_dump(kubeconfig_dict("http://127.0.0.1:1")))["users"][0]["user"] == {}


def test_missing_binaries_are_named(tmp_path: Path) -> None:
    (tmp_path / "etcd").write_text("")
    (tmp_path / "etcd").chmod(0o755)
    assert missing_binaries(tmp_path) == ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]


def test_default_kube_bin_is_the_ensure_kube_link_of_the_pinned_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VK_KUBE_CACHE", str(tmp_path))
    assert default_kube_bin() == tmp_path / KUBE_VERSION / "bin"


def test_the_chart_is_rendered_with_the_kubelet_api_settings_the_providers_get() -> None:
    assert identities.chart_values({}) == {
        "config.kubeletServer.auth": "webhook",
        "config.kubeletServer.tls.mode": "selfSigned",
        "rbac.shared": "true",
    }
    user = {"kubeletServer": {"auth": "x509", "tls": {"mode": "csr"}}}
    assert identities.chart_values(user) == {
        "config.kubeletServer.auth": "x509",
        "config.kubeletServer.tls.mode": "csr",
        "rbac.shared": "true",
    }


def test_coredns_is_kubeadms_add_on_behind_kube_dns_at_the_tenth_service_address() -> None:
    objects = {obj["kind"]: (path, obj) for path, obj in coredns_objects("vk-sandbox/coredns:test")}
    service = objects["Service"][1]
    assert service["spec"]["clusterIP"] == DNS_SERVICE_IP == str(ip_network(SERVICE_CIDR)[10])
    assert objects["Service"][0] == "/api/v1/namespaces/kube-system/services/kube-dns"
    pod = objects["Deployment"][1]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "vk-sandbox/coredns:test"
    assert pod["containers"][0]["imagePullPolicy"] == "Never"  # built locally, no registry
    assert {"key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]
    assert pod["dnsPolicy"] == "Default"
    corefile = objects["ConfigMap"][1]["data"]["Corefile"]
    assert "kubernetes cluster.local in-addr.arpa ip6.arpa" in corefile
    assert "forward . /etc/resolv.conf" in corefile
    rules = objects["ClusterRole"][1]["rules"]
    assert {
        "apiGroups": ["discovery.k8s.io"],
        "resources": ["endpointslices"],
        "verbs": ["list", "watch"],
    } in rules


def test_the_sandbox_finds_the_chart_and_the_coredns_script_of_its_checkout() -> None:
    """Both are found relative to the package: a move of the package must move the path too."""
    assert (identities.CHART_DIR / "Chart.yaml").is_file()
    assert coredns.ENSURE_COREDNS_SCRIPT.is_file()
