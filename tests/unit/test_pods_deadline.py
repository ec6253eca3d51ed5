"""spec.activeDeadlineSeconds: the pure rule (pods/policy.py, the kubelet's activeDeadlineHandler)
and the pod workers acting on it (their timer, the kill, the terminal status and the Event),
against the in-memory runtime of tests/support/pod_workers_rig.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.pod_workers_rig import Events, Rig, box, make_pod, running_rig
from tests.support.polling import eventually
from vk_common.objects import format_time
from vk_provider.pods.policy import DEADLINE_EXCEEDED, active_deadline_left, past_active_deadline
from vk_provider.pods.workers import WorkerState

T0 = datetime(2026, 1, 1, tzinfo=UTC)
START = format_time(T0)
MESSAGE = "Pod was active on the node longer than the specified deadline"
WITHIN = 5.0  # polls of what the workers publish
POLL = 0.01


def deadline_pod(deadline: Any = None, start: str | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"metadata": {"uid": "u1"}, "spec": {"containers": [{"name": "a"}]}}
    if deadline is not None:
        pod["spec"]["activeDeadlineSeconds"] = deadline
    if start is not None:
        pod["status"] = {"phase": "Running", "startTime": start}
    return pod


def at(seconds: float) -> float:
    return (T0 + timedelta(seconds=seconds)).timestamp()


# ------------------------------------------------------------------ the pure rule


def test_the_reason_and_message_are_the_kubelets() -> None:
    assert DEADLINE_EXCEEDED == ("DeadlineExceeded", MESSAGE)


def test_no_deadline_set_is_never_past() -> None:
    pod = deadline_pod(start=START)
    assert active_deadline_left(pod, None, at(10**9)) is None
    assert past_active_deadline(pod, None, at(10**9)) is False


def test_not_reached_then_reached_at_exactly_the_deadline() -> None:
    pod = deadline_pod(30, start=START)
    assert active_deadline_left(pod, None, at(10)) == 20
    assert past_active_deadline(pod, None, at(29.5)) is False
    # duration >= allowedDuration: the deadline itself counts as exceeded.
    assert active_deadline_left(pod, None, at(30)) == 0
    assert past_active_deadline(pod, None, at(30)) is True
    assert past_active_deadline(pod, None, at(3600)) is True


def test_no_start_time_is_never_past() -> None:
    assert active_deadline_left(deadline_pod(1), None, at(3600)) is None
    assert past_active_deadline(deadline_pod(1), None, at(3600)) is False
    # The status manager's status is used when it exists, even without a startTime.
    assert past_active_deadline(deadline_pod(1, start=START), {"phase": "Pending"}, at(3600)) is False


def test_the_status_managers_start_time_wins_over_the_api_copy() -> None:
    pod = deadline_pod(60, start=START)
    cached = {"phase": "Running", "startTime": format_time(T0 + timedelta(seconds=100))}
    assert active_deadline_left(pod, cached, at(120)) == 40
    assert past_active_deadline(pod, None, at(120)) is True  # the API copy alone: past


def test_a_lowered_deadline_is_the_one_that_counts() -> None:
    running = deadline_pod(3600, start=START)
    assert past_active_deadline(running, None, at(100)) is False
    lowered = deadline_pod(60, start=START)
    assert past_active_deadline(lowered, None, at(100)) is True
    assert active_deadline_left(deadline_pod(120, start=START), None, at(100)) == 20


def test_a_malformed_deadline_or_start_is_ignored() -> None:
    assert active_deadline_left(deadline_pod("soon", start=START), None, at(10)) is None
    assert active_deadline_left(deadline_pod(True, start=START), None, at(10)) is None
    assert active_deadline_left(deadline_pod(5, start="yesterday"), None, at(10)) is None


# ------------------------------------------------------------------ the pod workers


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    """Pod workers whose resync is far away: only the deadline timer can fire in a test."""
    async with running_rig(resync_interval=3600.0) as started:
        yield started


def ago(seconds: float) -> str:
    return format_time(datetime.now(UTC) - timedelta(seconds=seconds))


def deadline_events(events: Events) -> list[tuple[str, str, str]]:
    return [e for e in events.seen if e[1] == "DeadlineExceeded"]


async def test_the_timer_kills_the_pod_at_its_deadline_and_it_stays_failed(rig: Any) -> None:
    runtime, statuses, events, workers, cfg = rig
    pod = make_pod("dl", [box("a")], activeDeadlineSeconds=30, terminationGracePeriodSeconds=7)
    # The API shows it started 24 s ago (the status manager has nothing yet): 6 s to go, room
    # enough on a loaded machine to start it before the deadline.
    cfg.upsert("api", {**pod, "status": {"phase": "Running", "startTime": ago(24)}})
    await eventually(
        lambda: "dl" in runtime.pods and runtime.pods["dl"].containers, within=WITHIN, interval=POLL
    )
    app_id = runtime.pods["dl"].containers[0].container_id
    # The timer ends it: the next resync is an hour away, far beyond this generous deadline.
    await eventually(lambda: "dl" in statuses.terminated, within=30.0, interval=POLL)
    status = statuses.cache["dl"]
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "DeadlineExceeded", MESSAGE)
    assert (app_id, 7) in runtime.stops  # the pod's grace period
    assert not runtime.pods["dl"].sandbox.running
    assert deadline_events(events) == [("Normal", "DeadlineExceeded", MESSAGE)]
    assert workers.states()["dl"] == WorkerState.TERMINATED
    # restartPolicy Always does not bring it back; later updates do not either.
    cfg.upsert("api", {**pod, "metadata": {**pod["metadata"], "labels": {"x": "y"}}})
    await asyncio.sleep(0.3)
    assert len(runtime.pods["dl"].containers) == 1
    assert statuses.cache["dl"]["phase"] == "Failed"
    assert len(deadline_events(events)) == 1


async def test_a_pod_past_its_deadline_when_first_seen_starts_nothing(rig: Any) -> None:
    runtime, statuses, events, _, cfg = rig
    pod = make_pod("late", [box("a")], activeDeadlineSeconds=10)
    started = ago(60)
    cfg.upsert("api", {**pod, "status": {"phase": "Pending", "startTime": started}})
    await eventually(lambda: "late" in statuses.terminated, within=WITHIN, interval=POLL)
    assert "late" not in runtime.pods  # no sandbox, no container
    status = statuses.cache["late"]
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "DeadlineExceeded", MESSAGE)
    assert status["startTime"] == started
    assert len(deadline_events(events)) == 1


async def test_a_new_pod_gets_its_start_time_then_its_deadline(rig: Any) -> None:
    runtime, statuses, _, _, cfg = rig
    cfg.upsert("api", make_pod("fresh", [box("a")], activeDeadlineSeconds=1))
    await eventually(
        lambda: statuses.cache.get("fresh", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    assert statuses.cache["fresh"]["startTime"]
    await eventually(lambda: "fresh" in statuses.terminated, within=5.0, interval=POLL)
    assert statuses.cache["fresh"]["reason"] == "DeadlineExceeded"
    assert len(runtime.pods["fresh"].containers) == 1


async def test_lowering_the_deadline_of_a_running_pod_applies_at_once(rig: Any) -> None:
    _, statuses, events, _, cfg = rig
    pod = make_pod("low", [box("a")], activeDeadlineSeconds=3600)
    api_status = {"phase": "Running", "startTime": ago(30)}
    cfg.upsert("api", {**pod, "status": api_status})
    await eventually(
        lambda: statuses.cache.get("low", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    await asyncio.sleep(0.2)
    assert "low" not in statuses.terminated
    lowered = make_pod("low", [box("a")], activeDeadlineSeconds=10)
    cfg.upsert("api", {**lowered, "status": api_status})
    await eventually(lambda: "low" in statuses.terminated, within=WITHIN, interval=POLL)
    assert statuses.cache["low"]["reason"] == "DeadlineExceeded"
    assert deadline_events(events) == [("Normal", "DeadlineExceeded", MESSAGE)]


async def test_a_static_pod_has_a_deadline_too(rig: Any) -> None:
    runtime, statuses, _, _, cfg = rig
    pod = make_pod("static", [box("a")], activeDeadlineSeconds=1)
    pod["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
    cfg.upsert("file", pod)
    await eventually(
        lambda: statuses.cache.get("static", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    await eventually(lambda: "static" in statuses.terminated, within=5.0, interval=POLL)
    status = statuses.cache["static"]
    assert (status["phase"], status["reason"]) == ("Failed", "DeadlineExceeded")
    assert len(runtime.pods["static"].containers) == 1


async def test_no_deadline_no_kill(rig: Any) -> None:
    _, statuses, events, workers, cfg = rig
    cfg.upsert("api", {**make_pod("free", [box("a")]), "status": {"startTime": ago(10**6)}})
    await eventually(
        lambda: statuses.cache.get("free", {}).get("phase") == "Running", within=WITHIN, interval=POLL
    )
    await asyncio.sleep(0.3)
    assert workers.states()["free"] == WorkerState.SYNCING
    assert not deadline_events(events)
