"""The TLS side of a stand-in kubelet: tests that point the sandbox's kubelet proxy at a small
HTTPS server of their own listen with `serving_context`.

It signs a serving certificate for `system:node:<node>` with the sandbox PKI's kubelet-serving
signer, writes it and its key as `kubelet.crt` / `kubelet.key` into the directory it is given,
and returns a server SSLContext for an aiohttp site or an asyncio server. The sandbox reaches a
kubelet as kube-apiserver does without --kubelet-certificate-authority: it presents its client
certificate and does not verify the serving one. With `require_client_cert` (the default) the
context demands a client certificate from the sandbox's CA, as a kubelet with x509 client
authentication does.

Must not: serve routes or answer requests itself (each test builds the kubelet it needs on this
context), stand in for the provider's own kubelet server (vk_provider/kubeletapi, with its own
certificates), or write anywhere but the directory it is given.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from vk_sandbox.pki.authority import KUBELET_SERVING_SIGNER, SandboxPKI


def serving_context(
    pki: SandboxPKI, directory: Path, *, node: str = "fake", require_client_cert: bool = True
) -> ssl.SSLContext:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}")]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert = pki.sign_csr(
        csr.public_bytes(serialization.Encoding.PEM),
        ["digital signature", "server auth"],
        KUBELET_SERVING_SIGNER,
    )
    (directory / "kubelet.crt").write_bytes(cert)
    (directory / "kubelet.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(directory / "kubelet.crt"), str(directory / "kubelet.key"))
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(str(pki.ca_cert_path))
    return ctx
