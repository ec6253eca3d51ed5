"""Pod certificates for projected `podCertificate` volumes (the kubelet's podcertificate manager, small).

What lives here: `PodCertificates`, which for each podCertificate source of a pod (keyed by
pod UID, volume name and source index) generates a private key of the source's `keyType`,
creates a PodCertificateRequest (certificates.k8s.io/v1) for it with the pod's, its service
account's and the node's names and UIDs, the signer, `maxExpirationSeconds`, the user
annotations and a stub PKCS#10 request signed by the key (the proof of possession), and hands
out the key and the issued chain once the signer set the request's `Issued` condition. Until
then `credentials()` raises `CredentialsPending` with the kubelet's text, which the pod worker
reports as a FailedMount and retries soon; a Denied or Failed request stays the error. From the
request's `beginRefreshAt` on, a new request is made while the current credentials are still
handed out, and replace them once issued. `make_pod_certificate_api(client)` is the API side.
Must not: write files (`pods.volume_writer` does), emit Events, or log keys.

Upstream: pkg/kubelet/podcertificate/podcertificatemanager.go (handleProjection,
createPodCertificateRequest, generateKeyAndProof, pemEncodeKey, cleanCertificateChain).
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from vk_common.objects import meta, parse_time
from vk_common.objects import uid as uid_of
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.pods.volumes import normalized_certificates

REQUESTS = "/apis/certificates.k8s.io/v1/namespaces/{namespace}/podcertificaterequests"
# podcertificatemanager.go assumeDeletedThreshold: a request not seen this long after its
# creation was deleted by someone; a new one is made.
ASSUME_DELETED_SECONDS = 600.0

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


class CredentialsPending(Exception):
    """No credentials to hand out (yet); `str()` is the kubelet's error text."""


@dataclass(frozen=True)
class PodCertificateApi:
    """The apiserver calls: a ServiceAccount (for its UID), create and read a request."""

    service_account: Callable[[str, str], Awaitable[Mapping[str, Any]]]
    create_request: Callable[[str, dict[str, Any]], Awaitable[Mapping[str, Any]]]
    get_request: Callable[[str, str], Awaitable[Mapping[str, Any]]]


def make_pod_certificate_api(client: KubeClient) -> PodCertificateApi:
    async def service_account(namespace: str, name: str) -> Mapping[str, Any]:
        return await client.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}")

    async def create_request(namespace: str, body: dict[str, Any]) -> Mapping[str, Any]:
        return await client.create(REQUESTS.format(namespace=namespace), body)

    async def get_request(namespace: str, name: str) -> Mapping[str, Any]:
        return await client.get(REQUESTS.format(namespace=namespace) + f"/{name}")

    return PodCertificateApi(service_account, create_request, get_request)


def _new_key(key_type: str) -> PrivateKey:
    if key_type in ("RSA3072", "RSA4096"):
        return rsa.generate_private_key(65537, int(key_type[3:]))
    curves: dict[str, ec.EllipticCurve] = {
        "ECDSAP256": ec.SECP256R1(),
        "ECDSAP384": ec.SECP384R1(),
        "ECDSAP521": ec.SECP521R1(),
    }
    if key_type in curves:
        return ec.generate_private_key(curves[key_type])
    if key_type == "ED25519":
        return ed25519.Ed25519PrivateKey.generate()
    raise CredentialsPending(f'while generating keypair: unknown key type "{key_type}"')


def key_and_proof(key_type: str) -> tuple[bytes, bytes]:
    """A new key as PKCS#8 PEM, and the DER of a stub PKCS#10 request (empty subject) it signs
    (generateKeyAndProof, pemEncodeKey). CPU-bound: RSA 4096 takes a second; run it in a thread."""
    key = _new_key(key_type)
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    stub = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([])).sign(key, algorithm)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem, stub.public_bytes(serialization.Encoding.DER)


@dataclass
class _Issued:
    key: bytes
    chain: bytes
    begin_refresh_at: float


@dataclass
class _Pending:
    key: bytes
    request: str  # the PodCertificateRequest's name
    abandon_at: float


