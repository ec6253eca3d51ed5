"""The sandbox's review APIs (TokenReview, SubjectAccessReview) and nodes/proxy, over HTTP."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes_asyncio import client

from tests.sandbox_helpers import RunningSandbox, api_client, running_sandbox
from vk_provider.sandbox.pki import KUBELET_SERVING_SIGNER, SandboxPKI


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[RunningSandbox]:
    async with running_sandbox(tmp_path, controllers=False) as server:
        yield server


async def test_token_review_accepts_own_tokens_and_refuses_others(sandbox: RunningSandbox) -> None:
    async with api_client(sandbox) as api:
        v1 = client.CoreV1Api(api)
        pod = await v1.create_namespaced_pod(
            "default",
            {
                "metadata": {"name": "web"},
                "spec": {"containers": [{"name": "c", "image": "vk-test/busybox:1"}]},
            },
        )
        spec = client.V1TokenRequestSpec(
            audiences=["vk-test"],
            bound_object_ref=client.V1BoundObjectReference(
                kind="Pod", api_version="v1", name="web", uid=pod.metadata.uid
            ),
        )
        token = await v1.create_namespaced_service_account_token(
            "default", "default", client.AuthenticationV1TokenRequest(spec=spec)
        )
        auth = client.AuthenticationV1Api(api)
        review = await auth.create_token_review(
            client.V1TokenReview(
                spec=client.V1TokenReviewSpec(token=token.status.token, audiences=["vk-test"])
            )
        )
        assert review.status.authenticated is True
        assert review.status.user.username == "system:serviceaccount:default:default"
        assert "system:serviceaccounts:default" in review.status.user.groups
        assert review.status.user.extra["authentication.kubernetes.io/pod-name"] == ["web"]
        wrong_audience = await auth.create_token_review(
            client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token.status.token, audiences=["other"]))
        )
        assert not wrong_audience.status.authenticated and wrong_audience.status.error
        await v1.delete_namespaced_pod("web", "default")
        pod_gone = await auth.create_token_review(
            client.V1TokenReview(
                spec=client.V1TokenReviewSpec(token=token.status.token, audiences=["vk-test"])
            )
        )
        assert not pod_gone.status.authenticated and 'pods "web" not found' in pod_gone.status.error
        garbage = await auth.create_token_review(
            client.V1TokenReview(spec=client.V1TokenReviewSpec(token="x.y.z"))
        )
        assert not garbage.status.authenticated

        sar = await client.AuthorizationV1Api(api).create_subject_access_review(
            client.V1SubjectAccessReview(
                spec=client.V1SubjectAccessReviewSpec(
                    user="system:serviceaccount:default:default",
                    resource_attributes=client.V1ResourceAttributes(
                        verb="get", resource="nodes", subresource="stats"
                    ),
                )
            )
        )
        assert sar.status.allowed is True


def _kubelet_tls(pki: SandboxPKI, tmp: Path) -> ssl.SSLContext:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "system:node:node-1")]))
        .sign(key, hashes.SHA256())
    )
    cert = pki.sign_csr(
        csr.public_bytes(serialization.Encoding.PEM),
        ["digital signature", "server auth"],
        KUBELET_SERVING_SIGNER,
    )
    (tmp / "kubelet.crt").write_bytes(cert)
    (tmp / "kubelet.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(tmp / "kubelet.crt"), str(tmp / "kubelet.key"))
    return ctx


async def test_node_proxy_reaches_the_kubelet(sandbox: RunningSandbox, tmp_path: Path) -> None:
    async def summary(request: web.Request) -> web.Response:
        return web.json_response({"node": {"nodeName": "node-1"}, "query": request.query_string})

    app = web.Application()
    app.router.add_get("/stats/summary", summary)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=_kubelet_tls(sandbox.pki, tmp_path))
    await site.start()
    port = runner.addresses[0][1]
    try:
        await sandbox.store.create(
            "nodes",
            {
                "metadata": {"name": "node-1"},
                "status": {
                    "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                },
            },
        )
        async with aiohttp.ClientSession() as http:
            url = f"{sandbox.url}/api/v1/nodes/node-1/proxy/stats/summary?only_cpu_and_memory=true"
            async with http.get(url) as response:
                assert response.status == 200
                body = await response.json()
            async with http.get(f"{sandbox.url}/api/v1/nodes/nope/proxy/stats/summary") as missing:
                assert missing.status == 404
        assert body == {"node": {"nodeName": "node-1"}, "query": "only_cpu_and_memory=true"}
    finally:
        await runner.cleanup()
