"""`kubeletServer.tls.mode: csr`: a serving certificate from the cluster's kubelet-serving signer.

What lives here: `kubelet_serving_csr` (pure: a key and a PKCS#10 request for
`CN=system:node:<node>`, `O=system:nodes`, the node name and IP as SANs, as the kubelet's
certificate manager asks) and `ServingCertificate`, which submits a
CertificateSigningRequest (`kubernetes.io/kubelet-serving`; usages digital signature, key
encipherment, server auth), approves it itself when its credentials allow (as Liqo and
Admiralty do; otherwise someone runs `kubectl certificate approve`), waits for the issued
certificate, loads it into the listener's live SSLContext (new connections get it; the
self-signed one serves until then) and renews at a jittered 70-90 % of its lifetime
(kube/certificates.py, as the kubelet's certificate manager).
Must not: serve HTTP or decide authentication.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509

from vk_common.logging import get_logger
from vk_provider.kube.certificates import (
    CSR_PATH,
    CsrClient,
    jittered_fraction,
    node_key_and_csr,
    rotation_deadline,
    submit_csr,
    wait_issued,
)
from vk_provider.kubeletapi.tls import node_sans

log = get_logger("kubeletapi.csr")

SIGNER = "kubernetes.io/kubelet-serving"
USAGES = ["digital signature", "key encipherment", "server auth"]
RETRY_SECONDS = 30.0


def kubelet_serving_csr(node_name: str, node_ip: str) -> tuple[bytes, bytes]:
    """(key PEM, CSR PEM) for the node's serving certificate."""
    return node_key_and_csr(node_name, node_sans(node_name, node_ip))


@dataclass(eq=False)
class ServingCertificate:
    """Keeps `ctx` serving a certificate issued through a CSR; `run()` is the background loop."""

    client: CsrClient
    node_name: str
    node_ip: str
    ctx: ssl.SSLContext
    scratch: Path
    # Set once a cluster-signed certificate is being served.
    issued: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    async def run(self) -> None:
        while True:
            try:
                not_after, not_before = await self._obtain()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the API may be down, the CSR denied: try again later
                log.warning(
                    "serving certificate request failed; retrying",
                    extra={"err": str(exc), "retryInSeconds": RETRY_SECONDS},
                )
                await asyncio.sleep(RETRY_SECONDS)
                continue
            renew = rotation_deadline(not_before, not_after, jittered_fraction())
            await asyncio.sleep(
                max(RETRY_SECONDS, (renew - datetime.datetime.now(datetime.UTC)).total_seconds())
            )

    async def _obtain(self) -> tuple[datetime.datetime, datetime.datetime]:
        key_pem, csr_pem = kubelet_serving_csr(self.node_name, self.node_ip)
        created = await submit_csr(
            self.client, csr_pem, signer=SIGNER, usages=USAGES, generate_name=f"csr-{self.node_name}-"
        )
        name = created["metadata"]["name"]
        await self._approve(created)
        cert_pem = await wait_issued(self.client, name, deadline=float("inf"))
        cert = x509.load_pem_x509_certificates(cert_pem)[0]
        await asyncio.to_thread(self._install, name, cert_pem, key_pem)
        self.issued.set()
        log.info("serving certificate issued", extra={"csr": name, "notAfter": str(cert.not_valid_after_utc)})
        return cert.not_valid_after_utc, cert.not_valid_before_utc

    def _install(self, name: str, cert_pem: bytes, key_pem: bytes) -> None:
        cert_path, key_path = self.scratch / f"{name}.crt", self.scratch / f"{name}.key"
        key_path.touch(mode=0o600)
        key_path.write_bytes(key_pem)
        cert_path.write_bytes(cert_pem)
        self.ctx.load_cert_chain(str(cert_path), str(key_path))  # new handshakes get it

    async def _approve(self, csr: dict[str, Any]) -> None:
        name = csr["metadata"]["name"]
        csr.setdefault("status", {})["conditions"] = [
            {
                "type": "Approved",
                "status": "True",
                "reason": "AutoApproved",
                "message": f"approved by the virtual kubelet of node {self.node_name}",
            }
        ]
        try:
            await self.client.replace(f"{CSR_PATH}/{name}/approval", csr)
        except Exception as exc:  # no approval rights: a person or a controller approves it
            log.info(
                "serving certificate CSR awaits approval (kubectl certificate approve)",
                extra={"csr": name, "detail": str(exc)},
            )
