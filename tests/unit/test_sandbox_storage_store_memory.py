"""Memory bounds of the sandbox Store (issue 13 item 11): the event log is bounded by bytes as
well as by count, a watch's state is freed when it ends, and a watcher that does not read is
terminated once its buffer is full while the others keep receiving.

The figures are tracemalloc's (this process's Python allocations), with generous margins."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from vk_sandbox.storage.store import Store
from vk_sandbox.storage.watch_cache import WatchEvent, WatchStream

MIB = 1024 * 1024
DEFAULT_BUDGET = 64 * MIB  # Store's default log_bytes


def _configmap(value: str) -> dict[str, Any]:
    return {"metadata": {"name": "big", "namespace": "default"}, "data": {"k": value}}


async def _store(**kwargs: Any) -> Store:
    store = Store(**kwargs)
    await store.create("namespaces", {"metadata": {"name": "default"}})
    return store


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def _live() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def _update(store: Store, value: str) -> None:
    obj = await store.get("configmaps", "default", "big")
    obj["data"]["k"] = value
    await store.update("configmaps", obj)


async def test_log_is_bounded_by_bytes_and_older_rvs_get_410(traced: None) -> None:
    store = await _store()
    before = _live()
    first = await store.create("configmaps", _configmap("0" * 2 * MIB))
    for i in range(1, 60):  # about 120 MiB of history
        await _update(store, str(i % 10) * 2 * MIB)
    grown = _live() - before
    assert grown < DEFAULT_BUDGET + 16 * MIB, f"the log kept {grown / MIB:.0f} MiB"
    stats = store.stats()
    assert stats["logBytes"] <= DEFAULT_BUDGET and stats["logEvents"] < 40
    events = [
        e async for e in store.watch("configmaps", resource_version=first["metadata"]["resourceVersion"])
    ]
    assert [e.type for e in events] == ["ERROR"]
    assert events[0].object["code"] == 410 and events[0].object["reason"] == "Expired"


async def test_a_configured_byte_budget_keeps_the_newest_events() -> None:
    store = await _store(log_bytes=3 * MIB)
    await store.create("configmaps", _configmap("x" * MIB))
    for i in range(5):
        await _update(store, str(i) * MIB)
    assert store.stats()["logBytes"] <= 3 * MIB
    rv = int(store.resource_version)
    recent = [e async for e in _until_idle(store.watch("configmaps", resource_version=str(rv - 1)))]
    assert [e.type for e in recent] == ["MODIFIED"] and recent[0].object["data"]["k"] == "4" * MIB
    old = [e async for e in store.watch("configmaps", resource_version=str(rv - 4))]
    assert old[0].type == "ERROR" and old[0].object["code"] == 410


async def _until_idle(stream: WatchStream) -> AsyncIterator[WatchEvent]:
    """The events a watch has ready now, then it is closed."""
    try:
        while True:
            try:
                yield await asyncio.wait_for(anext(stream), 0.2)
            except TimeoutError:
                return
    finally:
        await stream.aclose()


async def test_closed_watches_leave_no_state_and_share_one_copy_of_each_event(traced: None) -> None:
    store = await _store()
    await store.create("configmaps", _configmap("0" * MIB))
    before = _live()
    watches = [store.watch("configmaps", resource_version=store.resource_version) for _ in range(100)]
    for i in range(1, 6):
        await _update(store, str(i) * MIB)
    stats = store.stats()
    assert stats["watches"] == 100 and stats["watchBufferedEvents"] == 500
    # 100 buffers of the same 5 events: the log's objects and one JSON per event, no copies
    held = _live() - before
    assert held < 40 * MIB, f"100 watchers hold {held / MIB:.0f} MiB"
    received = [e async for e in _until_idle(watches[0])]
    assert [e.type for e in received] == ["MODIFIED"] * 5
    for watch in watches[1:]:
        await watch.aclose()
    stats = store.stats()
    assert stats["watches"] == 0 and stats["watchBufferedEvents"] == 0 and stats["watchBufferedBytes"] == 0


async def test_a_watcher_that_does_not_read_is_terminated_and_the_others_keep_receiving() -> None:
    store = await _store(log_bytes=8 * MIB)  # a watcher's buffer holds 8 MiB, as the log
    await store.create("configmaps", _configmap("0" * MIB))
    ended: list[str] = []
    stalled = store.watch(
        "configmaps", resource_version=store.resource_version, on_terminate=lambda: ended.append("stalled")
    )
    reader = store.watch("configmaps", resource_version=store.resource_version)
    for i in range(1, 21):
        await _update(store, str(i % 10) * MIB)
        event = await asyncio.wait_for(anext(reader), 5)
        assert event.type == "MODIFIED" and event.object["data"]["k"][0] == str(i % 10)
        assert store.stats()["watchBufferedBytes"] <= 8 * MIB
    assert ended == ["stalled"]
    stats = store.stats()
    assert stats["watches"] == 1 and stats["watchBufferedEvents"] == 0
    assert [e async for e in stalled] == []  # its buffered events were dropped, the stream ends
    await reader.aclose()


async def test_close_all_watches_frees_their_buffers() -> None:
    store = await _store(watch_queue_limit=3)
    watches = [store.watch("pods", resource_version=store.resource_version) for _ in range(2)]
    for name in "ab":
        await store.create("pods", {"metadata": {"name": name, "namespace": "default"}, "spec": {}})
    assert store.stats()["watchBufferedEvents"] == 4
    assert store.close_all_watches() == 2
    assert store.stats() | {"logEvents": 0, "logBytes": 0} == {
        "logEvents": 0,
        "logBytes": 0,
        "watches": 0,
        "watchBufferedEvents": 0,
        "watchBufferedBytes": 0,
    }
    for watch in watches:
        assert [e async for e in watch] == []
