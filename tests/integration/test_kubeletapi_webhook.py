"""`kubeletServer.auth: webhook` against the sandbox API server: TokenReview and SubjectAccessReview."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.sandbox_helpers import RunningSandbox, running_sandbox
from vk_provider.config import DockerConfig, KubeletServerConfig, KubernetesConfig
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
