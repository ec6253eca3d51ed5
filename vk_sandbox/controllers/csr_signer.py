"""The sandbox's CSR signer: issues certificates for approved CertificateSigningRequests.

What lives here: `CSRSigner(store, pki)`, like kube-controller-manager's csrsigning controller
(`pkg/controller/certificates/signer/signer.go`): every CertificateSigningRequest that is
Approved (and neither Denied nor Failed) and has no `status.certificate` yet, for one of the
kubernetes.io kubelet signers, is signed by the sandbox CA and gets its certificate in
`status.certificate`; a request the signer refuses gets a `Failed` condition with reason
`SignerValidationFailure`. Requests for other signers are left alone, as upstream.
Must not: approve requests (that is `kubectl certificate approve`, or the requester's job).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from datetime import UTC, datetime
from typing import Any

from vk_common.logging import get_logger
from vk_common.objects import format_time
from vk_common.tasks import cancel_and_wait
from vk_sandbox.api.errors import ApiError
from vk_sandbox.pki.authority import SUPPORTED_SIGNERS, CSRError, SandboxPKI
from vk_sandbox.storage.store import Store

log = get_logger("sandbox.csr-signer")

RESOURCE = "certificatesigningrequests.certificates.k8s.io"
Obj = dict[str, Any]


def _condition_true(csr: Obj, type_: str) -> bool:
    conditions = (csr.get("status") or {}).get("conditions") or []
    return any(c.get("type") == type_ and c.get("status", "True") == "True" for c in conditions)


def wants_signing(csr: Obj) -> bool:
    """Approved, not denied or failed, not yet issued, and for a signer the sandbox runs."""
    if (csr.get("spec") or {}).get("signerName") not in SUPPORTED_SIGNERS:
        return False
    if (csr.get("status") or {}).get("certificate"):
        return False
    return _condition_true(csr, "Approved") and not (
        _condition_true(csr, "Denied") or _condition_true(csr, "Failed")
    )


def signed_status(csr: Obj, pki: SandboxPKI) -> Obj:
    """The CSR's new status: the certificate, or a Failed condition saying why not."""
    spec = csr.get("spec") or {}
    status = dict(csr.get("status") or {})
    try:
        request = base64.b64decode(spec.get("request") or "", validate=True)
        certificate = pki.sign_csr(
            request,
            spec.get("usages") or [],
            spec.get("signerName") or "",
            expiration_seconds=spec.get("expirationSeconds"),
        )
    except (CSRError, binascii.Error) as exc:
        now = format_time(datetime.now(UTC))
        failed = {
            "type": "Failed",
            "status": "True",
            "reason": "SignerValidationFailure",
            "message": str(exc),
            "lastUpdateTime": now,
            "lastTransitionTime": now,
        }
        status["conditions"] = [*(status.get("conditions") or []), failed]
        return status
    status["certificate"] = base64.b64encode(certificate).decode()
    return status


class CSRSigner:
    """Signs approved CertificateSigningRequests until stopped."""

    def __init__(self, store: Store, pki: SandboxPKI) -> None:
        self._store = store
        self._pki = pki
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="sandbox-csr-signer")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _run(self) -> None:
        while True:
            try:
                async for event in self._store.watch(RESOURCE):
                    if event.type in ("ADDED", "MODIFIED") and wants_signing(event.object):
                        await self._sign(event.object)
            except Exception:
                log.exception("watch failed", extra={"resource": RESOURCE})
                await asyncio.sleep(1)

    async def _sign(self, csr: Obj) -> None:
        name = csr["metadata"]["name"]
        status = signed_status(csr, self._pki)
        try:
            await self._store.update(RESOURCE, {**csr, "status": status}, subresource="status")
        except ApiError as exc:  # changed meanwhile: the watch brings the newer object
            log.debug("CSR not handled", extra={"csr": name, "err": exc.message})
            return
        if status.get("certificate"):
            log.info("signed CSR", extra={"csr": name, "signer": csr["spec"].get("signerName")})
        else:
            log.info("refused CSR", extra={"csr": name, "reason": status["conditions"][-1]["message"]})
