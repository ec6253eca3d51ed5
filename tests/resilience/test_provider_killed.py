"""Resilience, scenario 1 (issue 12): the provider SIGKILLed mid-burst and mid-deletion, restarted.

What lives here: the scenario's one test, on both control planes, and the readers of what the
API and the engine hold at the instant of each kill. The provider runs as a real
`python -m vk_cli run` process (`ProviderHarness.start_provider_process`), so SIGKILL gives
it no chance to clean up. 50 pods are created at once and the provider is killed once a third
of them are Running, then restarted: every pod ends Running, each app container the engine ran
at the kill is adopted (same container ID, restartCount 0), and the engine holds exactly one
sandbox and one app container per pod. Then all 50 are deleted gracefully at once and the
provider is killed once a third are gone, then restarted: every pod leaves the API and the
engine, with exactly one final DELETE each. The pods' history (`PodHistory`) must never go
backwards. Must not: reach into the provider; the verdict comes from the API, the engine and
the watched history (`tests/support/convergence.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.convergence import docker_disagreements, pod_deletes, watched_sandbox
from tests.support.density import scaled, scenario_pods
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import NAMESPACE, ProviderHarness

BASE_PODS = 50
PODS = scenario_pods(BASE_PODS)  # VK_RESILIENCE_PODS=500: the scenario at density (issue 32)
NODE_LABEL = "io.vk-provider.node"
POD_UID_LABEL = "io.vk-provider.pod.uid"
ROLE_LABEL = "io.vk-provider.role"
# Each pod ignores SIGTERM, so its graceful deletion takes its whole grace period: spread over
# 2..11 s, the pods leave the API one group after another and the kill lands mid-deletion.
GRACE_SPREAD = 10


async def node_pods(harness: ProviderHarness) -> list[dict[str, Any]]:
    answer = await harness.api.get(
        f"/api/v1/namespaces/{NAMESPACE}/pods", {"fieldSelector": f"spec.nodeName={harness.node_name}"}
    )
    return list(answer.get("items") or [])


def running(pod: dict[str, Any]) -> bool:
    return phase(pod) == "Running" and bool(container_status(pod, "main").get("ready"))


async def wait_pods(
    harness: ProviderHarness, done: Callable[[list[dict[str, Any]]], bool], what: str, interval: float
) -> list[dict[str, Any]]:
    """The node's pods once `done(pods)` holds; the failure shows the phases last seen."""
    pods: list[dict[str, Any]] = []

    async def check() -> bool:
        nonlocal pods
        pods = await node_pods(harness)
        return done(pods)

    def seen() -> str:
        phases = Counter(phase(p) or "none" for p in pods)
        waiting = sorted(p["metadata"]["name"] for p in pods if not running(p))[:20]
        return f"{what}: {len(pods)} pods, phases {dict(phases)}, not running {waiting}"

    await eventually(check, within=scaled(240, BASE_PODS), interval=interval, what=seen)
    return pods


def engine_apps(docker_client: Any, node: str) -> dict[str, list[Any]]:
    """The node's app containers by pod UID, as the engine holds them now."""
    found: dict[str, list[Any]] = {}
    for container in labelled(docker_client, [f"{NODE_LABEL}={node}", f"{ROLE_LABEL}=app"]):
        found.setdefault(container.labels.get(POD_UID_LABEL, ""), []).append(container)
    return found


async def settled_engine_apps(docker_client: Any, node: str) -> dict[str, list[Any]]:
    """engine_apps once two listings a second apart agree: a create or start the killed
    provider had sent is finished by the engine after the provider died, and what it then
    holds is what the next provider finds."""

    def shape(apps: dict[str, list[Any]]) -> set[tuple[str, str, str]]:
        return {(uid, c.id, c.status) for uid, cs in apps.items() for c in cs}

    before = engine_apps(docker_client, node)
    for _ in range(15):
        await asyncio.sleep(1.0)
        now = engine_apps(docker_client, node)
        if shape(now) == shape(before):
            return now
        before = now
    return before


def duplicates(docker_client: Any, node: str, pods: list[dict[str, Any]]) -> list[str]:
    """Pods whose containers are more than one sandbox and one instance per restart."""
    problems: list[str] = []
    for pod in pods:
        uid = pod["metadata"]["uid"]
        mine = labelled(docker_client, f"{POD_UID_LABEL}={uid}")
        sandboxes = [c for c in mine if c.labels.get(ROLE_LABEL) == "sandbox"]
        apps = [c for c in mine if c.labels.get(ROLE_LABEL) == "app"]
        allowed = 1 + int(container_status(pod, "main").get("restartCount", 0))
        if len(sandboxes) != 1 or len(apps) != allowed:
            states = sorted(f"{c.labels.get(ROLE_LABEL)}:{c.status}" for c in mine)
            problems.append(f"{pod['metadata']['name']}: {states}")
    return problems


