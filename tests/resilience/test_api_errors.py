"""Scenario 3: 409, 500 and 429 (with Retry-After) on pod status writes and Lease writes.

While a load of pods is created, runs, completes and is deleted, the emulator answers bursts of
`PATCH pods/status` and `PUT leases/<node>` with 409, 500 and 429 (its 429 carries
`Retry-After: 1`). Afterwards the API, Docker and the watched history must agree: every pod
Running or Succeeded as its containers really are, the expected restart counts, no status gone
backwards, one final DELETE per deleted pod; each 429 retry waited its Retry-After; every fault
got exactly one log line naming the decision (code and delay), none a traceback; the provider's
status counters on /metrics count the 409s and 500s; and the Node stayed Ready in a watch of it
the whole time while its Lease kept renewing after the faults. Emulator tier only: the fault
injection is the emulator's (`SandboxDebug.fail_next`, `.fired`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.convergence import PodHistory, docker_disagreements, pod_deletes
from tests.support.manifests import sh
from tests.support.planes import EmulatorPlane
from tests.support.pod_status import container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from tests.support.sandbox import admin_session
from vk_provider.config import Config
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_sandbox.api.debug import FiredFault, SandboxDebug

pytestmark = pytest.mark.emulator_only("fault injection is the emulator's")

LEASE_SECONDS = 8  # renewed every 2 s
# The node lifecycle controller calls the node Unknown after 16 s without a renewal: eight
# renewal periods, so a loaded machine never trips it, but eight lost rounds in a row do.
GRACE_SECONDS = 16.0
RETRY_AFTER = 1.0  # what the emulator's 429 asks for
STATUS_PATH = r"^/api/v1/namespaces/default/pods/[^/]+/status$"
POD_UID_LABEL = "io.vk-provider.pod.uid"
# (verb, code, count) of each burst, in the order the emulator answers them.
STATUS_BURSTS = [
    [("patch", 409, 4), ("patch", 500, 4), ("patch", 429, 4)],  # while the pods start and some complete
    [("patch", 409, 3), ("patch", 500, 3), ("patch", 429, 3)],  # while some are deleted
]
# Two conflicts, then twelve server errors: two rounds of five attempts fail, the third sees
# four more, then two 429s the client waits out. Twelve lost rounds would outlast the grace.
LEASE_BURST = [("update", 409, 2), ("update", 500, 12), ("update", 429, 2)]
RUNNING, DONE, ONCE, GONE = 12, 6, 4, 8
# Restarts once (OnFailure, exit 3), then runs: restartCount 1.
ONCE_SCRIPT = "if [ -f /data/ran ]; then exec sleep 3600; fi; touch /data/ran; sleep 1; exit 3"


@pytest.fixture
def plane(control_plane: str, tmp_path: Path) -> EmulatorPlane:
    """The emulator, its node lifecycle controller's grace a few lease renewals long."""
    return EmulatorPlane(tmp_path, node_grace_seconds=GRACE_SECONDS)


class ShortLeaseHarness(ProviderHarness):
    def config(self) -> Config:
        config = super().config()
        return replace(config, node=replace(config.node, lease_duration_seconds=LEASE_SECONDS))


class ReadyHistory:
    """The Node's Ready condition at every watch event, from `start()` until `stop()`."""

    def __init__(self, api: KubeClient, node: str) -> None:
        self._api = api
        self._node = node
        self.seen: list[str] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        stream = self._api.watch("/api/v1/nodes", {"fieldSelector": f"metadata.name={self._node}"})
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                conditions = ((event.get("object") or {}).get("status") or {}).get("conditions") or []
                ready: dict[str, Any] = next((c for c in conditions if c.get("type") == "Ready"), {})
                self.seen.append(f"{event.get('type')}:{ready.get('status')}")

    async def stop(self) -> bool:
        """Stop; False if the watch had ended on its own (a gap in what it saw)."""
        if self._task is None:
            return False
        task, self._task = self._task, None
        watching = not task.done()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return watching


def inject(debug: SandboxDebug, path: str, burst: list[tuple[str, int, int]]) -> None:
    for verb, code, count in burst:
        debug.fail_next(verb, path, code, count)


def fired(debug: SandboxDebug, path: str, code: int | None = None) -> list[FiredFault]:
    return [f for f in debug.fired if re.search(path, f.path) and code in (None, f.code)]


def retry_gaps(faults: list[FiredFault]) -> list[float]:
    """The time between consecutive 429s of one run of them (the same request sent again)."""
    return [
        after.at - before.at
        for before, after in itertools.pairwise(faults)
        if before.code == after.code == 429
    ]


