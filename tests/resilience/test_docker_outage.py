"""Scenario 4 of the resilience suite: the Docker engine stopped for 30 s, then started again.

What lives here: the one test that stops the machine's dockerd (SIGTERM; the containers die with
it, there is no live-restore) under ten running pods of every restart policy, creates one more
pod while the engine is down, keeps it down 30 s, starts it again as CI does, and checks what a
user sees: the Node NotReady with the engine's error while it is down and Ready after; every pod
as its restart policy says (Always and OnFailure after a failure: running again, restartCount
+1; Never and OnFailure after success: a terminal phase that stays); the engine, the API and the
pods' watched history agreeing; then all deleted: one final DELETE per pod still running (the
apiserver removes a terminal one at once), no container left.
Real control plane only: the upstream node lifecycle controller is part of what the node's
Ready condition goes through, and one 30 s outage per `make test` is the budget.
Must not: run beside other tests (marker `engine_exclusive`), or leave the engine down
(`tests/support/dockerd.py`).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.convergence import PodHistory, docker_disagreements, pod_deletes
from tests.support.density import scaled, scenario_pods
from tests.support.dockerd import engine_stopped
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import condition, container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness

BASE_PODS = 10
TEST_TIMEOUT = scaled(300, BASE_PODS)  # pytest-timeout for the whole test, at density too
pytestmark = [pytest.mark.real_only, pytest.mark.engine_exclusive, pytest.mark.timeout(TEST_TIMEOUT)]
OUTAGE_SECONDS = 30.0
RESYNC_SECONDS = 600.0
NODE_LABEL = "io.vk-provider.node"
POD_UID_LABEL = "io.vk-provider.pod.uid"


def trapping(exit_code: int) -> dict[str, Any]:
    """A container that runs until SIGTERM (what dockerd sends on shutdown), then exits `exit_code`."""
    return sh("main", f"trap 'exit {exit_code}' TERM; sleep 3600 & wait")


# name: (restartPolicy, exit code on SIGTERM, the phase after the outage, restartCount after it);
# VK_RESILIENCE_PODS=500 adds Always pods up to that many (the scenario at density, issue 32).
PODS: dict[str, tuple[str, int, str, int]] = {
    **{f"always-{i}": ("Always", 0, "Running", 1) for i in range(4 + scenario_pods(BASE_PODS) - BASE_PODS)},
    **{f"onfailure-error-{i}": ("OnFailure", 3, "Running", 1) for i in range(2)},
    **{f"onfailure-ok-{i}": ("OnFailure", 0, "Succeeded", 0) for i in range(2)},
    "never-ok": ("Never", 0, "Succeeded", 0),
    "never-error": ("Never", 3, "Failed", 0),
}
LATE = "created-while-down"  # Always, created during the outage: starts once the engine is back


def mismatch(name: str, pod: dict[str, Any] | None) -> str:
    """Why `pod` is not yet as the scenario expects ('' when it is)."""
    if pod is None:
        return f"{name}: lost"
    _, exit_code, want_phase, want_restarts = PODS.get(name, ("Always", 0, "Running", 0))  # LATE
    main = container_status(pod, "main")
    state = main.get("state") or {}
    seen = f"{name}: {phase(pod)} restartCount={main.get('restartCount')} state={sorted(state)}"
    if phase(pod) != want_phase or main.get("restartCount") != want_restarts:
        return seen
    if want_phase == "Running" and not (state.get("running") and main.get("ready")):
        return seen
    if want_phase != "Running" and (state.get("terminated") or {}).get("exitCode") != exit_code:
        return f"{seen} terminated={state.get('terminated')}"
    return ""


def engine_rests(docker_client: Any, pods: list[dict[str, Any]]) -> list[str]:
    """A terminal pod's containers all stopped and its app container run exactly once."""
    problems = []
    for pod in pods:
        if phase(pod) not in ("Succeeded", "Failed"):
            continue
        mine = labelled(docker_client, f"{POD_UID_LABEL}={pod['metadata']['uid']}")
        if running := [c.name for c in mine if c.status == "running"]:
            problems.append(f"{pod['metadata']['name']}: terminal but {running} run")
        if (apps := sum(c.labels.get("io.vk-provider.role") == "app" for c in mine)) != 1:
            problems.append(f"{pod['metadata']['name']}: {apps} app containers")
    return problems


