"""Fine-grained kubelet authorization with real SubjectAccessReviews (KEP-2862, GA in 1.36): a
service account allowed only `nodes/pods` reads `/pods` and nothing else; one allowed only
`nodes/proxy` still reads everything `nodes/proxy` covered; `/metrics` needs `nodes/metrics`.
Real control plane only: the emulator allows every review, the real apiserver's RBAC decides.
Bearer tokens from TokenRequest, straight to the provider's kubelet port, as a user of the
kubelet API with a token would.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.planes import RealPlane
from tests.support.provider_harness import ProviderHarness

pytestmark = [pytest.mark.docker, pytest.mark.real_only]

PATHS = ("/pods", "/runningpods/", "/healthz", "/containerLogs/default/none/c", "/metrics", "/stats/summary")


async def _account(harness: ProviderHarness, name: str, subresource: str) -> str:
    """A service account bound to get on `nodes/<subresource>`; its token."""
    api = harness.api
    await api.create("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": name}})
    rule = {"apiGroups": [""], "resources": [f"nodes/{subresource}"], "verbs": ["get"]}
    await api.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles", {"metadata": {"name": name}, "rules": [rule]}
    )
    binding: dict[str, Any] = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}],
    }
    await api.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
    request = await api.create(
        f"/api/v1/namespaces/default/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    return str(request["status"]["token"])


async def _statuses(port: int, token: str) -> dict[str, int]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
        found = {}
        for path in PATHS:
            headers = {"Authorization": f"Bearer {token}"}
            async with http.get(
                f"https://127.0.0.1:{port}{path}", headers=headers, allow_redirects=False
            ) as resp:
                found[path] = resp.status
        return found


async def test_nodes_pods_reads_pods_only_and_nodes_proxy_reads_what_it_covered(
    node_name: str, tmp_path: Path, plane: RealPlane
) -> None:
    suffix = uuid.uuid4().hex[:8]
    async with ProviderHarness.running(node_name, tmp_path, plane=plane) as harness:
        assert harness.provider is not None and harness.provider.kubelet is not None
        port = harness.provider.kubelet.port
        pods_only = await _account(harness, f"pods-only-{suffix}", "pods")
        proxy_only = await _account(harness, f"proxy-only-{suffix}", "proxy")
        try:
            assert await _statuses(port, pods_only) == {
                "/pods": 200,
                "/runningpods/": 200,
                "/healthz": 403,
                "/containerLogs/default/none/c": 403,
                "/metrics": 403,
                "/stats/summary": 403,
            }
            assert await _statuses(port, proxy_only) == {
                "/pods": 200,
                "/runningpods/": 200,
                "/healthz": 200,
                "/containerLogs/default/none/c": 404,  # allowed; no such pod
                "/metrics": 403,  # nodes/metrics, never nodes/proxy
                "/stats/summary": 403,  # nodes/stats
            }
        finally:
            for name in (f"pods-only-{suffix}", f"proxy-only-{suffix}"):
                for path in (
                    f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}",
                    f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}",
                ):
                    await harness.api.delete(path)
