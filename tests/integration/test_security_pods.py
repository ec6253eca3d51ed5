"""Security findings of issue 13 on real Docker, through the API as a user sees them.

runAsNonRoot (item 4) is enforced as the kubelet's verifyRunAsNonRoot against the image's user,
pod sysctls (item 8) are admitted only from the kubelet's safe set (plus docker.allow.unsafeSysctls),
and a pod whose quantity is out of range (item 9) gets CreateContainerConfigError while the
provider runs the other pods.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.manifests import sh
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker


def pod_containers(docker_client: Any, uid: str, role: str | None = None) -> list[Any]:
    labels = [f"io.vk-provider.pod.uid={uid}"]
    if role is not None:
        labels.append(f"io.vk-provider.role={role}")
    return labelled(docker_client, labels)


async def logs_of(docker_client: Any, pod: dict[str, Any], name: str, wanted: bytes) -> bytes:
    container_id = container_status(pod, name)["containerID"].removeprefix("docker://")
    logs = b""

    def logged() -> bool:
        nonlocal logs
        logs = docker_client.containers.get(container_id).logs()
        return wanted in logs

    await eventually(
        logged, within=30, interval=0.3, what=lambda: f"{wanted!r} in the log of {name} ({logs!r})"
    )
    return bytes(logs)


async def test_run_as_non_root_refuses_a_root_image_and_runs_a_non_root_user(
    harness: ProviderHarness, docker_client: Any
) -> None:
    root = await harness.create(
        harness.manifest("rootimage", [sh("main", "sleep 3600")], securityContext={"runAsNonRoot": True})
    )
    zero = await harness.create(
        harness.manifest(
            "runasroot", [sh("main", "sleep 3600", securityContext={"runAsNonRoot": True, "runAsUser": 0})]
        )
    )
    await harness.create(
        harness.manifest(
            "nonroot",
            [sh("main", "id -u; sleep 3600")],
            securityContext={"runAsNonRoot": True, "runAsUser": 1234},
        )
    )
    refused = await harness.wait_for(
        "rootimage", lambda p: waiting_reason(p, "main") == "CreateContainerConfigError"
    )
    message = container_status(refused, "main")["state"]["waiting"]["message"]
    uid = root["metadata"]["uid"]
    assert message == (
        "container has runAsNonRoot and image will run as root "
        f'(pod: "rootimage_default({uid})", container: main)'
    )
    failed = await harness.wait_event("rootimage", "Failed")
    assert (failed["type"], failed["message"]) == ("Warning", f"Error: {message}")
    assert failed["involvedObject"]["fieldPath"] == "spec.containers{main}"
    runasroot = await harness.wait_for(
        "runasroot", lambda p: waiting_reason(p, "main") == "CreateContainerConfigError"
    )
    assert container_status(runasroot, "main")["state"]["waiting"]["message"] == (
        "container's runAsUser breaks non-root policy "
        f'(pod: "runasroot_default({zero["metadata"]["uid"]})", container: main)'
    )
    running = await harness.wait_for("nonroot", lambda p: phase(p) == "Running")
    assert b"1234" in await logs_of(docker_client, running, "main", b"1234")
    # The refused containers were never created, and stay so across the retries.
    await asyncio.sleep(2)
    assert phase(await harness.get("rootimage") or {}) == "Pending"
    assert pod_containers(docker_client, uid, "app") == []
    assert pod_containers(docker_client, zero["metadata"]["uid"], "app") == []


async def test_a_forbidden_sysctl_fails_the_pod_and_a_safe_one_runs(
    harness: ProviderHarness, docker_client: Any
) -> None:
    forbidden = await harness.create(
        harness.manifest(
            "msgmax",
            [sh("main", "sleep 3600")],
            securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "65536"}]},
        )
    )
    await harness.create(
        harness.manifest(
            "pinggroup",
            [sh("main", "cat /proc/sys/net/ipv4/ping_group_range; sleep 3600")],
            securityContext={"sysctls": [{"name": "net.ipv4.ping_group_range", "value": "0 2147483647"}]},
        )
    )
    failed = await harness.wait_for("msgmax", lambda p: phase(p) == "Failed")
    assert failed["status"]["reason"] == "SysctlForbidden"
    assert (
        failed["status"]["message"] == 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted'
    )
    event = await harness.wait_event("msgmax", "SysctlForbidden")  # kubelet.go rejectPod's Event
    assert (event["type"], event["message"]) == (
        "Warning",
        'forbidden sysctl: "kernel.msgmax" not allowlisted',
    )
    # Rejected before anything ran: not even a sandbox.
    assert pod_containers(docker_client, forbidden["metadata"]["uid"]) == []
    running = await harness.wait_for("pinggroup", lambda p: phase(p) == "Running")
    assert b"0\t2147483647" in await logs_of(docker_client, running, "main", b"2147483647")


async def test_an_out_of_range_quantity_is_a_config_error_and_other_pods_run(
    harness: ProviderHarness, docker_client: Any
) -> None:
    huge = await harness.create(
        harness.manifest("huge", [sh("main", "sleep 3600", resources={"limits": {"memory": "1e1000000"}})])
    )
    await harness.create(harness.manifest("steady", [sh("main", "sleep 3600")]))
    refused = await harness.wait_for(
        "huge", lambda p: waiting_reason(p, "main") == "CreateContainerConfigError"
    )
    # The quoted value is the stored one: the real apiserver keeps it in canonical form (10e999999).
    stored = refused["spec"]["containers"][0]["resources"]["limits"]["memory"]
    assert container_status(refused, "main")["state"]["waiting"]["message"] == (
        f"spec.containers[0].resources: quantity out of range (at most 9223372036854775807): '{stored}'"
    )
    await harness.wait_for("steady", lambda p: phase(p) == "Running")
    failed = await harness.wait_event("huge", "Failed")
    assert failed["message"].startswith("Error: spec.containers[0].resources: quantity out of range")
    assert not [e for e in await harness.events("huge") if e.get("reason") == "FailedSync"]
    assert pod_containers(docker_client, huge["metadata"]["uid"], "app") == []
