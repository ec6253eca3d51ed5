"""podCertificate projections (pods/pod_certificates): the PodCertificateRequest the node makes,
the credentials it hands out once issued, refresh, and a denied request, against a recording
API (podcertificatemanager.go)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.unit.test_pods_trust_bundles import pem
from vk_provider.kube.client import ApiStatusError
from vk_provider.pods.pod_certificates import (
    CredentialsPending,
    PodCertificateApi,
    PodCertificates,
    key_and_proof,
)

POD = {
    "metadata": {"name": "web", "namespace": "ns", "uid": "pod-uid"},
    "spec": {"serviceAccountName": "robot", "nodeName": "vk-1"},
}
NODE = {"metadata": {"name": "vk-1", "uid": "node-uid"}}
SOURCE = {
    "signerName": "example.com/s",
    "keyType": "ECDSAP256",
    "maxExpirationSeconds": 3600,
    "userAnnotations": {"example.com/path": "/a"},
    "credentialBundlePath": "bundle.pem",
}


class FakeApi:
    def __init__(self) -> None:
        self.requests: dict[str, dict[str, Any]] = {}

    async def service_account(self, namespace: str, name: str) -> Mapping[str, Any]:
        return {"metadata": {"namespace": namespace, "name": name, "uid": "sa-uid"}}

    async def create_request(self, namespace: str, body: dict[str, Any]) -> Mapping[str, Any]:
        name = f"req-{len(self.requests) + 1}"
        self.requests[name] = {**body, "metadata": {**body["metadata"], "name": name, "namespace": namespace}}
        return self.requests[name]

    async def get_request(self, namespace: str, name: str) -> Mapping[str, Any]:
        if name not in self.requests:
            raise ApiStatusError(404, "NotFound", "gone")
        return self.requests[name]

    def condition(self, name: str, kind: str, **status: Any) -> None:
        self.requests[name]["status"] = {
            "conditions": [{"type": kind, "reason": "R", "message": "M"}],
            **status,
        }


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


def manager(api: FakeApi, now: list[float]) -> PodCertificates:
    return PodCertificates(
        PodCertificateApi(api.service_account, api.create_request, api.get_request),
        lambda: NODE,
        lambda: now[0],
    )


@pytest.mark.parametrize("key_type", ["RSA3072", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"])
def test_the_proof_is_a_stub_request_signed_by_the_new_key(key_type: str) -> None:
    key_pem, stub = key_and_proof(key_type)
    request = x509.load_der_x509_csr(stub)
    key = serialization.load_pem_private_key(key_pem, None)
    assert key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")  # PKCS#8, as pemEncodeKey
    assert request.is_signature_valid and list(request.subject) == []
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    assert request.public_key().public_bytes(
        serialization.Encoding.DER, public
    ) == key.public_key().public_bytes(serialization.Encoding.DER, public)


async def test_the_first_sync_makes_the_request_and_waits_for_it(api: FakeApi) -> None:
    certificates = manager(api, [0.0])
    with pytest.raises(CredentialsPending, match=r"^no credentials yet for key="):
        await certificates.credentials(POD, "cert", 0, SOURCE)
    (request,) = api.requests.values()
    assert request["metadata"]["generateName"] == "req-"
    assert request["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "pod-uid"}
    ]
    spec = request["spec"]
    assert {k: v for k, v in spec.items() if k != "stubPKCS10Request"} == {
        "signerName": "example.com/s",
        "podName": "web",
        "podUID": "pod-uid",
        "serviceAccountName": "robot",
        "serviceAccountUID": "sa-uid",
        "nodeName": "vk-1",
        "nodeUID": "node-uid",
        "maxExpirationSeconds": 3600,
        "unverifiedUserAnnotations": {"example.com/path": "/a"},
    }
    assert x509.load_der_x509_csr(base64.b64decode(spec["stubPKCS10Request"])).is_signature_valid
    with pytest.raises(CredentialsPending):  # still pending: no second request
        await certificates.credentials(POD, "cert", 0, SOURCE)
    assert len(api.requests) == 1


async def test_issued_credentials_are_handed_out_and_renewed_from_begin_refresh_at(api: FakeApi) -> None:
    now = [0.0]
    certificates = manager(api, now)
    with pytest.raises(CredentialsPending):
        await certificates.credentials(POD, "cert", 0, SOURCE)
    leaf, root = pem(b"\x30\x03leaf" * 8), pem(b"\x30\x03root" * 8)
    chain = "some text\n" + leaf + "between\n" + root
    api.condition("req-1", "Issued", certificateChain=chain, beginRefreshAt="1970-01-01T01:00:00Z")
    key, issued_chain = await certificates.credentials(POD, "cert", 0, SOURCE)
    assert key.startswith(b"-----BEGIN PRIVATE KEY-----")
    assert issued_chain == (leaf + root).encode()  # cleanCertificateChain: blocks only, order kept
    assert len(api.requests) == 1

    now[0] = 3600.0  # beginRefreshAt: a new request, the old credentials meanwhile
    assert await certificates.credentials(POD, "cert", 0, SOURCE) == (key, issued_chain)
    assert len(api.requests) == 2
    api.condition("req-2", "Issued", certificateChain=root, beginRefreshAt="1970-01-01T02:00:00Z")
    renewed_key, renewed_chain = await certificates.credentials(POD, "cert", 0, SOURCE)
    assert renewed_key != key and renewed_chain == root.encode()

    certificates.forget("pod-uid")
    with pytest.raises(CredentialsPending):
        await certificates.credentials(POD, "cert", 0, SOURCE)


async def test_a_denied_request_is_the_error_from_then_on(api: FakeApi) -> None:
    certificates = manager(api, [0.0])
    with pytest.raises(CredentialsPending):
        await certificates.credentials(POD, "cert", 0, SOURCE)
    api.condition("req-1", "Denied")
    message = "PodCertificateRequest ns/req-1 was denied, reason='R', message='M'"
    for _ in range(2):
        with pytest.raises(CredentialsPending, match=message.replace("'", ".")):
            await certificates.credentials(POD, "cert", 0, SOURCE)
    assert len(api.requests) == 1


async def test_an_unknown_key_type_is_the_error() -> None:
    certificates = manager(FakeApi(), [0.0])
    with pytest.raises(CredentialsPending, match='unknown key type "DSA"'):
        await certificates.credentials(POD, "cert", 0, {**SOURCE, "keyType": "DSA"})