@dataclass
class _Record:
    issued: _Issued | None = None
    pending: _Pending | None = None
    error: str = ""  # denied or failed: the request's condition


class PodCertificates:
    def __init__(
        self,
        api: PodCertificateApi,
        node: Callable[[], Mapping[str, Any]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._api = api
        self._node = node
        self._clock = clock
        self._records: dict[tuple[str, str, int], _Record] = {}

    def forget(self, uid: str) -> None:
        for key in [k for k in self._records if k[0] == uid]:
            del self._records[key]

    async def credentials(
        self, pod: Mapping[str, Any], volume: str, index: int, source: Mapping[str, Any]
    ) -> tuple[bytes, bytes]:
        """The key (PEM) and certificate chain (PEM) of the source; raises CredentialsPending
        while there are none, or ApiStatusError when the apiserver fails."""
        record = self._records.setdefault((uid_of(pod), volume, index), _Record())
        if record.pending is not None:
            await self._poll(pod, record)
        if record.error:
            raise CredentialsPending(record.error)
        issued = record.issued
        if record.pending is None and (issued is None or self._clock() >= issued.begin_refresh_at):
            record.pending = await self._request(pod, source)
        if record.issued is None:
            raise CredentialsPending(
                f"no credentials yet for key=(pod {meta(pod).get('namespace')}/{meta(pod).get('name')}, "
                f"volume {volume}, source {index})"
            )
        return record.issued.key, record.issued.chain

    async def _request(self, pod: Mapping[str, Any], source: Mapping[str, Any]) -> _Pending:
        namespace, spec = str(meta(pod).get("namespace", "")), pod.get("spec") or {}
        service_account = str(spec.get("serviceAccountName") or "default")
        account = await self._api.service_account(namespace, service_account)
        node = self._node()
        key, stub = await asyncio.to_thread(key_and_proof, str(source.get("keyType", "")))
        request_spec: dict[str, Any] = {
            "signerName": source.get("signerName", ""),
            "podName": meta(pod).get("name", ""),
            "podUID": uid_of(pod),
            "serviceAccountName": service_account,
            "serviceAccountUID": uid_of(account),
            "nodeName": meta(node).get("name", ""),
            "nodeUID": uid_of(node),
            "stubPKCS10Request": base64.b64encode(stub).decode(),
        }
        if source.get("maxExpirationSeconds") is not None:
            request_spec["maxExpirationSeconds"] = source["maxExpirationSeconds"]
        if source.get("userAnnotations"):
            request_spec["unverifiedUserAnnotations"] = dict(source["userAnnotations"])
        body = {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "PodCertificateRequest",
            "metadata": {
                "generateName": "req-",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": meta(pod).get("name", ""), "uid": uid_of(pod)}
                ],
            },
            "spec": request_spec,
        }
        created = await self._api.create_request(namespace, body)
        return _Pending(key, str(meta(created).get("name", "")), self._clock() + ASSUME_DELETED_SECONDS)

    async def _poll(self, pod: Mapping[str, Any], record: _Record) -> None:
        pending = record.pending
        assert pending is not None
        namespace = str(meta(pod).get("namespace", ""))
        try:
            request = await self._api.get_request(namespace, pending.request)
        except ApiStatusError as exc:
            if exc.status == 404 and self._clock() >= pending.abandon_at:
                record.pending = None  # deleted by someone: the next sync asks again
            return
        status = request.get("status") or {}
        for condition in status.get("conditions") or []:
            kind = condition.get("type")
            if kind in ("Denied", "Failed"):
                record.pending, record.issued = None, None
                record.error = (
                    f"PodCertificateRequest {namespace}/{pending.request} was {kind.lower()}, "
                    f"reason={condition.get('reason', '')!r}, message={condition.get('message', '')!r}"
                )
            elif kind == "Issued":
                refresh = parse_time(str(status.get("beginRefreshAt") or ""))
                record.pending = None
                record.issued = _Issued(
                    pending.key,
                    normalized_certificates(str(status.get("certificateChain") or "")),
                    refresh.timestamp() if refresh is not None else float("inf"),
                )
