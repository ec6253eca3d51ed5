"""The sandbox's review APIs (TokenReview, SubjectAccessReview) and nodes/proxy, over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from tests.support.sandbox import RunningSandbox, admin_session, api_client, running_sandbox
from tests.support.stand_in_kubelet import serving_context


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
        # the TokenRequest comes back with the account's uid and the time it was made (token.go)
        account = await v1.read_namespaced_service_account("default", "default")
        assert token.metadata.uid == account.metadata.uid and token.metadata.creation_timestamp
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


async def test_node_proxy_reaches_the_kubelet(sandbox: RunningSandbox, tmp_path: Path) -> None:
    async def summary(request: web.Request) -> web.Response:
        return web.json_response({"node": {"nodeName": "node-1"}, "query": request.query_string})

    app = web.Application()
    app.router.add_get("/stats/summary", summary)
    runner = web.AppRunner(app)
    await runner.setup()
    tls = serving_context(sandbox.pki, tmp_path, node="node-1", require_client_cert=False)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
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
        async with admin_session(sandbox) as http:
            url = f"{sandbox.url}/api/v1/nodes/node-1/proxy/stats/summary?only_cpu_and_memory=true"
            async with http.get(url) as response:
                assert response.status == 200
                body = await response.json()
            async with http.get(f"{sandbox.url}/api/v1/nodes/nope/proxy/stats/summary") as missing:
                assert missing.status == 404
        assert body == {"node": {"nodeName": "node-1"}, "query": "only_cpu_and_memory=true"}
    finally:
        await runner.cleanup()
