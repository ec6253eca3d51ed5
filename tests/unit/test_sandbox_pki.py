"""The sandbox PKI: CA and kubelet-client certificate on disk, reload, CSR signing."""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vk_sandbox.pki.authority import (
    KUBELET_CLIENT_SIGNER,
    KUBELET_SERVING_SIGNER,
    CSRError,
    SandboxPKI,
)


def _csr(cn: str, org: str, *, dns: tuple[str, ...] = (), ips: tuple[str, ...] = ()) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
                x509.NameAttribute(NameOID.COMMON_NAME, cn),
            ]
        )
    )
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _verify_issued_by(cert: x509.Certificate, ca: x509.Certificate) -> None:
    cert.verify_directly_issued_by(ca)


def test_creates_ca_and_client_cert(tmp_path: Path) -> None:
    pki = SandboxPKI(tmp_path)
    assert pki.ca_cert_path == tmp_path / "pki" / "ca.crt"
    for path in (pki.ca_cert_path, pki.ca_key_path, pki.client_cert_path, pki.client_key_path):
        assert path.is_file()
    assert pki.ca_key_path.stat().st_mode & 0o077 == 0
    ca = x509.load_pem_x509_certificate(pki.ca_cert_path.read_bytes())
    client = x509.load_pem_x509_certificate(pki.client_cert_path.read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    _verify_issued_by(client, ca)
    assert client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == (
        "kube-apiserver-kubelet-client"
    )
    assert client.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    eku = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in eku
    assert pki.ca_pem == pki.ca_cert_path.read_bytes()


def test_reloads_existing_files(tmp_path: Path) -> None:
    first = SandboxPKI(tmp_path)
    ca_bytes = first.ca_cert_path.read_bytes()
    client_bytes = first.client_cert_path.read_bytes()
    second = SandboxPKI(tmp_path)
    assert second.ca_cert_path.read_bytes() == ca_bytes
    assert second.client_cert_path.read_bytes() == client_bytes


def test_a_kept_serving_pair_is_issued_again_when_its_names_change(tmp_path: Path) -> None:
    pki = SandboxPKI(tmp_path)
    cert_path, _ = pki.issue_pair("api", "kube-apiserver", server=True, ips=("127.0.0.1",))
    first = cert_path.read_bytes()
    assert pki.issue_pair("api", "kube-apiserver", server=True, ips=("127.0.0.1",))[0].read_bytes() == first
    pki.issue_pair("api", "kube-apiserver", server=True, ips=("127.0.0.1", "172.17.0.1"))
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("172.17.0.1"),
    ]


def test_temporary_directory_when_no_state_dir() -> None:
    pki = SandboxPKI(None)
    assert pki.ca_cert_path.is_file()
    assert pki.ca_cert_path.parent.name == "pki"


def test_ssl_client_context_presents_certificate(tmp_path: Path) -> None:
    ctx = SandboxPKI(tmp_path).ssl_client_context()
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_NONE
    assert not ctx.check_hostname


def test_sign_kubelet_serving_csr_keeps_sans(tmp_path: Path) -> None:
    pki = SandboxPKI(tmp_path)
    pem = pki.sign_csr(
        _csr("system:node:n1", "system:nodes", dns=("n1",), ips=("127.0.0.1",)),
        ["digital signature", "key encipherment", "server auth"],
        KUBELET_SERVING_SIGNER,
    )
    cert = x509.load_pem_x509_certificate(pem)
    _verify_issued_by(cert, x509.load_pem_x509_certificate(pki.ca_pem))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:n1"
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["n1"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_sign_kubelet_client_csr_with_expiration(tmp_path: Path) -> None:
    pki = SandboxPKI(tmp_path)
    pem = pki.sign_csr(
        _csr("system:node:n1", "system:nodes"),
        ["digital signature", "client auth"],
        KUBELET_CLIENT_SIGNER,
        expiration_seconds=3600,
    )
    cert = x509.load_pem_x509_certificate(pem)
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 3600 <= lifetime.total_seconds() <= 3600 + 600


def test_sign_rejects_bad_requests(tmp_path: Path) -> None:
    pki = SandboxPKI(tmp_path)
    csr = _csr("system:node:n1", "system:nodes")
    with pytest.raises(CSRError, match="unsupported signerName"):
        pki.sign_csr(csr, ["client auth"], "example.com/other")
    with pytest.raises(CSRError, match="server auth"):
        pki.sign_csr(csr, ["client auth"], KUBELET_SERVING_SIGNER)
    with pytest.raises(CSRError, match="server auth"):
        pki.sign_csr(csr, ["server auth"], KUBELET_CLIENT_SIGNER)
    with pytest.raises(CSRError, match="CA usages"):
        pki.sign_csr(csr, ["cert sign", "client auth"], KUBELET_CLIENT_SIGNER)
    with pytest.raises(CSRError, match="invalid certificate request"):
        pki.sign_csr(b"not a csr", ["client auth"], KUBELET_CLIENT_SIGNER)
