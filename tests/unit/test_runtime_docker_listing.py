"""When the latest node-wide list stands for one pod's state (runtime/docker/listing.py): only
while events are followed without a gap since, the list is young, and the pod did not change
around or after it."""

from __future__ import annotations

from typing import Any

from tests.support.clocks import ManualClock
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.listing import EVENT_LAG_SECONDS, MAX_AGE_SECONDS, ListingCache


def row(uid: str, container_id: str) -> dict[str, Any]:
    return {"Id": container_id, "State": "running", "Labels": {lb.POD_UID: uid}}


def cache(epoch: list[int | None]) -> tuple[ListingCache, ManualClock]:
    clock = ManualClock()
    return ListingCache(lambda: epoch[0], clock), clock


def test_an_unchanged_pod_is_answered_from_the_list_and_an_unknown_one_has_no_rows() -> None:
    listing, clock = cache([1])
    listing.listed(clock.now, [row("a", "c1"), row("a", "c2"), row("b", "c3")])
    clock.now += 5
    assert [r["Id"] for r in listing.rows("a") or []] == ["c1", "c2"]
    assert listing.rows("gone") == []


def test_nothing_is_reused_before_a_list_or_while_events_are_not_followed() -> None:
    epoch: list[int | None] = [None]
    listing, clock = cache(epoch)
    assert listing.rows("a") is None
    listing.listed(clock.now, [row("a", "c1")])
    assert listing.rows("a") is None  # listed while nobody followed the events
    epoch[0] = 1
    assert listing.rows("a") is None  # the list predates the stream: changes may be missed
    listing.listed(clock.now, [row("a", "c1")])
    assert listing.rows("a") is not None


def test_a_gap_in_the_events_after_the_list_stops_its_reuse() -> None:
    epoch: list[int | None] = [1]
    listing, clock = cache(epoch)
    listing.listed(clock.now, [row("a", "c1")])
    epoch[0] = None  # the stream broke
    assert listing.rows("a") is None
    epoch[0] = 2  # and came back: what happened in between is unknown to that list
    assert listing.rows("a") is None


def test_a_list_older_than_the_bound_is_not_reused() -> None:
    listing, clock = cache([1])
    listing.listed(clock.now, [row("a", "c1")])
    clock.now += MAX_AGE_SECONDS + 0.1
    assert listing.rows("a") is None


def test_a_pod_changed_after_or_just_before_the_list_is_read_again() -> None:
    listing, clock = cache([1])
    listing.changed("early")
    clock.now += EVENT_LAG_SECONDS + 0.5
    listing.changed("just-before")  # its event may be ahead of what the engine lists
    clock.now += 0.1
    listing.listed(clock.now, [row("early", "e"), row("just-before", "j"), row("later", "l")])
    clock.now += 1
    listing.changed("later")
    assert listing.rows("early") is not None
    assert listing.rows("just-before") is None
    assert listing.rows("later") is None


def test_a_change_to_a_listed_container_marks_its_pod_and_a_pods_own_list_teaches_its_ids() -> None:
    listing, clock = cache([1])
    listing.listed(clock.now, [row("a", "c1"), row("b", "c2")])
    clock.now += 2
    listing.container_changed("c1")
    listing.container_changed("never-seen")
    assert listing.rows("a") is None
    assert listing.rows("b") is not None
    listing.seen("b", [row("b", "c9")])
    listing.container_changed("c9")
    assert listing.rows("b") is None
