"""Crash-loop backoff and grace periods, by the kubelet's numbers."""

from __future__ import annotations

from tests.support.clocks import ManualClock
from vk_provider.pods.backoff import Backoff, container_key, crash_loop_message, go_duration
from vk_provider.pods.grace import effective_grace_period, stop_timeout_after_prestop

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {}}


def test_backoff_doubles_to_max_and_resets_after_ten_minutes() -> None:
    clock = ManualClock()
    b = Backoff(clock=clock)
    key = container_key(POD, "c")
    delays = []
    for _ in range(7):
        delays.append(b.next(key, clock.now))
        clock.now += 1
    assert delays == [10, 20, 40, 80, 160, 300, 300]
    clock.now += 601
    assert b.remaining(key, clock.now - 1) == 0
    assert b.next(key, clock.now) == 10


def test_a_capped_crash_loop_stays_capped_through_gc() -> None:
    """The upstream "should cap back-off at MaxContainerBackOff" spec: a container that runs
    5 s and fails, restarted after each back-off, sees 300 s again and again, with the
    periodic gc running in between (it once dropped the entry: 10 s after a capped delay)."""
    clock = ManualClock()
    b = Backoff(clock=clock)
    key = container_key(POD, "c")
    delays = []
    for _ in range(9):
        failed_at = clock.now
        while (left := b.remaining(key, failed_at)) > 0:
            clock.now += min(left, 30.0)
            b.gc()
        delays.append(b.next(key, failed_at))
        clock.now += 5  # the restarted container runs 5 s, then fails
    assert delays == [10, 20, 40, 80, 160, 300, 300, 300, 300]


def test_remaining_counts_from_the_event_time() -> None:
    clock = ManualClock()
    b = Backoff(clock=clock)
    key = container_key(POD, "c")
    assert b.remaining(key, clock.now) == 0
    b.next(key, clock.now)
    clock.now += 4
    assert b.remaining(key, clock.now - 4) == 6
    clock.now += 7
    assert b.remaining(key, clock.now - 11) == 0


def test_gc_drops_only_entries_not_updated_for_twice_the_maximum() -> None:
    clock = ManualClock()
    b = Backoff(clock=clock)
    old, fresh = container_key(POD, "old"), container_key(POD, "fresh")
    b.next(old, clock.now)
    clock.now += 500
    b.next(fresh, clock.now)
    clock.now += 101  # old: 601 s > 2 x 300 s without an update; fresh: 101 s
    b.gc()
    assert b.current(old) == 0
    assert b.current(fresh) == 10


def test_messages() -> None:
    assert crash_loop_message(10, "c", POD) == "back-off 10s restarting failed container=c pod=p_ns(u1)"
    assert go_duration(80) == "1m20s"
    assert go_duration(300) == "5m0s"


def test_effective_grace_period() -> None:
    assert effective_grace_period(None, {"spec": {}}) == 30
    assert effective_grace_period(None, {"spec": {"terminationGracePeriodSeconds": 3}}) == 3
    deleting = {"metadata": {"deletionGracePeriodSeconds": 5}, "spec": {"terminationGracePeriodSeconds": 30}}
    assert effective_grace_period(None, deleting) == 5
    assert effective_grace_period(2, deleting) == 2  # only goes down
    assert effective_grace_period(None, {"metadata": {"deletionGracePeriodSeconds": 0}, "spec": {}}) == 1
    assert effective_grace_period(None, {"spec": {"terminationGracePeriodSeconds": 0}}) == 1
    assert effective_grace_period(None, {"spec": {}}, override=1) == 1


def test_stop_timeout_after_prestop() -> None:
    assert stop_timeout_after_prestop(30, 5) == 25
    assert stop_timeout_after_prestop(3, 2.5) == 2
