"""The kubelet API's TLS: its serving certificate and whether it asks for client certificates.

What lives here: `server_ssl_context(config, node_name, node_ip, scratch)`, which loads
`tls.certFile`/`tls.keyFile` (mode `files`) or makes a self-signed certificate for the node's
name and IP (mode `selfSigned`, and `csr` until csr.py has the cluster's; written under the
caller's scratch directory), and requests a
client certificate verified against `clientCAFile` when the auth mode uses x509
(upstream: virtual-kubelet `node/nodeutil/tls.go`, `WithTLSConfig`/`WithCAFromPath`).
Must not: decide whether a request is allowed (auth.py does), or serve anything.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vk_provider.config import KubeletServerConfig

SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)
BACKDATE = datetime.timedelta(minutes=5)
AUTH_MODES = ("none", "x509", "webhook")


class KubeletTLSError(ValueError):
    """The TLS or auth settings cannot be used (unknown mode, missing files, x509 without a CA)."""


def node_sans(node_name: str, node_ip: str) -> x509.SubjectAlternativeName:
    """The node's name, and its IP when it is one."""
    names: list[x509.GeneralName] = [x509.DNSName(node_name)]
    with contextlib.suppress(ValueError):  # no usable IP: the name alone
        names.append(x509.IPAddress(ipaddress.ip_address(node_ip)))
    return x509.SubjectAlternativeName(names)


def self_signed(node_name: str, node_ip: str) -> tuple[bytes, bytes]:
    """A self-signed serving certificate and its key (PEM) for the node's name and IP."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{node_name}@vk-provider")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + SELF_SIGNED_VALIDITY)
        .add_extension(node_sans(node_name, node_ip), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _cert_and_key(
    config: KubeletServerConfig, node_name: str, node_ip: str, scratch: Path
) -> tuple[str, str]:
    mode = config.tls.mode
    if mode == "files":
        if not config.tls.cert_file or not config.tls.key_file:
            raise KubeletTLSError("kubeletServer.tls.mode files needs certFile and keyFile")
        return config.tls.cert_file, config.tls.key_file
    if mode in ("selfSigned", "csr"):  # csr: self-signed until the cluster's certificate arrives
        cert_pem, key_pem = self_signed(node_name, node_ip)
        cert_path, key_path = scratch / "kubelet.crt", scratch / "kubelet.key"
        cert_path.write_bytes(cert_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(key_pem)
        return str(cert_path), str(key_path)
    raise KubeletTLSError(f"unknown kubeletServer.tls.mode {mode!r} (files | selfSigned | csr)")


def server_ssl_context(
    config: KubeletServerConfig, node_name: str, node_ip: str, scratch: Path
) -> ssl.SSLContext:
    """The listener's context: TLS >= 1.2, the serving certificate, client certificates per auth."""
    if config.auth not in AUTH_MODES:
        raise KubeletTLSError(f"unknown kubeletServer.auth {config.auth!r} (webhook | x509 | none)")
    if config.auth == "x509" and not config.client_ca_file:
        raise KubeletTLSError("kubeletServer.auth x509 needs kubeletServer.clientCAFile")
    cert, key = _cert_and_key(config, node_name, node_ip, scratch)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
        if config.auth != "none" and config.client_ca_file:
            # Optional at the TLS layer, so a request without a certificate gets the kubelet's
            # 401 rather than a failed handshake; a certificate that does not verify still fails it.
            ctx.load_verify_locations(config.client_ca_file)
            ctx.verify_mode = ssl.CERT_OPTIONAL
    except (OSError, ssl.SSLError) as exc:
        raise KubeletTLSError(f"kubelet API TLS files: {exc}") from exc
    return ctx