async def node_ready(harness: ProviderHarness) -> dict[str, Any]:
    return condition(await harness.api.get(f"/api/v1/nodes/{harness.node_name}"), "Ready")


async def test_docker_engine_down_30s_then_back_loses_nothing(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    # No periodic resync within the test: what died with the engine must be noticed without it.
    harness = ProviderHarness(
        node_name, tmp_path, plane=plane, resync_interval=RESYNC_SECONDS, max_pods=len(PODS) + 1
    )
    await harness.start_sandbox()
    history = PodHistory(harness.api, node_name)
    try:
        await harness.start_provider()
        for name, (policy, exit_code, _, _) in PODS.items():
            await harness.create(harness.manifest(name, [trapping(exit_code)], restartPolicy=policy))
        for name in PODS:
            await harness.wait_for(
                name, lambda p: bool(container_status(p, "main").get("ready")), scaled(120, BASE_PODS)
            )
        await history.start()

        started = time.monotonic()
        async with engine_stopped(within=scaled(60, BASE_PODS)):
            stopped = time.monotonic()
            await harness.create(harness.manifest(LATE, [trapping(0)]))
            ready = await eventually(
                lambda: _not_ready(harness), within=60, interval=0.5, what="node Ready=False"
            )
            not_ready_after = time.monotonic() - started
            assert ready["reason"] == "KubeletNotReady", ready
            assert "Docker engine at" in ready["message"] and "does not answer" in ready["message"], ready
            await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - stopped)))  # the outage
        back = time.monotonic()

        names = [*PODS, LATE]
        pods: list[dict[str, Any]] = []
        problems: list[str] = []

        async def converged() -> bool:
            nonlocal pods, problems
            found = [await harness.get(name) for name in names]
            problems = [why for name, pod in zip(names, found, strict=True) if (why := mismatch(name, pod))]
            pods = [pod for pod in found if pod is not None]
            if not problems:
                problems = docker_disagreements(docker_client, node_name, pods) + engine_rests(
                    docker_client, pods
                )
            return not problems

        await eventually(
            converged, within=scaled(120, BASE_PODS), interval=1.0, what=lambda: f"convergence: {problems}"
        )
        converge_s = time.monotonic() - back
        ready = await eventually(
            lambda: _ready_again(harness), within=60, interval=0.5, what="node Ready again"
        )
        assert ready["reason"] == "KubeletReady", ready

        deletes_before = await pod_deletes(plane, harness.api)
        for name in names:
            await harness.delete(name)
        for name in names:
            await harness.wait_gone(name, within=scaled(90, BASE_PODS))
        await history.stop()
        final_deletes = await pod_deletes(plane, harness.api) - deletes_before - len(names)
        assert history.backwards() == []
        # The apiserver deletes a terminal pod at once (grace 0); the node finishes the others.
        running = sum(phase(pod) == "Running" for pod in pods)
        assert final_deletes == running, "one final DELETE per running pod deleted"
        await eventually(
            lambda: not labelled(docker_client, f"{NODE_LABEL}={node_name}"),
            within=scaled(60, BASE_PODS),
            what="no container of the node left",
        )
        restarted = sum(1 for name in PODS if PODS[name][3])
        print(
            f"RESILIENCE docker-outage plane={plane.kind} pods={len(names)} outage_s={OUTAGE_SECONDS:g} "
            f"stop_s={stopped - started:.1f} not_ready_after_s={not_ready_after:.1f} "
            f"converge_s={converge_s:.1f} restarted={restarted} terminal={len(PODS) - restarted} "
            f"final_deletes={final_deletes} lost=0 duplicated=0 backwards=0 relists={history.relists}"
        )
    finally:
        await history.stop()
        await harness.close()


async def _not_ready(harness: ProviderHarness) -> dict[str, Any] | None:
    ready = await node_ready(harness)
    return ready if ready.get("status") == "False" else None


async def _ready_again(harness: ProviderHarness) -> dict[str, Any] | None:
    ready = await node_ready(harness)
    return ready if ready.get("status") == "True" else None
