"""Lifecycle hooks and probe-level grace on real Docker through the API: a failing postStart
(exec and httpGet) kills the container with the kubelet's Events and it restarts by policy; a
preStop `sleep` delays the stop; a liveness failure kills with the probe's
terminationGracePeriodSeconds instead of the pod's."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.manifests import sh
from tests.support.pod_status import container_status, phase
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker

# Ignores SIGTERM: only SIGKILL at the end of the grace period stops it.
STUBBORN = "trap '' TERM; while true; do sleep 0.2; done"


def restarts(pod: dict[str, Any], name: str = "main") -> int:
    return int(container_status(pod, name).get("restartCount") or 0)


@pytest.mark.parametrize(
    "hook",
    [
        {"exec": {"command": ["sh", "-c", "exit 7"]}},
        {"httpGet": {"path": "/missing", "port": 8080}},  # httpd answers 404
    ],
    ids=["exec", "httpGet"],
)
async def test_failing_post_start_kills_the_container_and_it_restarts_by_policy(
    harness: ProviderHarness, hook: dict[str, Any]
) -> None:
    container = sh(
        "main",
        "mkdir -p /www && exec httpd -f -p 8080 -h /www",
        lifecycle={"postStart": hook},
    )
    await harness.create(harness.manifest("hook", [container], terminationGracePeriodSeconds=1))
    pod = await harness.wait_for("hook", lambda p: restarts(p) >= 1, within=90)
    assert "terminated" in (container_status(pod, "main").get("lastState") or {})
    failed = await harness.wait_event("hook", "FailedPostStartHook")
    assert (failed["type"], failed["message"]) == ("Warning", "PostStartHook failed")
    assert failed["involvedObject"]["fieldPath"] == "spec.containers{main}"
    killing = [e["message"] for e in await harness.events("hook") if e["reason"] == "Killing"]
    assert "FailedPostStartHook" in killing


async def test_pre_stop_sleep_delays_the_stop(harness: ProviderHarness) -> None:
    container = sh("main", "trap 'exit 0' TERM; while true; do sleep 0.2; done")
    container["lifecycle"] = {"preStop": {"sleep": {"seconds": 3}}}
    await harness.create(harness.manifest("sleeper", [container], terminationGracePeriodSeconds=30))
    await harness.wait_for("sleeper", lambda p: phase(p) == "Running")
    began = time.monotonic()
    await harness.delete("sleeper")
    gone = await harness.wait_gone("sleeper", within=30)
    assert 3 <= gone - began < 20  # the sleep, then SIGTERM ends it at once


async def test_liveness_failure_kills_with_the_probes_grace_period(harness: ProviderHarness) -> None:
    liveness = {
        "exec": {"command": ["false"]},
        "periodSeconds": 1,
        "failureThreshold": 1,
        "terminationGracePeriodSeconds": 1,
    }
    container = sh("main", STUBBORN, livenessProbe=liveness)
    # The pod's grace of 120 s would hold the stubborn container for two minutes.
    await harness.create(harness.manifest("probe-grace", [container], terminationGracePeriodSeconds=120))
    began = time.monotonic()
    pod = await harness.wait_for("probe-grace", lambda p: restarts(p) >= 1, within=60)
    assert time.monotonic() - began < 60
    last = container_status(pod, "main")["lastState"]["terminated"]
    assert last["exitCode"] == 137  # SIGKILL after the probe's 1 s
