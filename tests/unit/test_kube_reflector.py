"""Reflector logic with a scripted in-memory client: resume, bookmarks, 410 relist diffing, backoff."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest

from tests.support.metrics import sample
from tests.support.polling import eventually
from vk_provider.kube import reflector as reflector_module
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.kube.reflector import Reflector, backoff_delay, diff_relist, list_items
from vk_provider.metrics import ProviderMetrics


def pod(name: str, rv: str, uid: str | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": uid or f"uid-{name}"}}


def pod_list(resource_version: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": resource_version},
        "items": list(items),
    }


class ScriptedClient:
    """Answers list calls and watch calls from queues; records the params it got."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.list_params: list[dict[str, Any]] = []
        self.watch_params: list[dict[str, Any]] = []
        self.metrics = ProviderMetrics()  # where the reflector counts its watch restarts

    async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.list_params.append(dict(params or {}))
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return cast(dict[str, Any], answer)

    async def watch(
        self, path: str, params: dict[str, Any] | None = None
    ) -> AsyncGenerator[dict[str, Any], None]:
        self.watch_params.append(dict(params or {}))
        if not self.watches:
            await asyncio.Event().wait()  # blocks until the reflector stops
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield event


async def test_list_watch_resume_bookmark_and_relist_on_410(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reflector_module, "MIN_BACKOFF", 0.01)  # the relists' pacing, shortened
    client = ScriptedClient(
        lists=[
            pod_list("10", pod("a", "9")),
            pod_list("20", pod("a", "16"), pod("c", "17")),
            pod_list("30", pod("c", "17")),
        ],
        watches=[
            [
                {"type": "ADDED", "object": pod("b", "11")},
                {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "15"}}},
            ],
            [
                {
                    "type": "ERROR",
                    "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
                }
            ],
            ApiStatusError(410, "Expired", "too old resource version"),
        ],
    )
    seen: list[tuple[str, str]] = []
    synced = 0

    async def handler(type_: str, obj: dict[str, Any]) -> None:
        seen.append((type_, obj["metadata"]["name"]))
        if obj["metadata"]["name"] == "b":
            raise RuntimeError("handler bugs are logged, not fatal")

    async def on_synced() -> None:
        nonlocal synced
        synced += 1

    reflector = Reflector(
        cast(KubeClient, client),
        "/api/v1/pods",
        handler,
        params={"fieldSelector": "spec.nodeName=n1"},
        on_synced=on_synced,
    )
    await reflector.start()
    await asyncio.wait_for(reflector.synced.wait(), 5)
    await eventually(lambda: len(client.watch_params) >= 4, within=2, interval=0.01, what="the fourth watch")
    await reflector.stop()

    assert seen == [
        ("ADDED", "a"),  # first list
        ("ADDED", "b"),  # watch
        ("DELETED", "b"),  # relist after the ERROR 410 event: b vanished, a changed, c is new
        ("MODIFIED", "a"),
        ("ADDED", "c"),
        ("DELETED", "a"),  # relist after the HTTP 410
    ]
    assert synced == 3
    assert all(p == {"fieldSelector": "spec.nodeName=n1"} for p in client.list_params)
    assert [p["resourceVersion"] for p in client.watch_params] == ["10", "15", "20", "30"]
    assert all(
        p["allowWatchBookmarks"] is True and p["fieldSelector"] == "spec.nodeName=n1"
        for p in client.watch_params
    )
    assert set(reflector.store()) == {"ns/c"}
    assert reflector.store()["ns/c"]["kind"] == "Pod"
    restarts = "vk_provider_watch_restarts_total"
    assert sample(client.metrics, restarts, reflector="/api/v1/pods", reason="expired") == 2


async def test_restart_after_stop_relists_and_reports_only_differences() -> None:
    client = ScriptedClient(
        lists=[
            pod_list("5", pod("a", "5")),
            pod_list("6", pod("a", "5")),
        ],
        watches=[],
    )
    seen: list[tuple[str, str]] = []

    async def handler(type_: str, obj: dict[str, Any]) -> None:
        seen.append((type_, obj["metadata"]["name"]))

    reflector = Reflector(cast(KubeClient, client), "/api/v1/pods", handler)
    await reflector.start()
    await asyncio.wait_for(reflector.synced.wait(), 5)
    await reflector.stop()
    await reflector.start()
    await eventually(
        lambda: len(client.list_params) == 2 and len(client.watch_params) == 2,
        within=2,
        interval=0.01,
        what="the second list and watch",
    )
    await reflector.stop()
    assert seen == [("ADDED", "a")]
    assert reflector.resource_version == "6"


async def relist_delays(monkeypatch: pytest.MonkeyPatch, lists: int, watches: list[Any]) -> list[int]:
    """The back-off steps a reflector waits before its relists, with `watches` scripted and
    `lists` list answers (the watch after them blocks); the waits themselves are cut to nothing."""
    steps: list[int] = []

    def step(failures: int) -> float:
        steps.append(failures)
        return 0.0

    monkeypatch.setattr(reflector_module, "backoff_delay", step)
    answer = pod_list("5")
    scripted = len(watches)
    client = ScriptedClient(lists=[answer] * lists, watches=watches)

    async def handler(type_: str, obj: dict[str, Any]) -> None:
        pass

    reflector = Reflector(cast(KubeClient, client), "/api/v1/pods", handler)
    await reflector.start()
    await eventually(lambda: len(client.watch_params) > scripted, within=5, interval=0.01)
    await reflector.stop()
    return steps


async def test_a_watch_that_keeps_expiring_gets_relists_paced_by_a_growing_back_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """client-go's reflector waits a step of its backoff (800 ms first) before each relist."""
    expired = ApiStatusError(410, "Expired", "too old resource version")
    assert await relist_delays(monkeypatch, 4, [expired] * 3) == [1, 2, 3]


async def test_the_relist_back_off_starts_over_once_a_watch_delivered_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expired = ApiStatusError(410, "Expired", "too old resource version")
    worked = [{"type": "ADDED", "object": pod("a", "6")}]
    assert await relist_delays(monkeypatch, 3, [expired, worked, expired]) == [1, 1]


def test_diff_relist_treats_a_new_uid_as_delete_then_add() -> None:
    known = {"ns/a": pod("a", "1", uid="old")}
    listed = {"ns/a": pod("a", "2", uid="new")}
    assert [(t, o["metadata"]["uid"]) for t, o in diff_relist(known, listed)] == [
        ("DELETED", "old"),
        ("ADDED", "new"),
    ]


def test_list_items_fill_in_kind_and_api_version() -> None:
    answer = {"kind": "NodeList", "apiVersion": "v1", "items": [{"metadata": {"name": "n"}}]}
    assert list_items(answer) == [{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}}]


def test_backoff_doubles_with_jitter_and_caps() -> None:
    assert backoff_delay(1, rand=lambda: 0.0) == 0.8
    assert backoff_delay(3, rand=lambda: 0.0) == 3.2
    assert backoff_delay(3, rand=lambda: 1.0) == 6.4
    assert backoff_delay(50, rand=lambda: 0.5) == 45.0