def terminal_disagreements(docker_client: Any, pods: list[dict[str, Any]]) -> list[str]:
    """How the engine differs from each Succeeded pod: no container may still run, and each
    app container's newest instance exited with the exit code and container ID its status shows."""
    problems: list[str] = []
    for pod in pods:
        if phase(pod) != "Succeeded":
            continue
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        mine = labelled(docker_client, f"{POD_UID_LABEL}={uid}")
        problems += [f"{name}: {c.name} still runs" for c in mine if c.status == "running"]
        for spec in pod["spec"]["containers"]:
            terminated = (container_status(pod, spec["name"]).get("state") or {}).get("terminated") or {}
            apps = [c for c in mine if c.labels.get("io.vk-provider.container.name") == spec["name"]]
            newest = max(
                apps, key=lambda c: int(c.labels.get("io.vk-provider.container.attempt", 0)), default=None
            )
            if newest is None:
                problems.append(f"{name}/{spec['name']}: no container in the engine")
                continue
            exit_code = newest.attrs["State"]["ExitCode"]
            if (terminated.get("exitCode"), terminated.get("containerID")) != (
                exit_code,
                f"docker://{newest.id}",
            ):
                problems.append(
                    f"{name}/{spec['name']}: status {terminated}, engine exit {exit_code} {newest.id}"
                )
    return problems


def expected(name: str, pod: dict[str, Any]) -> bool:
    """What a user must see once the faults are over, by the pod's kind (its name's prefix)."""
    restarts = container_status(pod, "main").get("restartCount")
    if name.startswith("done-"):
        return phase(pod) == "Succeeded" and restarts == 0
    running = phase(pod) == "Running" and "running" in (container_status(pod, "main").get("state") or {})
    return running and restarts == (1 if name.startswith("once-") else 0)


async def provider_metrics(harness: ProviderHarness) -> dict[str, float]:
    """The provider's own `vk_provider_*` series, scraped through the apiserver's node proxy."""
    url = f"{harness.server.url}/api/v1/nodes/{harness.node_name}/proxy/metrics"
    async with admin_session(harness.server) as session, session.get(url) as answer:
        text = await answer.text()
        assert answer.status == 200, text[:300]
    return {
        name: float(value) for name, value in re.findall(r"^(vk_provider_\w+) (\S+)$", text, re.MULTILINE)
    }


def provider_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("vk_provider.") and ".sandbox" not in r.name]


