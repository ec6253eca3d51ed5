"""The emulator's pods/<name[:port]>/proxy/<path>: a request reaches the pod's own address, as
through the real server (upstream's PreStop conformance spec reads its server pod's state so).

The sandbox and the provider run in-process for a unique node (tests/support/provider_harness.py);
the pod is busybox httpd on real Docker.
"""

from __future__ import annotations

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.pod_status import condition
from tests.support.provider_harness import NAMESPACE, ProviderHarness
from vk_provider.kube.client import ApiStatusError

pytestmark = pytest.mark.docker

SERVE = 'mkdir -p /www && echo \'{"received": {"prestop": 1}}\' > /www/read && exec httpd -f -p 8080 -h /www'


async def test_a_pod_proxy_request_reaches_the_pod(harness: ProviderHarness) -> None:
    httpd = {
        "name": "web",
        "image": BUSYBOX_IMAGE,
        "command": ["sh", "-c", SERVE],
        "ports": [{"containerPort": 8080}],
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
    }
    await harness.create(harness.manifest("server", [httpd], terminationGracePeriodSeconds=1))
    await harness.wait_for("server", lambda p: condition(p, "Ready").get("status") == "True", within=60)
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
    # without a port, the first container port; with one, that port
    assert await harness.api.get(f"{pods}/server/proxy/read") == {"received": {"prestop": 1}}
    assert await harness.api.get(f"{pods}/http:server:8080/proxy/read") == {"received": {"prestop": 1}}
    with pytest.raises(ApiStatusError) as refused:  # nothing listens there: the dial error, 503
        await harness.api.get(f"{pods}/server:8081/proxy/read")
    assert refused.value.status == 503
    assert "error trying to reach service" in refused.value.message
