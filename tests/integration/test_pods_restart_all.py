"""RestartAllContainers on a real engine: a container exits with a code whose restartPolicyRules
rule says RestartAllContainers, and its pod restarts every container in place, init containers
first, keeping its sandbox (the same pod IP) and volumes, each container one restart more."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.manifests import sh
from tests.support.pod_status import condition, container_status, phase
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker

RULE = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}


def restarted_once(pod: dict[str, Any]) -> bool:
    main = container_status(pod, "main")
    return (
        phase(pod) == "Running" and main.get("restartCount") == 1 and "running" in (main.get("state") or {})
    )


async def test_a_rule_restarts_all_containers_in_place(harness: ProviderHarness) -> None:
    data = [{"name": "data", "mountPath": "/data"}]
    setup = sh("setup", "echo ran >> /data/runs", volumeMounts=data)
    main = sh(
        "main",
        "if [ ! -f /data/once ]; then touch /data/once; exit 42; fi; sleep 3600",
        volumeMounts=data,
        restartPolicy="Never",
        restartPolicyRules=[RULE],
    )
    side = sh("side", "sleep 3600")
    manifest = harness.manifest(
        "restart-all", [main, side], initContainers=[setup], volumes=[{"name": "data", "emptyDir": {}}]
    )
    await harness.create(manifest)
    pod = await harness.wait_for("restart-all", restarted_once, within=120)
    assert container_status(pod, "side")["restartCount"] == 1  # killed and started again
    [init] = pod["status"]["initContainerStatuses"]
    assert init["restartCount"] == 1 and init["state"]["terminated"]["exitCode"] == 0
    restarting = condition(pod, "AllContainersRestarting")
    assert restarting is not None and restarting["status"] == "False"
    killed = await harness.wait_event("restart-all", "Killing")
    assert killed["message"] == "killing"


def exits_42_once(name: str, then: str) -> dict[str, Any]:
    """A container whose first run exits 42, which its rule turns into a restart of all the
    pod's containers, and whose runs after it do `then` (a marker in the pod's emptyDir
    "workdir" at /mnt tells them apart)."""
    return sh(
        name,
        f"if [ -f /mnt/done ]; then {then}; else touch /mnt/done; exit 42; fi",
        volumeMounts=[{"name": "workdir", "mountPath": "/mnt"}],
        restartPolicy="Never",
        restartPolicyRules=[RULE],
    )


async def test_a_never_pod_restarts_its_init_sidecar_and_app_containers_in_place(
    harness: ProviderHarness,
) -> None:
    """Upstream's "should restart all containers on regular container exit": with restartPolicy
    Never the exit that triggers the rule does not fail the pod, every container (the completed
    init container too) runs again with one restart, and each shows how its last run ended."""
    source = exits_42_once("source", then="sleep 3600")
    manifest = harness.manifest(
        "never-all",
        [source, sh("regular", "sleep 3600")],
        initContainers=[sh("init", "exit 0"), sh("sidecar", "sleep 3600", restartPolicy="Always")],
        volumes=[{"name": "workdir", "emptyDir": {}}],
        restartPolicy="Never",
    )
    await harness.create(manifest)

    def all_restarted(pod: dict[str, Any]) -> bool:
        statuses = [
            *(pod["status"].get("initContainerStatuses") or []),
            *pod["status"].get("containerStatuses", []),
        ]
        return len(statuses) == 4 and all(
            s.get("restartCount") == 1 and "terminated" in (s.get("lastState") or {}) for s in statuses
        )

    pod = await harness.wait_for("never-all", all_restarted, within=120)
    assert phase(pod) in ("Pending", "Running")
    pod = await harness.wait_for("never-all", lambda p: "running" in container_status(p, "source")["state"])
    assert phase(pod) == "Running"
    assert [s["restartCount"] for s in pod["status"]["containerStatuses"]] == [1, 1]


async def test_an_init_containers_exit_restarts_the_sidecar_and_the_init_containers_before_it(
    harness: ProviderHarness,
) -> None:
    """Upstream's "should restart init and sidecar containers on init container exit": the rule
    on an init container of a Never pod; the exit does not fail the pod."""
    source = exits_42_once("source-init", then="exit 0")
    init = [sh("sidecar", "sleep 3600", restartPolicy="Always"), sh("init", "exit 0"), source]
    manifest = harness.manifest(
        "init-all",
        [sh("regular", "sleep 3600")],
        initContainers=init,
        volumes=[{"name": "workdir", "emptyDir": {}}],
        restartPolicy="Never",
    )
    await harness.create(manifest)

    def restarted(pod: dict[str, Any]) -> bool:
        statuses = {s["name"]: s for s in pod["status"].get("initContainerStatuses") or []}
        return phase(pod) == "Running" and all(
            statuses.get(n, {}).get("restartCount") == 1 for n in ("sidecar", "init", "source-init")
        )

    pod = await harness.wait_for("init-all", restarted, within=120)
    assert "running" in container_status(pod, "regular")["state"]
