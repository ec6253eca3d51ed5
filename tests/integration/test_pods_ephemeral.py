"""Ephemeral containers on real Docker, added through the pods/ephemeralcontainers subresource."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.pod_status import container_status, phase
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker


def _ephemeral_status(pod: dict[str, Any], name: str) -> dict[str, Any]:
    found = [
        s for s in (pod.get("status") or {}).get("ephemeralContainerStatuses") or [] if s["name"] == name
    ]
    return dict(found[0]) if found else {}


def _waiting(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return dict((_ephemeral_status(pod, name).get("state") or {}).get("waiting") or {})


async def _debug(harness: ProviderHarness, pod: str, debugger: dict[str, Any], waiting_reason: str) -> str:
    """Add `debugger` to `pod` and wait for it to wait with that reason; its message."""
    path = f"/api/v1/namespaces/default/pods/{pod}/ephemeralcontainers"
    await harness.api.patch(path, {"spec": {"ephemeralContainers": [debugger]}})
    found = await harness.wait_for(
        pod, lambda p: _waiting(p, debugger["name"]).get("reason") == waiting_reason
    )
    return str(_waiting(found, debugger["name"])["message"])


def _terminated(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return dict((_ephemeral_status(pod, name).get("state") or {}).get("terminated") or {})


async def test_ephemeral_containers_start_once_in_the_target_s_pid_namespace(
    harness: ProviderHarness,
) -> None:
    main = {"name": "c", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}
    await harness.create(harness.manifest("debugged", [main], terminationGracePeriodSeconds=1))
    await harness.wait_for("debugged", lambda p: phase(p) == "Running")
    ps = ["sh", "-c", "ps -o args > /dev/termination-log; exit 3"]
    debuggers = [
        {"name": "dbg", "image": BUSYBOX_IMAGE, "command": ps, "targetContainerName": "c"},
        {"name": "alone", "image": BUSYBOX_IMAGE, "command": ps},
    ]
    path = "/api/v1/namespaces/default/pods/debugged/ephemeralcontainers"
    await harness.api.patch(path, {"spec": {"ephemeralContainers": debuggers}})
    pod = await harness.wait_for(
        "debugged", lambda p: bool(_terminated(p, "dbg") and _terminated(p, "alone"))
    )
    dbg, alone = _terminated(pod, "dbg"), _terminated(pod, "alone")
    # dbg sees the target's process (PID namespace of c); alone only its own
    assert "sleep 3600" in dbg["message"] and "sleep 3600" not in alone["message"]
    assert dbg["exitCode"] == 3 and dbg["reason"] == "Error"
    status = _ephemeral_status(pod, "dbg")
    assert status["ready"] is False and status["restartCount"] == 0 and status["containerID"]
    # an ephemeral container does not change the pod's phase or restart when it exits
    assert phase(pod) == "Running" and container_status(pod, "c")["restartCount"] == 0
    await harness.wait_event("debugged", "Started")
    events = [e for e in await harness.events("debugged") if e["reason"] == "Started"]
    assert {e["involvedObject"].get("fieldPath") for e in events} >= {
        "spec.ephemeralContainers{dbg}",
        "spec.ephemeralContainers{alone}",
    }
    await asyncio.sleep(2)  # a few syncs later: started once, never again
    again = await harness.get("debugged")
    assert again is not None and _ephemeral_status(again, "dbg")["containerID"] == status["containerID"]


async def test_a_target_that_is_not_running_is_reported(harness: ProviderHarness) -> None:
    init = {"name": "init", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}
    main = {"name": "c", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}
    manifest = harness.manifest(
        "initializing", [main], terminationGracePeriodSeconds=1, initContainers=[init]
    )
    await harness.create(manifest)
    await harness.wait_for("initializing", lambda p: phase(p) == "Pending")
    debugger = {"name": "dbg", "image": BUSYBOX_IMAGE, "command": ["sleep", "5"], "targetContainerName": "c"}
    message = await _debug(harness, "initializing", debugger, "CreateContainerConfigError")
    assert message == "unable to find target container c"


async def test_an_ephemeral_container_is_held_to_the_node_s_allowances(harness: ProviderHarness) -> None:
    main = {"name": "c", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}
    await harness.create(harness.manifest("guarded", [main], terminationGracePeriodSeconds=1))
    await harness.wait_for("guarded", lambda p: phase(p) == "Running")
    ptrace = {"capabilities": {"add": ["SYS_PTRACE"]}}  # what `kubectl debug --profile=general` adds
    debugger = {"name": "dbg", "image": BUSYBOX_IMAGE, "command": ["true"], "securityContext": ptrace}
    message = await _debug(harness, "guarded", debugger, "Forbidden")
    assert message == (
        "spec.ephemeralContainers[0].securityContext.capabilities.add[0]: capability SYS_PTRACE is not "
        "allowed on this node (docker.allow.capabilities)"
    )
    pod = await harness.get("guarded")
    assert pod is not None and phase(pod) == "Running"
