"""Certificates of the node through the CSR API: what the serving and the client certificate share.

What lives here: `node_key_and_csr` (pure: an ECDSA P-256 key and a PKCS#10 request for
`CN=system:node:<node>`, `O=system:nodes`, with SANs or none, as the kubelet's certificate
manager asks), `submit_csr` (a CertificateSigningRequest for a signer and usages, by
generateName or by a fixed name: a fixed name that exists already is taken when it carries
the same public key, as client-go's util/certificate/csr RequestCertificate does),
`wait_issued` (polls the CSR by name until it holds a certificate, raising `CsrDenied` or
`CsrNotIssued` with a message naming the CSR and what to do), and when to renew
(`rotation_deadline` at a `jittered_fraction` of the lifetime). Used by
kubeletapi/csr.py (serving) and kube/node_credentials.py (client). Must not: approve CSRs
or keep files.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import random
import time
from collections.abc import Callable
from typing import Any, Protocol

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
POLL_SECONDS = 2.0


class CsrClient(Protocol):
    async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]: ...

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


class CsrDenied(Exception):
    """The CSR was denied or failed (its condition's type and message in the text)."""


class CsrNotIssued(Exception):
    """No certificate in the CSR within the deadline."""


def node_subject(node_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node_name}"),
        ]
    )


def new_key_pem() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def node_csr_pem(key_pem: bytes, node_name: str, sans: x509.SubjectAlternativeName | None = None) -> bytes:
    """A PKCS#10 request for the node's identity signed by `key_pem` (no SANs for a client cert:
    the kube-apiserver-client-kubelet signer refuses any, pkg/apis/certificates/helpers.go)."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    builder = x509.CertificateSigningRequestBuilder().subject_name(node_subject(node_name))
    if sans is not None:
        builder = builder.add_extension(sans, critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def node_key_and_csr(node_name: str, sans: x509.SubjectAlternativeName | None = None) -> tuple[bytes, bytes]:
    """(key PEM, CSR PEM) for a new key."""
    key_pem = new_key_pem()
    return key_pem, node_csr_pem(key_pem, node_name, sans)


def jittered_fraction(rand: Callable[[], float] = random.random) -> float:
    """When in its lifetime a certificate is renewed: 70 % plus up to 20 % jitter (client-go
    util/certificate/certificate_manager.go jitteryDuration), so that nodes started together
    do not all renew together."""
    return 0.7 + 0.2 * rand()


def rotation_deadline(
    not_before: datetime.datetime, not_after: datetime.datetime, fraction: float
) -> datetime.datetime:
    """The moment `fraction` of the certificate's lifetime has passed (nextRotationDeadline)."""
    return not_before + (not_after - not_before) * fraction


def condition(csr: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (csr.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status", "True") == "True":
            return dict(cond)
    return None


def _public_key_of(request_b64: str) -> bytes:
    csr = x509.load_pem_x509_csr(base64.b64decode(request_b64))
    return csr.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


async def submit_csr(
    client: CsrClient,
    csr_pem: bytes,
    *,
    signer: str,
    usages: list[str],
    name: str = "",
    generate_name: str = "",
) -> dict[str, Any]:
    """Create the CSR and return it. With `name`, a CSR of that name already there (an earlier
    run's, still pending) is returned when it requests the same public key; another one is
    an error (client-go util/certificate/csr RequestCertificate and ensureCompatible)."""
    metadata = {"name": name} if name else {"generateName": generate_name}
    body = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": metadata,
        "spec": {
            "request": base64.b64encode(csr_pem).decode(),
            "signerName": signer,
            "usages": usages,
        },
    }
    try:
        return await client.create(CSR_PATH, body)
    except Exception as exc:
        if not name or getattr(exc, "status", None) != 409:
            raise
    existing = await client.get(f"{CSR_PATH}/{name}")
    spec = existing.get("spec") or {}
    mine = _public_key_of(body["spec"]["request"])  # type: ignore[index]
    if spec.get("signerName") != signer or _public_key_of(str(spec.get("request", ""))) != mine:
        raise CsrDenied(
            f"CSR {name} exists with another key or signer; delete it (kubectl delete csr {name})"
        )
    return existing


async def wait_issued(
    client: CsrClient, name: str, *, deadline: float, approver: str = "", poll: float = POLL_SECONDS
) -> bytes:
    """The certificate PEM of CSR `name` once issued; `deadline` is in seconds from now;
    `approver` says who else may approve it, for the not-approved message."""
    end = time.monotonic() + deadline
    while True:
        csr = await client.get(f"{CSR_PATH}/{name}")
        if (denied := condition(csr, "Denied") or condition(csr, "Failed")) is not None:
            reason = f" ({denied['reason']})" if denied.get("reason") else ""
            raise CsrDenied(f"CSR {name} {denied.get('type')}{reason}: {denied.get('message', '')}")
        issued = (csr.get("status") or {}).get("certificate")
        if issued:
            return base64.b64decode(issued)
        if time.monotonic() >= end:
            approved = condition(csr, "Approved") is not None
            what = "approved but not signed" if approved else "not approved"
            hint = (
                "is the cluster's signer (kube-controller-manager --cluster-signing-*) running?"
                if approved
                else f"approve it (kubectl certificate approve {name}){approver}"
            )
            raise CsrNotIssued(f"CSR {name} {what} within {deadline:.0f}s: {hint}")
        await asyncio.sleep(poll)
