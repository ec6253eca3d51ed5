"""Resilience scenario 2 (issue 12): the watches break in the middle of a 50-pod burst.

(a) Emulator: every few seconds every open watch is dropped (the emulator's `close_watches`)
and, for half a second after, the provider's watches are answered 410 Expired, as by an apiserver
whose watch cache no longer reaches back to the provider's resourceVersion; meanwhile 50 pods
are created, start, and are deleted again. (b) Real control plane: the kube-apiserver is
killed with SIGKILL while the provider starts 50 pods; the sandbox supervises it and starts
it again (`sandbox/real/process.py`). Both then check what a user would see: every pod
Running and Ready with restart count 0, the engine agreeing with the API
(`docker_disagreements`), no status step backwards in the pods' watched history, and, once
all are deleted, exactly one final DELETE per pod and no container left. On the emulator the
provider's list and watch requests must also stay within a small multiple of the drops:
relists come after a back-off, never in a tight loop.
Must not: reach into the provider; each test prints its `RESILIENCE watch-...` figures line.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.convergence import PodHistory, docker_disagreements, pod_deletes, watched_sandbox
from tests.support.manifests import sh
from tests.support.planes import Plane, RealPlane
from tests.support.pod_status import condition, container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import NAMESPACE, ProviderHarness
from vk_sandbox.api.debug import SandboxDebug

BURST = 50
DROP_EVERY = 2.5  # seconds from one drop of every watch to the next (the fault of (a))
# Seconds after each drop during which the provider's watches are answered 410: its resume
# right after the drop gets one; a relist paced by the back-off (0.8 s at least) is past it.
EXPIRED_FOR = 0.5
# The watches of the provider's Reflectors: its pods, its Node, the Services (PodHistory's
# watch of the namespace's pods is not expired: it must see every step).
PROVIDER_WATCHES = r"^/api/v1/(pods|nodes|services)$"
FOLLOWED = ("pods", "nodes", "services")
# List + watch requests per collection allowed for each drop (the 410, a paced relist or two
# and their watches) and for the first list and watch: a tight loop makes hundreds a second.
PER_DROP = 6


def burst_pod(harness: ProviderHarness, name: str) -> dict[str, Any]:
    """A long-running pod that ends at once on SIGTERM (deletions take no grace period)."""
    return harness.manifest(name, [sh("main", "trap 'exit 0' TERM; sleep 3600 & wait")])


async def create_burst(harness: ProviderHarness) -> list[str]:
    names = [f"burst-{i:02d}" for i in range(BURST)]
    for name in names:
        await harness.create(burst_pod(harness, name))
    return names


class NodePods:
    """The node's pods as the user lists them; `lists` counts the lists (the emulator does too)."""

    def __init__(self, harness: ProviderHarness) -> None:
        self.harness = harness
        self.node = harness.node_name
        self.lists = 0

    async def __call__(self) -> list[dict[str, Any]]:
        self.lists += 1
        answer = await self.harness.api.get(
            f"/api/v1/namespaces/{NAMESPACE}/pods",
            {"fieldSelector": f"spec.nodeName={self.node}"},
        )
        return list(answer.get("items") or [])


def settled(pod: dict[str, Any]) -> bool:
    """Running, Ready, its container running and never restarted."""
    main = container_status(pod, "main")
    return (
        phase(pod) == "Running"
        and condition(pod, "Ready").get("status") == "True"
        and "running" in (main.get("state") or {})
        and main.get("restartCount") == 0
    )


async def all_running(node_pods: NodePods, docker_client: Any, names: list[str]) -> list[dict[str, Any]]:
    """Wait until every pod of `names` is settled and the engine agrees with the API."""
    last: list[str] = []

    async def converged() -> list[dict[str, Any]] | None:
        nonlocal last
        pods = await node_pods()
        waiting = sorted(set(names) - {p["metadata"]["name"] for p in pods if settled(p)})
        if waiting:
            last = [f"not settled: {waiting}"]
            return None
        last = await asyncio.to_thread(docker_disagreements, docker_client, node_pods.node, pods)
        return None if last else pods

    pods: list[dict[str, Any]] = await eventually(
        converged, within=300, interval=1.0, what=lambda: f"{len(names)} pods Running: {last}"
    )
    return pods


async def all_gone(node_pods: NodePods, docker_client: Any) -> None:
    """Wait until the node has no pod left in the API and no container left in the engine."""
    last: list[str] = []

    async def gone() -> bool:
        nonlocal last
        pods = await node_pods()
        last = [f"pod {p['metadata']['name']} still in the API" for p in pods]
        if not last:
            last = await asyncio.to_thread(docker_disagreements, docker_client, node_pods.node, [])
        return not last

    await eventually(gone, within=240, interval=1.0, what=lambda: f"every pod gone: {last}")


async def delete_all(node_pods: NodePods, plane: Plane, docker_client: Any, names: list[str]) -> int:
    """Delete every pod of `names` as a user does (graceful), wait until nothing is left; how
    many final DELETEs the provider sent meanwhile (the requests answered, the user's taken out)."""
    harness = node_pods.harness
    before = await pod_deletes(plane, harness.api)
    for name in names:
        await harness.delete(name)
    await all_gone(node_pods, docker_client)
    return await pod_deletes(plane, harness.api) - before - len(names)


def check_history(history: PodHistory, pods: list[dict[str, Any]], final_deletes: int) -> None:
    """No status step went backwards, every pod's deletion was seen, one final DELETE each."""
    assert history.backwards() == []
    assert history.deleted == {p["metadata"]["uid"] for p in pods}, "every deletion was watched"
    assert final_deletes == len(pods), "exactly one final DELETE per pod"


