"""The kubelet API with the sandbox API server: webhook auth (TokenReview, SubjectAccessReview), tls csr."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.support.sandbox import RunningSandbox, running_sandbox
from vk_provider.config import DockerConfig, KubeletServerConfig, KubeletTLS, KubernetesConfig
from vk_provider.kube.client import KubeClient, make_kube_client
from vk_provider.kubeletapi import KubeletServer
from vk_provider.runtime.docker import DockerRuntime


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[RunningSandbox]:
    async with running_sandbox(tmp_path, controllers=False) as server:
        yield server


@pytest.fixture
async def kube(sandbox: RunningSandbox) -> AsyncIterator[KubeClient]:
    client = await make_kube_client(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
    yield client
    await client.close()


async def test_bearer_tokens_are_reviewed_and_certificates_still_work(
    sandbox: RunningSandbox, kube: KubeClient, node_name: str, test_images: dict[str, str], tmp_path: Path
) -> None:
    runtime = DockerRuntime(
        DockerConfig(sandbox_image=test_images["pause"], state_dir=str(tmp_path)), node_name
    )
    config = KubeletServerConfig(
        listen="127.0.0.1:0", auth="webhook", client_ca_file=str(sandbox.pki.ca_cert_path)
    )
    await runtime.start()
    server = KubeletServer(config, node_name, runtime, "127.0.0.1", kube=kube)
    await server.start()
    try:
        request = await kube.create(
            "/api/v1/namespaces/default/serviceaccounts/default/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
        token = request["status"]["token"]
        url = f"https://127.0.0.1:{server.port}"
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
            for headers, expected in (
                ({"Authorization": f"Bearer {token}"}, 200),
                ({"Authorization": "Bearer not-a-token"}, 401),
                ({}, 401),
            ):
                async with http.get(f"{url}/pods", headers=headers) as resp:
                    assert resp.status == expected, await resp.text()
        async with (
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=sandbox.pki.ssl_client_context())
            ) as http,
            http.get(f"{url}/healthz") as resp,
        ):
            assert (resp.status, await resp.text()) == (200, "ok")
    finally:
        await server.stop()
        await runtime.close()


async def test_csr_mode_serves_the_cluster_signed_certificate(
    tmp_path: Path, node_name: str, test_images: dict[str, str]
) -> None:
    async with running_sandbox(tmp_path) as sandbox:  # with controllers: the CSR signer
        kube = await make_kube_client(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
        runtime = DockerRuntime(
            DockerConfig(sandbox_image=test_images["pause"], state_dir=str(tmp_path)), node_name
        )
        config = KubeletServerConfig(listen="127.0.0.1:0", auth="none", tls=KubeletTLS(mode="csr"))
        server = KubeletServer(config, node_name, runtime, "127.0.0.1", kube=kube)
        await server.start()
        try:
            assert server.serving_certificate is not None
            await asyncio.wait_for(server.serving_certificate.issued.wait(), 60)
            # Verified against the sandbox CA, for the IP 127.0.0.1.
            verify = ssl.create_default_context(cafile=str(sandbox.pki.ca_cert_path))
            _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=verify)
            peer = writer.get_extra_info("peercert")
            writer.close()
            assert (("commonName", f"system:node:{node_name}"),) in peer["subject"]
            csrs = await kube.get("/apis/certificates.k8s.io/v1/certificatesigningrequests")
            [csr] = csrs["items"]
            assert csr["spec"]["signerName"] == "kubernetes.io/kubelet-serving"
            assert [c["type"] for c in csr["status"]["conditions"]] == ["Approved"]
        finally:
            await server.stop()
            await kube.close()
