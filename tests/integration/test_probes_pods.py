"""Probes on real Docker through the sandbox API, as a user sees them: readiness (exec and
httpGet), liveness restarts, and a startup probe gating readiness.

Each test runs the sandbox and the provider in-process for a unique node
(tests/support/provider_harness.py); containers are removed by the `node_name` fixture.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.manifests import sh
from tests.support.pod_status import condition, container_status
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker
# sh as PID 1 ignores SIGTERM: trap it so kills and deletions are quick.
LOOP = "trap 'exit 0' TERM; while true; do sleep 0.2; done"


def exec_probe(*command: str, **extra: Any) -> dict[str, Any]:
    return {"exec": {"command": list(command)}, "periodSeconds": 1, **extra}


def running(pod: dict[str, Any], name: str) -> bool:
    return "running" in (container_status(pod, name).get("state") or {})


def ready(pod: dict[str, Any]) -> bool:
    return condition(pod, "Ready").get("status") == "True"


async def test_exec_readiness_probe_keeps_the_pod_unready_until_it_passes(harness: ProviderHarness) -> None:
    script = f"sleep 5; touch /tmp/ready; {LOOP}"
    await harness.create(
        harness.manifest(
            "ready-exec",
            [sh("app", script, readinessProbe=exec_probe("test", "-f", "/tmp/ready"))],
            terminationGracePeriodSeconds=1,
        )
    )
    pod = await harness.wait_for("ready-exec", lambda p: running(p, "app"), within=60)
    assert not ready(pod)
    assert container_status(pod, "app")["ready"] is False
    assert container_status(pod, "app")["started"] is True
    assert condition(pod, "ContainersReady")["reason"] == "ContainersNotReady"
    unhealthy = await harness.wait_event("ready-exec", "Unhealthy", within=30)
    assert unhealthy["message"].startswith("Readiness probe failed")
    assert unhealthy["involvedObject"]["fieldPath"] == "spec.containers{app}"
    pod = await harness.wait_for("ready-exec", ready, within=60)
    assert container_status(pod, "app")["ready"] is True
    assert container_status(pod, "app")["restartCount"] == 0


async def test_http_get_readiness_on_httpd_and_a_passing_tcp_liveness(harness: ProviderHarness) -> None:
    httpd = {
        "name": "web",
        "image": BUSYBOX_IMAGE,
        "command": ["httpd", "-f", "-p", "8080", "-h", "/var/www"],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/index.html", "port": "http"}, "periodSeconds": 1},
        "livenessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 1},
    }
    await harness.create(harness.manifest("ready-http", [httpd], terminationGracePeriodSeconds=1))
    pod = await harness.wait_for("ready-http", ready, within=60)
    assert container_status(pod, "web")["ready"] is True
    assert condition(pod, "ContainersReady")["status"] == "True"
    await asyncio.sleep(3)  # several liveness periods later nothing was killed
    pod = await harness.get("ready-http") or {}
    assert container_status(pod, "web")["restartCount"] == 0
    assert ready(pod)
    reasons = {e["reason"] for e in await harness.events("ready-http")}
    assert "Unhealthy" not in reasons and "Killing" not in reasons


async def test_failing_liveness_probe_restarts_the_container(harness: ProviderHarness) -> None:
    script = f"touch /tmp/alive; sleep 3; rm /tmp/alive; {LOOP}"
    liveness = exec_probe("test", "-f", "/tmp/alive", failureThreshold=2, terminationGracePeriodSeconds=1)
    await harness.create(harness.manifest("live", [sh("app", script, livenessProbe=liveness)]))
    pod = await harness.wait_for(
        "live", lambda p: (container_status(p, "app").get("restartCount") or 0) >= 1, within=90
    )
    last = container_status(pod, "app").get("lastState") or {}
    assert "terminated" in last
    events = await harness.events("live")
    unhealthy = [e for e in events if e["reason"] == "Unhealthy"]
    assert unhealthy and unhealthy[0]["message"].startswith("Liveness probe failed")
    killing = [e["message"] for e in events if e["reason"] == "Killing"]
    assert "Container app failed liveness probe, will be restarted" in killing


async def test_startup_probe_gates_readiness_and_liveness(harness: ProviderHarness) -> None:
    script = f"sleep 5; touch /tmp/started; {LOOP}"
    started_file = ("test", "-f", "/tmp/started")
    container = sh(
        "app",
        script,
        startupProbe=exec_probe(*started_file, failureThreshold=60),
        readinessProbe=exec_probe("true"),
        # Would kill the container within a second if it ran before the startup probe passed.
        livenessProbe=exec_probe(*started_file, failureThreshold=1, terminationGracePeriodSeconds=1),
    )
    await harness.create(harness.manifest("startup", [container], terminationGracePeriodSeconds=1))
    pod = await harness.wait_for("startup", lambda p: running(p, "app"), within=60)
    assert container_status(pod, "app")["started"] is False
    assert container_status(pod, "app")["ready"] is False
    assert not ready(pod)
    pod = await harness.wait_for("startup", ready, within=60)
    status = container_status(pod, "app")
    assert (status["started"], status["ready"], status["restartCount"]) == (True, True, 0)
    messages = [e["message"] for e in await harness.events("startup") if e["reason"] == "Unhealthy"]
    assert messages and all(m.startswith("Startup probe failed") for m in messages)


async def test_sidecar_startup_probe_holds_back_the_app_containers(harness: ProviderHarness) -> None:
    sidecar = sh(
        "side",
        f"sleep 4; touch /tmp/up; {LOOP}",
        restartPolicy="Always",
        startupProbe=exec_probe("test", "-f", "/tmp/up", failureThreshold=60),
    )
    await harness.create(
        harness.manifest(
            "sidecar", [sh("app", LOOP)], initContainers=[sidecar], terminationGracePeriodSeconds=1
        )
    )
    pod = await harness.wait_for("sidecar", lambda p: running(p, "side"), within=60)
    assert container_status(pod, "side")["started"] is False
    assert "waiting" in container_status(pod, "app")["state"]
    pod = await harness.wait_for("sidecar", lambda p: running(p, "app"), within=60)
    assert container_status(pod, "side")["started"] is True
    pod = await harness.wait_for("sidecar", ready, within=30)
