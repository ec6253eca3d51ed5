"""Unit tests of the sandbox Store: resourceVersions, conflicts, deletion, finalizers, watch, persistence."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from vk_sandbox.api.errors import ApiError
from vk_sandbox.storage.store import Store
from vk_sandbox.storage.watch_cache import WatchEvent


async def _store(**kwargs: Any) -> Store:
    store = Store(**kwargs)
    await store.create("namespaces", {"metadata": {"name": "default"}})
    return store


def _pod(name: str, node: str = "", **spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "terminationGracePeriodSeconds": 30,
            **spec,
        },
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
    return pod


_pending: dict[int, asyncio.Task[WatchEvent]] = {}


def _task(it: AsyncIterator[WatchEvent]) -> asyncio.Task[WatchEvent]:
    """One pending anext() per iterator, kept across calls: cancelling anext would end the watch."""
    task = _pending.get(id(it))
    if task is None:
        task = _pending[id(it)] = asyncio.ensure_future(anext(it))
    return task


async def _next(it: AsyncIterator[WatchEvent]) -> WatchEvent:
    task = _task(it)
    done, _ = await asyncio.wait([task], timeout=5.0)
    assert done, "no watch event arrived"
    del _pending[id(it)]
    return task.result()


async def _no_event(it: AsyncIterator[WatchEvent]) -> None:
    done, _ = await asyncio.wait([_task(it)], timeout=0.2)
    assert not done, f"unexpected watch event {_task(it).result()}"


async def test_create_fills_system_fields_and_rv_increases() -> None:
    store = await _store()
    a = await store.create("pods", _pod("a"))
    b = await store.create("pods", {**_pod(""), "metadata": {"generateName": "web-", "namespace": "default"}})
    assert a["kind"] == "Pod" and a["apiVersion"] == "v1"
    assert a["metadata"]["uid"] and a["metadata"]["creationTimestamp"].endswith("Z")
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    assert b["metadata"]["name"].startswith("web-") and len(b["metadata"]["name"]) == len("web-") + 5
    items, rv = await store.list("pods", "default")
    assert [p["metadata"]["name"] for p in items] == sorted(["a", b["metadata"]["name"]])
    assert rv == b["metadata"]["resourceVersion"]


async def test_a_long_generate_name_is_cut_to_leave_room_for_the_suffix() -> None:
    """names.SimpleNameGenerator: a base over 58 characters is cut, so the name stays a label."""
    store = await _store()
    base = "a" * 61 + "-"
    svc = await store.create("services", {"metadata": {"generateName": base, "namespace": "default"}})
    assert len(svc["metadata"]["name"]) == 63 and svc["metadata"]["name"].startswith("a" * 58)


async def test_errors_have_the_real_messages() -> None:
    store = await _store()
    await store.create("pods", _pod("a"))
    with pytest.raises(ApiError) as e:
        await store.create("pods", _pod("a"))
    assert (e.value.code, e.value.message) == (409, 'pods "a" already exists')
    with pytest.raises(ApiError) as e:
        await store.get("leases.coordination.k8s.io", "default", "x")
    assert e.value.status()["message"] == 'leases.coordination.k8s.io "x" not found'
    assert e.value.status()["details"] == {"name": "x", "group": "coordination.k8s.io", "kind": "leases"}
    with pytest.raises(ApiError) as e:
        await store.create("configmaps", {"metadata": {"name": "c", "namespace": "nope"}})
    assert (e.value.code, e.value.message) == (404, 'namespaces "nope" not found')


async def test_stale_update_conflicts_and_noop_update_keeps_rv() -> None:
    store = await _store()
    pod = await store.create("pods", _pod("a"))
    same = await store.update("pods", pod)
    assert same["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
    pod["metadata"]["labels"]["x"] = "1"
    updated = await store.update("pods", pod)
    assert int(updated["metadata"]["resourceVersion"]) > int(pod["metadata"]["resourceVersion"])
    with pytest.raises(ApiError) as e:
        await store.update("pods", pod)  # pod still carries the old resourceVersion
    assert e.value.code == 409
    assert e.value.status()["message"] == (
        'Operation cannot be fulfilled on pods "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    del pod["metadata"]["resourceVersion"]
    pod["metadata"]["uid"] = "other"
    with pytest.raises(ApiError) as e:
        await store.update("pods", pod)
    assert e.value.code == 409 and "Precondition failed: UID in precondition: other" in e.value.message


async def test_status_subresource_changes_only_status() -> None:
    store = await _store()
    pod = await store.create("pods", _pod("a"))
    pod["status"] = {"phase": "Running"}
    pod["spec"]["activeDeadlineSeconds"] = 5
    after = await store.update("pods", pod, subresource="status")
    assert after["status"] == {"phase": "Running"} and "activeDeadlineSeconds" not in after["spec"]
    after["status"] = {"phase": "Failed"}
    main = await store.update("pods", after)
    assert main["status"] == {"phase": "Running"}
    assert main["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]


async def test_graceful_pod_deletion_sequence() -> None:
    store = await _store()
    await store.create("pods", _pod("bound", node="n1"))
    watch = store.watch("pods", "default", resource_version=store.resource_version)
    first = await store.delete("pods", "default", "bound")
    assert first["metadata"]["deletionGracePeriodSeconds"] == 30
    assert (await _next(watch)).type == "MODIFIED"
    # a longer grace is a no-op; a shorter one moves the deadline earlier
    again = await store.delete("pods", "default", "bound", grace_period_seconds=60)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    shorter = await store.delete("pods", "default", "bound", grace_period_seconds=10)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 10
    assert shorter["metadata"]["deletionTimestamp"] < first["metadata"]["deletionTimestamp"]
    assert (await _next(watch)).type == "MODIFIED"
    await store.delete("pods", "default", "bound", grace_period_seconds=0)
    assert [(await _next(watch)).type, (await _next(watch)).type] == ["MODIFIED", "DELETED"]
    with pytest.raises(ApiError):
        await store.get("pods", "default", "bound")


async def test_unbound_or_terminal_pods_are_deleted_at_once() -> None:
    store = await _store()
    await store.create("pods", _pod("unbound"))
    done = await store.create("pods", _pod("done", node="n1"))
    done["status"] = {"phase": "Succeeded"}
    await store.update("pods", done, subresource="status")
    for name in ("unbound", "done"):
        gone = await store.delete("pods", "default", name)
        assert gone["metadata"]["deletionGracePeriodSeconds"] == 0
        with pytest.raises(ApiError):
            await store.get("pods", "default", name)


async def test_delete_preconditions() -> None:
    store = await _store()
    await store.create("pods", _pod("a"))
    with pytest.raises(ApiError) as e:
        await store.delete("pods", "default", "a", preconditions={"uid": "u1"})
    assert e.value.message.startswith(
        'Operation cannot be fulfilled on Pod "a": the UID in the precondition (u1)'
    )


async def test_finalizers_hold_deletion_until_removed() -> None:
    store = await _store()
    await store.create(
        "configmaps", {"metadata": {"name": "c", "namespace": "default", "finalizers": ["x/y"]}}
    )
    held = await store.delete("configmaps", "default", "c")
    assert held["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    await store.update("configmaps", held)
    with pytest.raises(ApiError):
        await store.get("configmaps", "default", "c")


async def test_watch_resume_replays_exactly_the_missed_events() -> None:
    store = await _store()
    a = await store.create("pods", _pod("a"))
    since = a["metadata"]["resourceVersion"]
    await store.create("pods", _pod("b"))
    a["metadata"]["labels"]["v"] = "2"
    await store.update("pods", a)
    watch = store.watch("pods", "default", resource_version=since)
    got = [await _next(watch), await _next(watch)]
    assert [(e.type, e.object["metadata"]["name"]) for e in got] == [("ADDED", "b"), ("MODIFIED", "a")]
    await _no_event(watch)
    await store.create("pods", _pod("c"))
    assert (await _next(watch)).object["metadata"]["name"] == "c"


async def test_too_old_resource_version_gives_an_error_event() -> None:
    store = await _store(log_size=2)
    for name in "abcd":
        await store.create("pods", _pod(name))
    events = [e async for e in store.watch("pods", resource_version="1")]
    assert len(events) == 1 and events[0].type == "ERROR"
    assert events[0].object["code"] == 410 and events[0].object["reason"] == "Expired"
    assert events[0].object["message"].startswith("too old resource version: 1 (")


async def test_watch_without_rv_sends_current_state_then_live() -> None:
    store = await _store()
    await store.create("pods", _pod("a"))
    watch = store.watch("pods")
    assert (await _next(watch)).type == "ADDED"
    await store.create("pods", _pod("b"))
    assert (await _next(watch)).object["metadata"]["name"] == "b"


async def test_selector_transitions() -> None:
    store = await _store()
    watch = store.watch("pods", field_selector="spec.nodeName=n1")
    pod = await store.create("pods", _pod("a"))
    await _no_event(watch)
    pod["spec"]["nodeName"] = "n1"
    pod = await store.update("pods", pod)
    added = await _next(watch)
    assert added.type == "ADDED"
    pod["spec"]["nodeName"] = "n2"
    pod = await store.update("pods", pod)
    gone = await _next(watch)
    assert gone.type == "DELETED" and gone.object["spec"]["nodeName"] == "n1"
    assert gone.object["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
    with pytest.raises(ApiError) as e:
        store.watch("pods", field_selector="spec.bogus=1")
    assert e.value.code == 400 and "field label not supported: spec.bogus" in e.value.message


async def test_bookmarks_and_close_all_watches() -> None:
    store = await _store()
    watch = store.watch("pods", resource_version=store.resource_version, bookmark_interval=0.05)
    mark = await _next(watch)
    assert mark.type == "BOOKMARK" and mark.object["metadata"]["resourceVersion"] == store.resource_version
    assert store.close_all_watches() == 1
    with pytest.raises(StopAsyncIteration):
        await _next(watch)


async def test_namespace_deletion_removes_content(tmp_path: Path) -> None:
    store = await _store()
    await store.create("namespaces", {"metadata": {"name": "team"}})
    await store.create("configmaps", {"metadata": {"name": "c", "namespace": "team"}})
    await store.delete("namespaces", None, "team")
    with pytest.raises(ApiError):
        await store.get("namespaces", None, "team")
    with pytest.raises(ApiError) as e:
        await store.delete("namespaces", None, "default")
    assert e.value.code == 403


async def test_state_dir_persists_objects(tmp_path: Path) -> None:
    store = await _store(state_dir=tmp_path)
    await store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}, "data": {"k": "v"}})
    await store.close()
    again = Store(state_dir=tmp_path)
    cm = await again.get("configmaps", "default", "c")
    assert cm["data"] == {"k": "v"}
    assert again.resource_version == store.resource_version
    events = [e async for e in again.watch("configmaps", resource_version="1")]
    assert events[0].type == "ERROR"


async def test_the_saved_state_follows_updates_deletes_and_a_reload(tmp_path: Path) -> None:
    """The file is joined from each object's encoding made at its write: an updated object is
    saved as it is now, a deleted one not at all, and objects read back from the file are saved
    again as they were."""
    store = await _store(state_dir=tmp_path)
    for name in ("a", "b"):
        await store.create("configmaps", {"metadata": {"name": name, "namespace": "default"}, "data": {}})
    a = await store.get("configmaps", "default", "a")
    await store.update("configmaps", {**a, "data": {"k": "new"}})
    await store.delete("configmaps", "default", "b")
    await store.close()
    again = Store(state_dir=tmp_path)
    await again.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}, "data": {}})
    await again.close()
    saved = json.loads((tmp_path / "store.json").read_bytes())
    assert saved["resourceVersion"] == int(again.resource_version)
    by_name = {o["metadata"]["name"]: o for o in saved["objects"]["configmaps"]}
    assert sorted(by_name) == ["a", "c"]
    assert by_name["a"]["data"] == {"k": "new"}
    assert by_name["c"] == await again.get("configmaps", "default", "c")
    third = Store(state_dir=tmp_path)
    assert (await third.get("configmaps", "default", "a"))["data"] == {"k": "new"}


async def test_bound_pod_with_finalizer_waits_for_it_after_the_final_delete() -> None:
    store = await _store()
    pod = _pod("web", node="n1")
    pod["metadata"]["finalizers"] = ["example.com/hold"]
    await store.create("pods", pod)
    watch = store.watch("pods", resource_version=store.resource_version)
    await store.delete("pods", "default", "web")
    await store.delete("pods", "default", "web", grace_period_seconds=0)
    held = await store.get("pods", "default", "web")
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    assert [(await _next(watch)).type, (await _next(watch)).type] == ["MODIFIED", "MODIFIED"]
    held["metadata"]["finalizers"] = []
    await store.update("pods", held)
    gone = await _next(watch)
    assert gone.type == "DELETED" and gone.object["metadata"]["finalizers"] == []
    with pytest.raises(ApiError):
        await store.get("pods", "default", "web")


async def test_dry_run_writes_nothing() -> None:
    store = await _store()
    rv = store.resource_version
    preview = await store.create("pods", _pod("a"), dry_run=True)
    assert preview["metadata"]["uid"] and "resourceVersion" not in preview["metadata"]
    assert store.resource_version == rv
    with pytest.raises(ApiError):
        await store.get("pods", "default", "a")


async def test_a_save_cancelled_mid_write_neither_races_close_nor_overwrites_newer_state(
    tmp_path: Path,
) -> None:
    """close() cancels the pending save; its thread may still be writing (CI on 53d17a5 saw
    close()'s own write lose the shared temporary file: FileNotFoundError)."""
    store = await _store(state_dir=tmp_path)
    big = {"k": "v" * 2_000_000}  # a write slow enough for the two to overlap
    for round_ in range(20):
        if round_:
            await store.delete("configmaps", "default", f"c{round_ - 1}")
        await store.create(
            "configmaps", {"metadata": {"name": f"c{round_}", "namespace": "default"}, "data": big}
        )
        saving = asyncio.ensure_future(store.flush())
        await asyncio.sleep(0.001)  # its thread has started writing
        saving.cancel()
        await store.flush()
        with contextlib.suppress(asyncio.CancelledError):
            await saving
    await store.create("configmaps", {"metadata": {"name": "last", "namespace": "default"}})
    await store.close()
    again = Store(state_dir=tmp_path)
    assert (await again.get("configmaps", "default", "last"))["metadata"]["name"] == "last"
    assert again.resource_version == store.resource_version
    assert os.listdir(tmp_path) == ["store.json"]
    assert os.stat(tmp_path / "store.json").st_mode & 0o777 == 0o600
