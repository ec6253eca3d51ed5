"""The sandbox CSR signer against a live Store: approved requests get a certificate, bad ones Failed."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.polling import eventually
from vk_sandbox.controllers.csr_signer import RESOURCE, CSRSigner
from vk_sandbox.pki.authority import SandboxPKI
from vk_sandbox.storage.store import Store

DEADLINE = 20.0


def _request(node: str) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                    x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
                ]
            )
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(node)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def _csr(name: str, usages: list[str], signer: str = "kubernetes.io/kubelet-serving") -> dict[str, Any]:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": _request("n1"), "signerName": signer, "usages": usages},
    }


async def _approve(store: Store, name: str) -> None:
    csr = await store.get(RESOURCE, None, name)
    csr.setdefault("status", {})["conditions"] = [
        {"type": "Approved", "status": "True", "reason": "Test", "message": "approved by the test"}
    ]
    await store.update(RESOURCE, csr, subresource="approval")


async def _until_status(store: Store, name: str, key: str) -> dict[str, Any]:
    status: dict[str, Any] = {}

    async def reached() -> dict[str, Any] | None:
        nonlocal status
        csr = await store.get(RESOURCE, None, name)
        status = csr.get("status") or {}
        if status.get(key) or any(c["type"] == key for c in status.get("conditions", [])):
            return csr
        return None

    return await eventually(
        reached, within=DEADLINE, interval=0.05, what=lambda: f"{name}: {key} (status {status})"
    )


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Store, SandboxPKI]]:
    store = Store()
    pki = SandboxPKI(tmp_path)
    signer = CSRSigner(store, pki)
    await signer.start()
    yield store, pki
    await signer.stop()


async def test_approved_request_is_signed(env: tuple[Store, SandboxPKI]) -> None:
    store, pki = env
    await store.create(RESOURCE, _csr("serving", ["digital signature", "server auth"]))
    await asyncio.sleep(0.3)
    pending = await store.get(RESOURCE, None, "serving")
    assert not (pending.get("status") or {}).get("certificate")  # not before approval
    await _approve(store, "serving")
    csr = await _until_status(store, "serving", "certificate")
    cert = x509.load_pem_x509_certificate(base64.b64decode(csr["status"]["certificate"]))
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(pki.ca_pem))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:n1"
    assert [c["type"] for c in csr["status"]["conditions"]] == ["Approved"]


async def test_invalid_request_fails(env: tuple[Store, SandboxPKI]) -> None:
    store, _ = env
    await store.create(RESOURCE, _csr("client-as-server", ["client auth"]))
    await _approve(store, "client-as-server")
    csr = await _until_status(store, "client-as-server", "Failed")
    failed = csr["status"]["conditions"][-1]
    assert failed["reason"] == "SignerValidationFailure"
    assert "server auth" in failed["message"]
    assert not csr["status"].get("certificate")


async def test_other_signers_are_left_alone(env: tuple[Store, SandboxPKI]) -> None:
    store, _ = env
    await store.create(RESOURCE, _csr("foreign", ["client auth"], signer="example.com/custom"))
    await _approve(store, "foreign")
    await asyncio.sleep(0.5)
    csr = await store.get(RESOURCE, None, "foreign")
    assert [c["type"] for c in csr["status"]["conditions"]] == ["Approved"]
    assert not csr["status"].get("certificate")