async def stopped(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds` (a pause of the fault) or until `stop` is set; is it set?"""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


async def drop_watches(debug: SandboxDebug, stop: asyncio.Event) -> int:
    """Until `stop` is set, every DROP_EVERY seconds: close every open watch, then answer the
    provider's watches 410 Expired for EXPIRED_FOR seconds, so it must relist. How many drops."""
    drops = 0
    while not await stopped(stop, DROP_EVERY - EXPIRED_FOR):
        debug.close_watches()
        debug.fail_next("watch", PROVIDER_WATCHES, 410, count=1_000_000)
        drops += 1
        await stopped(stop, EXPIRED_FOR)
        debug.clear_faults()
    return drops


def provider_requests(
    counts: Counter[str], history: PodHistory, node_pods: NodePods
) -> dict[str, tuple[int, int]]:
    """The provider's (lists, watches) of each followed collection: the test's own pod lists
    and PodHistory's (its first list, its relists, its watches) taken out."""
    counts = Counter(counts)
    counts.subtract({"list pods": 1 + history.relists + node_pods.lists, "watch pods": history.watches})
    return {kind: (counts[f"list {kind}"], counts[f"watch {kind}"]) for kind in FOLLOWED}


@pytest.mark.emulator_only("fault injection: the emulator's close_watches and request counters")
@pytest.mark.timeout(600)
async def test_watches_dropped_every_few_seconds_lose_no_pod_and_no_status(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    async with watched_sandbox(node_name, tmp_path, plane) as (harness, history):
        node_pods = NodePods(harness)
        stop = asyncio.Event()
        dropper: asyncio.Task[int] | None = None
        try:
            await harness.start_provider()
            await history.start()
            debug = harness.server.debug
            assert debug is not None
            before: Counter[str] = Counter((await harness.counters())["requests"])
            began = time.monotonic()
            dropper = asyncio.create_task(drop_watches(debug, stop))
            names = await create_burst(harness)
            pods = await all_running(node_pods, docker_client, names)
            up = time.monotonic() - began
            began = time.monotonic()
            final_deletes = await delete_all(node_pods, plane, docker_client, names)
            down = time.monotonic() - began
            stop.set()
            drops = await dropper
            dropper = None
            await history.stop()
            counts: Counter[str] = Counter((await harness.counters())["requests"])
            counts.subtract(before)

            check_history(history, pods, final_deletes)
            requests = provider_requests(counts, history, node_pods)
            bound = PER_DROP * (drops + 1)
            tight = {kind: n for kind, n in requests.items() if sum(n) > bound}
            assert not tight, f"(lists, watches) {tight} after {drops} drops: a tight loop"
            # Every collection was made to relist by a 410 at least once. Not more: a resume that
            # comes later than EXPIRED_FOR after a drop (a busy event loop in a fast burst) finds
            # no fault and rightly resumes from its resourceVersion, without a list.
            assert all(lists >= 1 for lists, _ in requests.values()), (
                f"a 410 with no relist: {requests}, {drops} drops"
            )
            print(
                f"RESILIENCE watch-drops plane=emulator pods={BURST} drops={drops} "
                f"running_after_s={up:.1f} deleted_after_s={down:.1f} "
                f"provider_lists_watches={requests} transitions={history.transitions()} "
                f"lost=0 duplicated=0 backwards=0 final_deletes={BURST}"
            )
        finally:
            stop.set()
            if dropper is not None:
                await dropper


async def apiserver_ready(plane: RealPlane) -> bool:
    """Does the kube-apiserver answer /readyz with 200 (False while it is down or starting)?"""
    try:
        async with plane.cluster.admin() as admin:
            code, _ = await admin.request("GET", "/readyz")
    except (aiohttp.ClientError, OSError, TimeoutError):
        return False
    return code == 200


async def some_running(node_pods: NodePods, count: int) -> int:
    """Wait until at least `count` of the node's pods are Running; how many are."""

    async def running() -> int | None:
        found = sum(phase(p) == "Running" for p in await node_pods())
        return found if found >= count else None

    found: int = await eventually(running, within=180, interval=0.3, what=f"{count} pods Running")
    return found


@pytest.mark.real_only
@pytest.mark.timeout(600)
async def test_the_apiserver_killed_in_a_burst_comes_back_and_no_pod_or_status_is_lost(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    assert isinstance(plane, RealPlane)
    async with watched_sandbox(node_name, tmp_path, plane) as (harness, history):
        node_pods = NodePods(harness)
        await harness.start_provider()
        await history.start()
        began = time.monotonic()
        names = await create_burst(harness)
        running_at_kill = await some_running(node_pods, BURST // 5)
        assert running_at_kill < BURST, "the kill must land in the middle of the burst"
        killed = time.monotonic()
        plane.cluster.kill_component("kube-apiserver")
        await eventually(lambda: apiserver_ready(plane), within=180, interval=0.5, what="kube-apiserver back")
        outage = time.monotonic() - killed
        pods = await all_running(node_pods, docker_client, names)
        up = time.monotonic() - began
        began = time.monotonic()
        final_deletes = await delete_all(node_pods, plane, docker_client, names)
        down = time.monotonic() - began
        await history.stop()

        check_history(history, pods, final_deletes)
        print(
            f"RESILIENCE watch-apiserver-restart plane=real pods={BURST} apiserver_kills=1 "
            f"running_at_kill={running_at_kill} apiserver_down_s={outage:.1f} running_after_s={up:.1f} "
            f"deleted_after_s={down:.1f} transitions={history.transitions()} relists_seen={history.relists} "
            f"lost=0 duplicated=0 backwards=0 final_deletes={final_deletes}"
        )
