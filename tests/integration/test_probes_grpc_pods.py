"""A gRPC readiness probe of a real pod, answered by the health server of the test process.

The test images have no gRPC server, so the pod relays its port 9000 (busybox nc) to the test
process's tests/support/grpc_health_server.py, listening on the bridge's gateway address: the
provider probes the pod IP as the kubelet does, and the server the test controls answers.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.grpc_health_server import HealthServer
from tests.support.manifests import sh
from tests.support.pod_status import condition
from tests.support.provider_harness import ProviderHarness
from vk_sandbox.bridge_address import gateway_of

pytestmark = pytest.mark.docker


async def test_grpc_readiness_follows_the_serving_status(
    harness: ProviderHarness, docker_client: Any
) -> None:
    gateway = gateway_of(docker_client.networks.get("bridge").attrs["IPAM"]["Config"])
    assert gateway is not None, "the Docker bridge network has no address"
    async with HealthServer(gateway) as server:
        server.statuses["app"] = "SERVING"
        relay = (
            f"gw=$(ip route | awk '/^default/ {{print $3}}'); exec nc -ll -p 9000 -e nc \"$gw\" {server.port}"
        )
        probe = {"grpc": {"port": 9000, "service": "app"}, "periodSeconds": 1, "failureThreshold": 1}
        container = sh("main", relay, readinessProbe=probe)
        await harness.create(harness.manifest("grpc", [container], terminationGracePeriodSeconds=1))
        await harness.wait_for("grpc", lambda p: condition(p, "Ready").get("status") == "True")
        assert server.requests and server.requests[-1][0] == "app"
        assert server.requests[-1][1].startswith("kube-probe/1.37")

        server.statuses["app"] = "NOT_SERVING"
        await harness.wait_for("grpc", lambda p: condition(p, "Ready").get("status") == "False")
        event = await harness.wait_event("grpc", "Unhealthy")
        assert event["message"] == 'Readiness probe failed: service unhealthy (responded with "NOT_SERVING")'