@pytest.mark.timeout(scaled(420, BASE_PODS))
async def test_provider_killed_mid_burst_and_mid_deletion_loses_and_duplicates_nothing(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    async with watched_sandbox(node_name, tmp_path, plane, max_pods=PODS) as (harness, history):
        await history.start()
        deletes_before = await pod_deletes(plane, harness.api)
        harness.start_provider_process()
        names = [f"burst-{i}" for i in range(PODS)]
        main = sh("main", "trap '' TERM; sleep 3600")
        burst = [
            harness.manifest(name, [main], terminationGracePeriodSeconds=2 + i % GRACE_SPREAD)
            for i, name in enumerate(names)
        ]
        uids = {pod["metadata"]["uid"] for pod in await asyncio.gather(*map(harness.create, burst))}

        # -- kill 1: a third of the burst Running --------------------------------------------
        await wait_pods(harness, lambda ps: sum(map(running, ps)) >= PODS // 3, "a third Running", 0.1)
        harness.kill_provider_process()
        engine_at_kill = await settled_engine_apps(docker_client, node_name)
        running_at_kill = {p["metadata"]["uid"]: p for p in await node_pods(harness) if running(p)}
        assert len(running_at_kill) < PODS, "the kill must land mid-burst"
        # What the engine ran when the provider died is adopted; a container it had created
        # but not started yet is started anew, one restart more, as the kubelet does
        # (ShouldContainerBeRestarted in pkg/kubelet/container/helpers.go, the restartCount of
        # startContainer in pkg/kubelet/kuberuntime/kuberuntime_container.go).
        adopted = {uid: c.id for uid, cs in engine_at_kill.items() for c in cs if c.status == "running"}
        never_started = {uid for uid, cs in engine_at_kill.items() if cs and uid not in adopted}
        for uid, pod in running_at_kill.items():
            assert container_status(pod, "main")["containerID"] == f"docker://{adopted[uid]}"

        restarted = time.monotonic()
        harness.start_provider_process()
        pods = await wait_pods(
            harness, lambda ps: len(ps) == PODS and all(map(running, ps)), "all Running", 0.5
        )
        burst_converged = time.monotonic() - restarted
        assert {p["metadata"]["uid"] for p in pods} == uids, "no pod lost or replaced"
        for pod in pods:
            uid, status = pod["metadata"]["uid"], container_status(pod, "main")
            if uid in adopted:
                assert status["containerID"] == f"docker://{adopted[uid]}", pod["metadata"]["name"]
            assert status["restartCount"] == int(uid in never_started), (pod["metadata"]["name"], status)
        assert docker_disagreements(docker_client, node_name, pods) == []
        assert duplicates(docker_client, node_name, pods) == []

        # -- kill 2: a third of the graceful deletions done -----------------------------------
        await asyncio.gather(*map(harness.delete, names))
        await wait_pods(harness, lambda ps: len(ps) <= PODS - PODS // 3, "a third deleted", 0.1)
        harness.kill_provider_process()
        left_at_kill = len(await node_pods(harness))
        assert left_at_kill > 0, "the kill must land mid-deletion"

        restarted = time.monotonic()
        harness.start_provider_process()
        await wait_pods(harness, lambda ps: not ps, "all deleted", 0.5)
        await eventually(
            lambda: not labelled(docker_client, f"{NODE_LABEL}={node_name}"),
            within=scaled(60, BASE_PODS),
            what="no container left on the node",
        )
        deletion_converged = time.monotonic() - restarted
        await eventually(
            lambda: history.deleted >= uids, within=scaled(30, BASE_PODS), what="the watch saw every deletion"
        )
        final_deletes = await pod_deletes(plane, harness.api) - deletes_before - PODS
        backwards = history.backwards()
        assert backwards == []
        assert final_deletes == PODS, "exactly one final DELETE per deleted pod"
        print(
            f"RESILIENCE provider-killed plane={plane.kind} pods={PODS} kills=2"
            f" running_at_kill={len(running_at_kill)} engine_running_at_kill={len(adopted)}"
            f" never_started_at_kill={len(never_started)} burst_converge_s={burst_converged:.1f}"
            f" left_at_kill={left_at_kill} deletion_converge_s={deletion_converged:.1f}"
            f" final_deletes={final_deletes} transitions={history.transitions()} relists={history.relists}"
            f" lost=0 duplicated=0 backwards={len(backwards)}"
        )
