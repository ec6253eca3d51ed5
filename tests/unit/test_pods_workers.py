"""PodWorkers' state machine against an in-memory Runtime (the seam of runtime/protocol.py).

The runtime here is a small stand-in for the engine, so the ordering and decision rules of
the workers (init before app containers, restart policies, backoff, termination, adoption)
can be checked in milliseconds; the same flows run against real Docker in
tests/integration/test_pods_*.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.pod_workers_rig import (
    Events,
    MemoryRuntime,
    Rig,
    Statuses,
    box,
    make_pod,
    no_objects,
    running_rig,
)
from tests.support.polling import eventually
from tests.support.runtime_calls import ensure_sandbox, start_container
from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.pods.backoff import Backoff
from vk_provider.pods.config import PodConfig
from vk_provider.pods.workers import PodWorkers, WorkerState
from vk_provider.runtime.call_order import call_priority
from vk_provider.runtime.configs import EmptyDirVolume, Mount, MountKind, SandboxConfig
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    EventsResumed,
    LinuxResources,
    PodRejected,
    PodRuntimeState,
    PodSandboxState,
    PodSpecRefused,
    RuntimeEvent,
)

WITHIN = 5.0  # polls of what the workers publish
POLL = 0.01


def latest(runtime: MemoryRuntime, uid: str, name: str) -> ContainerInstance:
    found = runtime.pods[uid].latest(name)
    assert found is not None
    return found


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    async with running_rig() as started:
        yield started


def cstatus(statuses: Statuses, uid: str, name: str) -> dict[str, Any]:
    status = statuses.cache.get(uid) or {}
    found = [
        s
        for s in status.get("containerStatuses", []) + status.get("initContainerStatuses", [])
        if s["name"] == name
    ]
    return found[0] if found else {}


async def test_init_container_runs_to_success_before_app_containers(rig: Any) -> None:
    runtime, statuses, _, _, cfg = rig
    cfg.upsert("api", make_pod("p1", [box("a"), box("b")], initContainers=[box("init")]))
    await eventually(lambda: "p1" in statuses.cache, within=WITHIN, interval=POLL)
    assert [c.name for c in runtime.pods["p1"].containers] == ["init"]
    assert statuses.cache["p1"]["phase"] == "Pending"
    assert cstatus(statuses, "p1", "a")["state"]["waiting"]["reason"] == "PodInitializing"
    runtime.exit("p1", "init", 0)
    await eventually(lambda: statuses.cache["p1"]["phase"] == "Running", within=WITHIN, interval=POLL)
    assert sorted(c.name for c in runtime.pods["p1"].containers) == ["a", "b", "init"]
    assert statuses.cache["p1"]["podIP"] == "172.30.0.9"


async def test_never_exit_1_fails_and_terminates(rig: Any) -> None:
    runtime, statuses, _, workers, cfg = rig
    cfg.upsert("api", make_pod("p2", [box("a")], restartPolicy="Never"))
    await eventually(
        lambda: statuses.cache.get("p2", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    runtime.exit("p2", "a", 1)
    await eventually(lambda: "p2" in statuses.terminated, within=WITHIN, interval=POLL)
    assert statuses.cache["p2"]["phase"] == "Failed"
    assert cstatus(statuses, "p2", "a")["state"]["terminated"]["exitCode"] == 1
    assert workers.states()["p2"] == WorkerState.TERMINATED
    assert not runtime.pods["p2"].sandbox.running
    assert len(runtime.pods["p2"].containers) == 1  # never re-run


async def test_always_restarts_then_crash_loop_backoff(rig: Any) -> None:
    runtime, statuses, events, _, cfg = rig
    cfg.upsert("api", make_pod("p3", [box("a")]))
    await eventually(
        lambda: "p3" in runtime.pods and runtime.pods["p3"].containers, within=WITHIN, interval=POLL
    )
    runtime.exit("p3", "a", 2)
    # first restart: at once
    await eventually(lambda: len(runtime.pods["p3"].containers) == 2, within=WITHIN, interval=POLL)
    runtime.exit("p3", "a", 2)
    await eventually(
        lambda: (
            cstatus(statuses, "p3", "a").get("state", {}).get("waiting", {}).get("reason")
            == "CrashLoopBackOff"
        ),
        within=WITHIN,
        interval=POLL,
    )
    assert (
        "restarting failed container=a pod=p3_default(p3)"
        in cstatus(statuses, "p3", "a")["state"]["waiting"]["message"]
    )
    assert any(e[1] == "BackOff" for e in events.seen)
    await eventually(lambda: len(runtime.pods["p3"].containers) == 3, within=WITHIN, interval=POLL)
    await eventually(
        lambda: cstatus(statuses, "p3", "a").get("restartCount") == 2, within=WITHIN, interval=POLL
    )


async def test_image_pull_failure_then_backoff_and_config_error(rig: Any) -> None:
    runtime, statuses, events, _, cfg = rig
    runtime.missing_images.add("nope:1")
    cfg.upsert("api", make_pod("p4", [{"name": "a", "image": "nope:1"}]))
    cfg.upsert(
        "api",
        make_pod(
            "p5",
            [box("a", env=[{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k"}}}])],
        ),
    )
    cfg.upsert("api", make_pod("p6", [box("a")]))
    await eventually(
        lambda: (
            cstatus(statuses, "p4", "a").get("state", {}).get("waiting", {}).get("reason") == "ErrImagePull"
        ),
        within=WITHIN,
        interval=POLL,
    )
    await eventually(
        lambda: (
            cstatus(statuses, "p4", "a").get("state", {}).get("waiting", {}).get("reason")
            == "ImagePullBackOff"
        ),
        within=WITHIN,
        interval=POLL,
    )
    await eventually(lambda: "p5" in statuses.cache and "p6" in statuses.cache, within=WITHIN, interval=POLL)
    waiting = cstatus(statuses, "p5", "a")["state"]["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'configmap "cfg" not found'}
    await eventually(lambda: statuses.cache["p6"]["phase"] == "Running", within=WITHIN, interval=POLL)
    reasons = {e[1] for e in events.seen}
    assert {"Failed", "BackOff", "Created", "Started"} <= reasons


async def test_delete_terminates_with_grace_then_remove_cleans_up(rig: Any) -> None:
    runtime, statuses, events, workers, cfg = rig
    pod = make_pod("p7", [box("a")], terminationGracePeriodSeconds=30)
    cfg.upsert("api", pod)
    await eventually(
        lambda: statuses.cache.get("p7", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    app_id = runtime.pods["p7"].containers[0].container_id
    deleting = {
        **pod,
        "metadata": {
            **pod["metadata"],
            "deletionTimestamp": "2030-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 3,
        },
    }
    cfg.upsert("api", deleting)
    await eventually(lambda: "p7" in statuses.terminated, within=WITHIN, interval=POLL)
    assert (app_id, 3) in runtime.stops
    assert ("Normal", "Killing", "Stopping container a") in events.seen
    assert statuses.cache["p7"]["phase"] in ("Failed", "Succeeded")
    cfg.remove("api", "p7")
    await eventually(lambda: "p7" in runtime.removed, within=WITHIN, interval=POLL)
    assert "p7" in statuses.removed
    assert "p7" not in workers.states()


async def test_adopt_keeps_known_pods_and_removes_vanished_ones(rig: Any) -> None:
    runtime, statuses, _, workers, cfg = rig
    keep = make_pod("k1", [box("a")])
    gone = make_pod("g1", [box("a")])
    for pod in (keep, gone):
        sandbox = await ensure_sandbox(runtime, pod)
        await start_container(
            runtime,
            ContainerLaunch(pod, pod["spec"]["containers"][0], ContainerRole.APP, 3, (), None, None, sandbox),
        )
    before = runtime.pods["k1"].containers
    await workers.adopt(["k1"])
    assert "g1" in runtime.removed and "k1" not in runtime.removed
    cfg.upsert("api", keep)
    await eventually(
        lambda: statuses.cache.get("k1", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    assert runtime.pods["k1"].containers == before  # adopted, not restarted
    assert cstatus(statuses, "k1", "a")["restartCount"] == 3


async def test_housekeeping_removes_pods_no_worker_knows(rig: Any) -> None:
    runtime, statuses, _, workers, cfg = rig
    cfg.upsert("api", make_pod("live", [box("a")]))
    await eventually(
        lambda: statuses.cache.get("live", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    stray = make_pod("stray", [box("a")])
    await ensure_sandbox(runtime, stray)
    workers.start_housekeeping(0.05)
    await eventually(lambda: "stray" in runtime.removed, within=WITHIN, interval=POLL)
    assert "live" not in runtime.removed


async def _live_pod_housekept(rig: Rig) -> None:
    """A Running pod "live", then the housekeeping (a pass every 20 ms) past its first pass, the
    one that lists the engine at start."""
    runtime, statuses, _, workers, cfg = rig
    cfg.upsert("api", make_pod("live", [box("a")]))
    await eventually(
        lambda: statuses.cache.get("live", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    workers.start_housekeeping(0.02)
    await eventually(lambda: runtime.lists == 1, within=WITHIN, interval=POLL)


async def test_a_node_at_rest_is_not_listed_every_pass_but_an_event_brings_the_next(rig: Any) -> None:
    """While no runtime event comes, a housekeeping pass does not list the engine (one that does
    comes every 60 s); an event (here of a pod no worker knows: a container someone else made
    with the node's labels) makes the next pass list it, and the stranger goes."""
    runtime = rig[0]
    await _live_pod_housekept(rig)
    await asyncio.sleep(0.3)  # about 15 passes
    assert runtime.lists == 1
    runtime.report_starts = True
    await ensure_sandbox(runtime, make_pod("stray", [box("a")]))
    await eventually(lambda: "stray" in runtime.removed, within=WITHIN, interval=POLL)
    assert runtime.lists == 2 and "live" not in runtime.removed


async def test_the_events_of_pods_with_workers_bring_no_node_wide_list(rig: Any) -> None:
    """A burst's events are of pods the workers know: each worker reads its own, and the
    housekeeping does not list the whole engine for them (at 500 pods such lists grew with the
    burst); its list stays the one of every 60 s."""
    runtime, statuses, _, _, cfg = rig
    await _live_pod_housekept(rig)
    runtime.report_starts = True
    for name in ("busy-1", "busy-2", "busy-3"):
        cfg.upsert("api", make_pod(name, [box("a"), box("b")]))
    await eventually(
        lambda: all(
            statuses.cache.get(n, {}).get("phase") == "Running" for n in ("busy-1", "busy-2", "busy-3")
        ),
        within=WITHIN,
        interval=POLL,
    )
    await asyncio.sleep(0.3)  # about 15 passes after the pods' start events
    assert runtime.lists == 1 and not runtime.removed


async def test_adopt_and_housekeeping_remove_what_a_cut_short_removal_left_on_disk(rig: Any) -> None:
    """A pod whose containers went but whose volumes or files stayed (its removal was cut short by
    a stop) is still an orphan, as the kubelet's cleanupOrphanedPodDirs finds it from disk."""
    runtime, statuses, _, workers, cfg = rig
    runtime.storage |= {"known", "left-1"}
    await workers.adopt(["known"])
    assert runtime.removed == ["left-1"] and runtime.storage == {"known"}
    cfg.upsert("api", make_pod("live", [box("a")]))
    await eventually(
        lambda: statuses.cache.get("live", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    runtime.storage |= {"live", "left-2"}
    workers.start_housekeeping(0.05)
    await eventually(lambda: "left-2" in runtime.removed, within=WITHIN, interval=POLL)
    assert "live" not in runtime.removed and "live" in runtime.storage


async def test_a_sync_reads_the_pod_state_once_and_again_only_after_acting(rig: Any) -> None:
    runtime, statuses, _, _, cfg = rig
    pod = make_pod("once", [box("a")])
    cfg.upsert("api", pod)
    await eventually(
        lambda: statuses.cache.get("once", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    # The first sync made the sandbox and started the container: one read before; what it
    # publishes is that state with what it made (their answers), not a second read.
    before = -1
    while runtime.state_reads.count("once") != before:
        before = runtime.state_reads.count("once")
        await asyncio.sleep(0.2)
    assert before == 1
    status = statuses.cache["once"]
    assert [s["name"] for s in status["containerStatuses"]] == ["a"]
    assert "running" in status["containerStatuses"][0]["state"]
    assert status["podIP"] == "172.30.0.9"
    cfg.upsert("api", {**pod, "metadata": {**pod["metadata"], "labels": {"x": "y"}}})
    await eventually(lambda: runtime.state_reads.count("once") > before, within=WITHIN, interval=POLL)
    await asyncio.sleep(0.2)
    assert runtime.state_reads.count("once") == before + 1  # nothing to do: one read


async def test_a_new_pods_first_image_is_looked_up_while_its_sandbox_is_made(rig: Any) -> None:
    """The first container's image is asked for beside the sandbox, once; a refused sandbox drops
    the answer and the pod still ends with the refusal."""
    runtime, statuses, _, _, cfg = rig
    runtime.sandbox_hold = asyncio.Event()
    cfg.upsert("api", make_pod("ahead", [box("a", image="vk-test/ahead:1"), box("b")]))
    await eventually(lambda: "vk-test/ahead:1" in runtime.image_asks, within=WITHIN, interval=POLL)
    assert "ahead" not in runtime.pods  # the sandbox is still being made
    runtime.sandbox_hold.set()
    await eventually(
        lambda: statuses.cache.get("ahead", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    assert runtime.image_asks.count("vk-test/ahead:1") == 1
    assert [c.image for c in runtime.container_configs] == ["vk-test/ahead:1", BUSYBOX_IMAGE]
    runtime.refusals["refused"] = PodSpecRefused("hostPath volumes are not allowed")
    cfg.upsert("api", make_pod("refused", [box("a", image="vk-test/refused:1")]))
    await eventually(lambda: "refused" in statuses.terminated, within=WITHIN, interval=POLL)
    assert statuses.cache["refused"]["reason"] == "Forbidden"
    assert runtime.image_asks.count("vk-test/refused:1") <= 1
    assert not [c for c in runtime.container_configs if c.image == "vk-test/refused:1"]


async def test_the_start_events_of_a_syncs_own_starts_bring_no_second_sync(rig: Any) -> None:
    """The sync that started the sandbox and the container published what followed; their
    "start" events find nothing new. A start it did not make syncs the pod."""
    runtime, statuses, _, _, cfg = rig
    runtime.report_starts = True
    cfg.upsert("api", make_pod("own", [box("a")]))
    await eventually(
        lambda: statuses.cache.get("own", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    await asyncio.sleep(0.3)
    assert runtime.state_reads.count("own") == 1
    sandbox = runtime.pods["own"].sandbox
    assert sandbox is not None
    runtime.queue.put_nowait(RuntimeEvent("own", "POD", ContainerRole.SANDBOX, "start", "c-elsewhere"))
    await eventually(lambda: runtime.state_reads.count("own") == 2, within=WITHIN, interval=POLL)
    # A death right after the start still syncs the pod.
    runtime.exit("own", "a", 1)
    await eventually(
        lambda: (
            statuses.cache["own"]["containerStatuses"][0]["restartCount"] == 1
            or "terminated" in (statuses.cache["own"]["containerStatuses"][0].get("lastState") or {})
        ),
        within=WITHIN,
        interval=POLL,
    )


async def test_housekeeping_drops_expired_backoff_entries() -> None:
    """The kubelet GCs its crash-loop backoff in HandlePodCleanups; housekeeping does the same."""
    backoff = Backoff(initial=0.01, maximum=0.01)
    backoff.next("gone_ns_uid_a_", time.time())
    workers = PodWorkers(
        cast(Runtime, MemoryRuntime()),
        Statuses(),
        Events(),
        getter=no_objects,
        host_ip=lambda: "10.0.0.1",
        backoff=backoff,
    )
    await workers.start()
    try:
        workers.start_housekeeping(0.05)
        await eventually(lambda: backoff.current("gone_ns_uid_a_") == 0, within=WITHIN, interval=POLL)
    finally:
        await workers.stop()


async def test_dead_sandbox_is_replaced_and_its_containers_restarted(rig: Any) -> None:
    runtime, statuses, _, _, cfg = rig
    cfg.upsert("api", make_pod("sb", [box("a")], initContainers=[box("init")]))
    await eventually(
        lambda: "sb" in runtime.pods and bool(runtime.pods["sb"].containers), within=WITHIN, interval=POLL
    )
    runtime.exit("sb", "init", 0)
    await eventually(
        lambda: statuses.cache.get("sb", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    old_sandbox = runtime.pods["sb"].sandbox
    assert old_sandbox is not None
    await runtime.stop_container(old_sandbox.container_id, 1)
    runtime.queue.put_nowait(
        RuntimeEvent("sb", "POD", ContainerRole.SANDBOX, "die", old_sandbox.container_id)
    )
    # init runs again in the new sandbox
    await eventually(lambda: latest(runtime, "sb", "init").attempt == 1, within=WITHIN, interval=POLL)
    runtime.exit("sb", "init", 0)
    await eventually(
        lambda: (
            latest(runtime, "sb", "a").state == ContainerRunState.RUNNING
            and latest(runtime, "sb", "a").attempt == 1
        ),
        within=WITHIN,
        interval=POLL,
    )


async def test_a_death_no_event_reported_is_seen_once_the_events_resume(rig: Any) -> None:
    """An engine that restarted keeps no events: the gap's mark makes every pod read its state
    again (the kubelet's PLEG relist), long before the resync (60 s here)."""
    runtime, statuses, _, _, cfg = rig
    cfg.upsert("api", make_pod("gap", [box("a")]))
    cfg.upsert("api", make_pod("calm", [box("a")]))
    await eventually(
        lambda: all(statuses.cache.get(uid, {}).get("phase") == "Running" for uid in ("gap", "calm")),
        within=WITHIN,
        interval=POLL,
    )
    runtime.exit("gap", "a", 2, event=False)
    reads = runtime.state_reads.count("calm")
    runtime.queue.put_nowait(EventsResumed())
    await eventually(
        lambda: (
            latest(runtime, "gap", "a").attempt == 1 and cstatus(statuses, "gap", "a").get("restartCount")
        ),
        within=WITHIN,
        interval=POLL,
    )
    await eventually(lambda: runtime.state_reads.count("calm") > reads, within=WITHIN, interval=POLL)
    assert latest(runtime, "calm", "a").attempt == 0  # read again, left alone


async def test_dead_sandbox_of_a_never_pod_fails_it(rig: Any) -> None:
    runtime, statuses, _, _, cfg = rig
    cfg.upsert("api", make_pod("nv", [box("a")], restartPolicy="Never"))
    await eventually(
        lambda: statuses.cache.get("nv", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    sandbox = runtime.pods["nv"].sandbox
    assert sandbox is not None
    await runtime.stop_container(sandbox.container_id, 1)
    runtime.queue.put_nowait(RuntimeEvent("nv", "POD", ContainerRole.SANDBOX, "die", sandbox.container_id))
    await eventually(lambda: "nv" in statuses.terminated, within=WITHIN, interval=POLL)
    assert statuses.cache["nv"]["phase"] == "Failed"
    assert runtime.pods["nv"].sandbox == dataclasses.replace(sandbox, running=False)


async def test_never_pod_whose_sandbox_never_started_gets_a_new_one_and_runs(rig: Any) -> None:
    """A provider killed between creating a sandbox and starting it left a dead sandbox and no
    container: the kubelet creates another (computePodActions: no new sandbox for a Never pod
    only once it has containers), so the pod runs instead of staying Pending for good."""
    runtime, statuses, _, _, cfg = rig
    dead = PodSandboxState("never-started", False, "", datetime.now(UTC))
    runtime.pods["ns"] = PodRuntimeState("ns", "default", "ns", dead)
    cfg.upsert("api", make_pod("ns", [box("a")], restartPolicy="Never"))
    await eventually(
        lambda: statuses.cache.get("ns", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    sandbox = runtime.pods["ns"].sandbox
    assert sandbox is not None and sandbox.running and sandbox.container_id != dead.container_id
    assert latest(runtime, "ns", "a").attempt == 0


@pytest.mark.parametrize(
    ("refusal", "event"),
    [
        (
            PodSpecRefused("spec.hostPID: pods using the host's PID namespace are not allowed on this node"),
            (
                "Warning",
                "Failed",
                "Error: spec.hostPID: pods using the host's PID namespace are not allowed on this node",
            ),
        ),
        # The kubelet's admission rejection: rejectPod's Event (kubelet.go), its reason and message.
        (
            PodRejected("SysctlForbidden", 'forbidden sysctl: "kernel.msgmax" not allowlisted'),
            ("Warning", "SysctlForbidden", 'forbidden sysctl: "kernel.msgmax" not allowlisted'),
        ),
    ],
    ids=["refused", "rejected"],
)
async def test_a_refused_sandbox_fails_the_pod_with_its_reason_and_event(
    rig: Any, refusal: PodSpecRefused, event: tuple[str, str, str]
) -> None:
    runtime, statuses, events, _, cfg = rig
    runtime.refusals["no"] = refusal
    cfg.upsert("api", make_pod("no", [box("a")]))
    await eventually(lambda: "no" in statuses.terminated, within=WITHIN, interval=POLL)
    status = statuses.cache["no"]
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed",
        refusal.reason,
        refusal.message,
    )
    assert event in events.seen
    assert "no" not in runtime.pods  # nothing ran


async def test_restarted_workers_never_rerun_a_finished_pod(rig: Any) -> None:
    runtime, statuses, _, _, cfg = rig
    pod = make_pod("fin", [box("a")], restartPolicy="OnFailure")
    cfg.upsert("api", pod)
    await eventually(
        lambda: statuses.cache.get("fin", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    runtime.exit("fin", "a", 0)
    await eventually(lambda: "fin" in statuses.terminated, within=WITHIN, interval=POLL)
    before = runtime.pods["fin"]
    assert before.sandbox is not None and not before.sandbox.running
    # A new provider whose API still shows the pod Running (its last write never landed).
    again = Statuses()
    workers = PodWorkers(
        cast(Runtime, runtime), again, Events(), getter=no_objects, host_ip=lambda: "10.0.0.1"
    )
    await workers.adopt(["fin"])
    PodConfig(workers.update).upsert("api", {**pod, "status": {"phase": "Running"}})
    await eventually(lambda: "fin" in again.terminated, within=WITHIN, interval=POLL)
    await workers.stop()
    assert again.cache["fin"]["phase"] == "Succeeded"
    assert runtime.pods["fin"] == before  # no new sandbox, no new container


async def test_running_container_whose_spec_changed_is_replaced() -> None:
    runtime, statuses, events = MemoryRuntime(), Statuses(), Events()
    workers = PodWorkers(
        cast(Runtime, runtime), statuses, events, getter=no_objects, host_ip=lambda: "10.0.0.1"
    )
    await workers.start()
    cfg = PodConfig(workers.update)
    pod = make_pod("upd", [box("a"), box("b")])
    cfg.upsert("api", pod)
    await eventually(
        lambda: statuses.cache.get("upd", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    b_id = latest(runtime, "upd", "b").container_id
    changed = make_pod("upd", [{**box("a"), "image": "vk-test/busybox:2"}, box("b")])
    cfg.upsert("api", changed)
    await eventually(lambda: latest(runtime, "upd", "a").attempt == 1, within=WITHIN, interval=POLL)
    await workers.stop()
    assert latest(runtime, "upd", "a").image == "vk-test/busybox:2"
    assert latest(runtime, "upd", "b").container_id == b_id  # untouched
    assert ("Normal", "Killing", "Container a definition changed, will be restarted") in events.seen


async def test_each_pods_runtime_calls_carry_its_arrival_and_syncs_go_oldest_first(rig: Any) -> None:
    """The order `runtime.call_order` serves a burst in: each worker's calls carry its pod's
    arrival number (1: the first pod seen), and a freed sync slot goes to the oldest pod."""
    runtime, statuses, _, _, cfg = rig
    seen: dict[str, int] = {}
    ensure_sandbox = runtime.ensure_sandbox

    async def recording(config: SandboxConfig) -> PodSandboxState:
        seen[config.metadata.uid] = call_priority.get()
        return cast(PodSandboxState, await ensure_sandbox(config))

    runtime.ensure_sandbox = recording
    for name in ("first", "second", "third"):
        cfg.upsert("api", make_pod(name, [box("c")]))
    await eventually(lambda: len(statuses.cache) == 3, within=WITHIN, interval=POLL)
    assert seen == {"first": 1, "second": 2, "third": 3}


async def test_a_freed_sync_slot_goes_to_the_oldest_waiting_pod() -> None:
    """`old` (seen first) asks for a sync after `young` did, while both wait for the one slot:
    `old` is served first (a FIFO semaphore would serve `young`)."""
    async with running_rig(max_concurrent_syncs=1) as (runtime, statuses, _, _, cfg):
        cfg.upsert("api", make_pod("old", [box("c")]))
        await eventually(lambda: "old" in statuses.cache, within=WITHIN, interval=POLL)
        gate = asyncio.Event()
        synced: list[str] = []
        ensure_sandbox, pod_state = runtime.ensure_sandbox, runtime.pod_state

        async def held(config: SandboxConfig) -> PodSandboxState:
            await gate.wait()  # `holder` keeps the only sync slot while the others queue
            return cast(PodSandboxState, await ensure_sandbox(config))

        async def recording(uid: str) -> PodRuntimeState | None:
            synced.append(uid)  # the first thing each sync does
            return cast(PodRuntimeState | None, await pod_state(uid))

        runtime.ensure_sandbox, runtime.pod_state = held, recording
        cfg.upsert("api", make_pod("holder", [box("c")]))
        await eventually(lambda: "holder" in synced, within=WITHIN, interval=POLL)
        cfg.upsert("api", make_pod("young", [box("c")]))
        await asyncio.sleep(0.05)
        changed = make_pod("old", [box("c")])
        changed["metadata"]["labels"] = {"changed": "yes"}
        cfg.upsert("api", changed)  # old's worker asks for a sync after young's did
        await asyncio.sleep(0.05)
        gate.set()
        await eventually(lambda: "young" in statuses.cache and "old" in synced, within=WITHIN, interval=POLL)
        waiting = [uid for uid in synced if uid in ("old", "young")]
        assert waiting[:2] == ["old", "young"]


async def test_a_runtime_that_is_not_docker_is_handed_the_pod_compiled(rig: Any) -> None:
    """The workers admit and compile the pod (kuberuntime) before the runtime sees it: the
    in-memory runtime, which knows no Kubernetes rule, gets the kubelet's hostname, user and
    groups, cgroup limits, mounts with their checked sub-path and the managed /etc/hosts."""
    runtime, statuses, _, _, cfg = rig
    app = box(
        "a",
        resources={"limits": {"cpu": "500m", "memory": "64Mi"}},
        volumeMounts=[{"name": "data", "mountPath": "/data", "subPathExpr": "$(DIR)/x"}],
        env=[{"name": "DIR", "value": "logs"}],
    )
    pod = make_pod(
        "compiled",
        [app],
        hostname="h",
        subdomain="s",
        securityContext={"runAsUser": 1000, "fsGroup": 2000},
        volumes=[{"name": "data", "emptyDir": {}}],
    )
    cfg.upsert("api", pod)
    await eventually(
        lambda: statuses.cache.get("compiled", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    (sandbox,) = [c for c in runtime.sandbox_configs if c.metadata.uid == "compiled"]
    assert sandbox.hostname == "h"
    assert sandbox.empty_dirs == (EmptyDirVolume("data", False, None, 0o2777, 2000),)
    (container,) = [c for c in runtime.container_configs if c.metadata.uid == "compiled"]
    assert container.field == "spec.containers[0]" and container.env == (("DIR", "logs"),)
    assert container.security.user == "1000" and container.security.groups == ("2000",)
    assert container.resources == LinuxResources(512, 50000, 100000, 64 * 1024 * 1024)
    assert container.mounts == (
        Mount(
            MountKind.EMPTY_DIR,
            "data",
            "/data",
            False,
            0,
            "spec.containers[0].volumeMounts[0]",
            sub_path="logs/x",
        ),
    )
    assert container.hosts_file is not None
    assert "172.30.0.9\th.s.default.svc.cluster.local\th\n" in container.hosts_file