async def test_status_and_lease_write_errors_are_retried_paced_and_lose_nothing(
    plane: EmulatorPlane,
    node_name: str,
    caplog: pytest.LogCaptureFixture,
    test_images: dict[str, str],
    docker_client: Any,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.INFO, logger="vk_provider")
    harness = ShortLeaseHarness(node_name, tmp_path, plane=plane)
    await harness.start_sandbox()
    history = PodHistory(harness.api, node_name)
    ready = ReadyHistory(harness.api, node_name)
    try:
        debug = harness.server.debug
        assert debug is not None
        await harness.start_provider()
        lease_path = f"/namespaces/kube-node-lease/leases/{node_name}$"
        leases = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node_name}"

        async def lease() -> dict[str, Any] | None:
            with contextlib.suppress(ApiStatusError):
                return await harness.api.get(leases)
            return None

        await eventually(lease, within=60, what="the node's first Lease")
        await history.start()
        ready.start()

        inject(debug, STATUS_PATH, STATUS_BURSTS[0])
        inject(debug, lease_path, LEASE_BURST)
        grace = {"terminationGracePeriodSeconds": 1}
        manifests = (
            [harness.manifest(f"run-{i}", [sh("main", "exec sleep 3600")], **grace) for i in range(RUNNING)]
            + [
                harness.manifest(f"done-{i}", [sh("main", "sleep 3")], restartPolicy="Never")
                for i in range(DONE)
            ]
            + [
                harness.manifest(
                    f"once-{i}",
                    [sh("main", ONCE_SCRIPT, volumeMounts=[{"name": "data", "mountPath": "/data"}])],
                    restartPolicy="OnFailure",
                    volumes=[{"name": "data", "emptyDir": {}}],
                    **grace,
                )
                for i in range(ONCE)
            ]
            + [harness.manifest(f"gone-{i}", [sh("main", "exec sleep 3600")], **grace) for i in range(GONE)]
        )
        names = [m["metadata"]["name"] for m in manifests]
        for manifest in manifests:
            await harness.create(manifest)
        kept = [n for n in names if not n.startswith("gone-")]
        for name in kept:
            await harness.wait_for(name, functools.partial(expected, name), within=120)
        for i in range(GONE):
            await harness.wait_for(f"gone-{i}", lambda p: phase(p) == "Running", within=60)

        inject(debug, STATUS_PATH, STATUS_BURSTS[1])
        deletes_before = await pod_deletes(plane, harness.api)
        for i in range(GONE):
            await harness.delete(f"gone-{i}")
        for i in range(GONE):
            await harness.wait_gone(f"gone-{i}", within=90)

        status_faults = sum(count for burst in STATUS_BURSTS for _, _, count in burst)
        lease_faults = sum(count for _, _, count in LEASE_BURST)
        await eventually(
            lambda: (
                len(fired(debug, STATUS_PATH)) == status_faults
                and len(fired(debug, lease_path)) == lease_faults
            ),
            within=90,
            what=lambda: f"every injected fault answered: {debug.fired}",
        )
        faults_over = max(f.at for f in debug.fired)
        renewed = (await harness.api.get(leases))["spec"]["renewTime"]
        # A pod created once the faults are over: the provider still serves.
        await harness.create(harness.manifest("after", [sh("main", "exec sleep 3600")], **grace))
        kept.append("after")

        pods: list[dict[str, Any]] = []

        async def converged() -> bool:
            nonlocal pods
            listed = await harness.api.get("/api/v1/namespaces/default/pods")
            pods = list(listed.get("items") or [])
            by_name = {p["metadata"]["name"]: p for p in pods}
            if sorted(by_name) != sorted(kept) or not all(expected(n, by_name[n]) for n in kept):
                return False
            engine = await asyncio.to_thread(docker_disagreements, docker_client, node_name, pods)
            return not engine and not await asyncio.to_thread(terminal_disagreements, docker_client, pods)

        await eventually(converged, within=90, interval=0.5, what=lambda: f"convergence: {pods}")
        converge_seconds = time.monotonic() - faults_over

        async def lease_renewed() -> bool:
            return bool((await harness.api.get(leases))["spec"]["renewTime"] > renewed)

        await eventually(lease_renewed, within=30, what="a Lease renewal after the faults")
        await history.stop()
        assert await ready.stop(), "the Node watch ended early"

        # Nothing lost, nothing backwards, one final DELETE per deleted pod.
        assert history.backwards() == []
        final_deletes = await pod_deletes(plane, harness.api) - deletes_before - GONE
        assert final_deletes == GONE
        assert len(history.deleted) == GONE
        # The Node never stopped being Ready (the first event is the watch's ADDED).
        assert ready.seen and all(seen.endswith(":True") for seen in ready.seen), ready.seen

        # Paced: each 429 was sent again only after its Retry-After.
        gaps = retry_gaps(fired(debug, STATUS_PATH)) + retry_gaps(fired(debug, lease_path))
        assert len(gaps) == sum(
            c - 1 for burst in [*STATUS_BURSTS, LEASE_BURST] for _, code, c in burst if code == 429
        )
        assert min(gaps) >= RETRY_AFTER * 0.95, gaps
        # No write storm: every status PATCH that got through changed a status the watch saw.
        counts = (await harness.counters())["requests"]
        patches_ok = counts["patch pods/status"] - status_faults
        assert patches_ok == history.transitions(), (patches_ok, history.transitions())

        # One log line per decision, naming the code (and the delay); no traceback, no error.
        records = provider_records(caplog)
        retried_429 = [
            r
            for r in records
            if r.getMessage().startswith("apiserver answered with Retry-After")
            and (r.code, r.retryAfterSeconds) == (429, 1)
        ]
        status_failed = [r for r in records if r.getMessage().startswith("failed to update status")]
        lease_lines = [
            r.getMessage()
            for r in records
            if r.getMessage() in ("lease renewal failed; trying again", "apiserver call failed; trying again")
        ]
        assert len(retried_429) == len([f for f in debug.fired if f.code == 429]), retried_429
        assert len(status_failed) == len(fired(debug, STATUS_PATH)) - len(fired(debug, STATUS_PATH, 429))
        assert {r.err[:3] for r in status_failed} == {"409", "500"}
        assert len(lease_lines) == len(fired(debug, lease_path)) - len(fired(debug, lease_path, 429)), (
            lease_lines
        )
        assert [r for r in records if r.exc_info or r.levelno >= logging.ERROR] == []
        metrics = await provider_metrics(harness)
        assert metrics["vk_provider_pod_status_conflicts_total"] == len(fired(debug, STATUS_PATH, 409))
        assert metrics["vk_provider_pod_status_errors_total"] == len(fired(debug, STATUS_PATH, 500))
        assert metrics["vk_provider_pod_deletions_total"] == GONE

        print(
            f"RESILIENCE api-errors pods={len(names) + 1} deleted={GONE} "
            f"status_faults={status_faults} (409={len(fired(debug, STATUS_PATH, 409))} "
            f"500={len(fired(debug, STATUS_PATH, 500))} 429={len(fired(debug, STATUS_PATH, 429))}) "
            f"lease_faults={lease_faults} min_429_gap_s={min(gaps):.2f} "
            f"converge_s={converge_seconds:.1f} status_patches_ok={patches_ok} "
            f"final_deletes={final_deletes} ready_events={len(ready.seen)} not_ready=0 lost=0 duplicated=0"
        )
    finally:
        await history.stop()
        await ready.stop()
        await harness.close()
