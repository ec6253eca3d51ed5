"""Pod spec features on real Docker through the sandbox API: downward API IPs, preStop, deadlines."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.pod_status import condition, container_status, phase, waiting_reason
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker


async def test_pod_and_host_ip_reach_the_environment_and_command(harness: ProviderHarness) -> None:
    env = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "WHO", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "GREETING", "value": "hi $(WHO)"},
    ]
    script = 'printf "%s|%s|%s|%s" "$POD_IP" "$HOST_IP" "$GREETING" "$(ARG)" > /dev/termination-log'
    container = {
        "name": "main",
        "image": BUSYBOX_IMAGE,
        "command": ["sh", "-c", script],
        "env": [*env, {"name": "ARG", "value": "x"}],
    }
    await harness.create(harness.manifest("downward", [container], restartPolicy="Never"))
    pod = await harness.wait_for("downward", lambda p: phase(p) == "Succeeded")
    message = container_status(pod, "main")["state"]["terminated"]["message"]
    assert message == f"{pod['status']['podIP']}|127.0.0.1|hi downward|x"


async def test_pre_stop_hook_runs_before_the_stop_signal(harness: ProviderHarness) -> None:
    container = {
        "name": "main",
        "image": BUSYBOX_IMAGE,
        # Ignores SIGTERM: only the file written by the preStop hook makes it exit.
        "command": ["sh", "-c", "trap '' TERM; while [ ! -f /tmp/stop ]; do sleep 0.2; done"],
        "lifecycle": {"preStop": {"exec": {"command": ["touch", "/tmp/stop"]}}},
    }
    await harness.create(harness.manifest("hooked", [container], terminationGracePeriodSeconds=60))
    await harness.wait_for("hooked", lambda p: phase(p) == "Running")
    began = time.monotonic()
    await harness.delete("hooked")
    gone = await harness.wait_gone("hooked", within=45)
    assert gone - began < 45  # the hook ended it, not SIGKILL after 60 s


async def test_image_update_restarts_only_that_container(
    harness: ProviderHarness, docker_client: Any
) -> None:
    tag = f"pods-{uuid.uuid4().hex[:8]}"
    docker_client.images.get(BUSYBOX_IMAGE).tag("vk-test/busybox", tag)
    new_image = f"vk-test/busybox:{tag}"
    try:
        containers = [
            {"name": "main", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]},
            {"name": "side", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]},
        ]
        await harness.create(harness.manifest("updated", containers, terminationGracePeriodSeconds=2))
        before = await harness.wait_for("updated", lambda p: phase(p) == "Running")
        patch = {"spec": {"containers": [{"name": "main", "image": new_image}]}}
        await harness.api.patch("/api/v1/namespaces/default/pods/updated", patch)
        after = await harness.wait_for(
            "updated",
            lambda p: (
                container_status(p, "main").get("image") == new_image
                and "running" in container_status(p, "main").get("state", {})
            ),
        )
        assert container_status(after, "main")["restartCount"] == 1
        assert (
            container_status(after, "side")["containerID"] == container_status(before, "side")["containerID"]
        )
        killing = await harness.wait_event("updated", "Killing")
        assert killing["message"] == "Container main definition changed, will be restarted"
    finally:
        await harness.delete("updated", grace=0)
        await harness.wait_gone("updated")
        docker_client.images.remove(new_image, force=True)  # only the test's tag


async def test_post_start_hook_runs_and_a_failing_one_kills_the_container(harness: ProviderHarness) -> None:
    waits_for_hook = {
        "name": "main",
        "image": BUSYBOX_IMAGE,
        "command": [
            "sh",
            "-c",
            "while [ ! -f /tmp/ready ]; do sleep 0.1; done; cat /tmp/ready > /dev/termination-log",
        ],
        "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "echo hooked > /tmp/ready"]}}},
    }
    await harness.create(harness.manifest("poststart", [waits_for_hook], restartPolicy="Never"))
    done = await harness.wait_for("poststart", lambda p: phase(p) == "Succeeded")
    assert container_status(done, "main")["state"]["terminated"]["message"] == "hooked\n"

    failing = {
        "name": "main",
        "image": BUSYBOX_IMAGE,
        "command": ["sleep", "3600"],
        "lifecycle": {"postStart": {"exec": {"command": ["false"]}}},
    }
    await harness.create(
        harness.manifest("badhook", [failing], restartPolicy="Never", terminationGracePeriodSeconds=2)
    )
    await harness.wait_for("badhook", lambda p: phase(p) == "Failed")
    event = await harness.wait_event("badhook", "FailedPostStartHook")
    assert event["message"] == "PostStartHook failed"


async def test_readiness_gate_set_by_someone_else_makes_the_pod_ready(harness: ProviderHarness) -> None:
    gate = "example.com/feature"
    container = {"name": "main", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}
    await harness.create(harness.manifest("gated", [container], readinessGates=[{"conditionType": gate}]))
    waiting = await harness.wait_for("gated", lambda p: phase(p) == "Running" and bool(condition(p, "Ready")))
    assert condition(waiting, "Ready")["status"] == "False"
    assert condition(waiting, "Ready")["reason"] == "ReadinessGatesNotReady"
    patch = {"status": {"conditions": [{"type": gate, "status": "True"}]}}
    await harness.api.patch("/api/v1/namespaces/default/pods/gated/status", patch)
    ready = await harness.wait_for(
        "gated", lambda p: condition(p, "Ready").get("status") == "True", within=30
    )
    assert condition(ready, gate)["status"] == "True"


async def test_refused_spec_fails_the_pod_with_a_clear_reason(harness: ProviderHarness) -> None:
    container = {
        "name": "main",
        "image": BUSYBOX_IMAGE,
        "command": ["sleep", "3600"],
        "securityContext": {"privileged": True},
    }
    await harness.create(harness.manifest("privileged", [container]))
    pod = await harness.wait_for("privileged", lambda p: phase(p) == "Failed")
    assert pod["status"]["reason"] == "Forbidden"
    assert "securityContext.privileged" in pod["status"]["message"]
    assert "docker.allow.privileged" in pod["status"]["message"]
    event = await harness.wait_event("privileged", "Failed")
    assert event["type"] == "Warning"


async def test_invalid_image_name_and_never_pull_become_waiting_reasons(harness: ProviderHarness) -> None:
    await harness.create(harness.manifest("badname", [{"name": "main", "image": "vk-test/Bad_Name:1"}]))
    never = {"name": "main", "image": "vk-test/absent:1", "imagePullPolicy": "Never"}
    await harness.create(harness.manifest("neverpull", [never]))
    await harness.wait_for("badname", lambda p: waiting_reason(p, "main") == "InvalidImageName")
    pod = await harness.wait_for("neverpull", lambda p: waiting_reason(p, "main") == "ErrImageNeverPull")
    assert "vk-test/absent:1" in container_status(pod, "main")["state"]["waiting"]["message"]
    event = await harness.wait_event("neverpull", "ErrImageNeverPull")
    assert event["type"] == "Warning"
