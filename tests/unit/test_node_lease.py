"""Lease body and renewal: PUT of the last lease, GET+retry on conflict, create when missing, the
same PUT again at once on a server error, at most 5 attempts a round."""

from __future__ import annotations

import contextvars
import logging
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from vk_provider.kube.client import ApiConnectionError, ApiStatusError, KubeClient
from vk_provider.node.lease import LeaseKeeper, build_lease

NOW = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)


class LeaseStore:
    """One Lease with optimistic concurrency, like the apiserver."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.calls: list[str] = []

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        stored = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.rv)}}
        self.lease = stored
        return stored

    async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.calls.append("GET")
        if self.lease is None:
            raise ApiStatusError(404, "NotFound", "not found")
        return self.lease

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("POST")
        if self.lease is not None:
            raise ApiStatusError(409, "AlreadyExists", "exists")
        return self._store(body)

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("PUT")
        if self.lease is None:
            raise ApiStatusError(404, "NotFound", "not found")
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiStatusError(409, "Conflict", "the object has been modified")
        return self._store(body)


def test_lease_body() -> None:
    lease = build_lease(None, "vk-1", "uid-1", 40, NOW)
    assert lease["metadata"]["namespace"] == "kube-node-lease"
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "vk-1", "uid": "uid-1"}
    ]
    assert lease["spec"] == {
        "holderIdentity": "vk-1",
        "leaseDurationSeconds": 40,
        "renewTime": "2026-03-04T05:06:07.123456Z",
    }


async def test_renew_creates_then_puts_last_seen_and_recovers_from_conflict_and_deletion() -> None:
    store = LeaseStore()
    keeper = LeaseKeeper(cast(KubeClient, store), "vk-1", 40)
    await keeper.renew("uid-1", NOW)
    await keeper.renew("uid-1", NOW)
    assert store.calls == ["GET", "POST", "PUT"]
    assert store.lease is not None
    store.lease = {
        **store.lease,
        "metadata": {**store.lease["metadata"], "resourceVersion": "99"},
    }  # someone wrote
    store.calls.clear()
    await keeper.renew("uid-1", NOW)
    assert store.calls == ["PUT", "GET", "PUT"]
    store.lease = None  # deleted (garbage-collected with its Node)
    store.calls.clear()
    await keeper.renew("uid-2", NOW)
    assert store.calls == ["PUT", "GET", "POST"]
    assert store.lease is not None
    assert store.lease["metadata"]["ownerReferences"][0]["uid"] == "uid-2"


async def test_renew_raises_other_errors() -> None:
    class Broken(LeaseStore):
        async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
            raise ApiStatusError(403, "Forbidden", "leases is forbidden")

    keeper = LeaseKeeper(cast(KubeClient, Broken()), "vk-1", 40)
    with pytest.raises(ApiStatusError) as caught:
        await keeper.renew("uid-1", NOW)
    assert caught.value.status == 403


class Flaky(LeaseStore):
    """The store, but its PUTs first answer each error of `errors` in turn."""

    def __init__(self, *errors: ApiStatusError) -> None:
        super().__init__()
        self.errors = list(errors)

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.errors:
            self.calls.append("PUT")
            raise self.errors.pop(0)
        return await super().replace(path, body)


def server_error() -> ApiStatusError:
    return ApiStatusError(500, "InternalError", "injected")


_THIS_TASK: contextvars.ContextVar[bool] = contextvars.ContextVar("this_task", default=False)


class _ThisTaskLines(logging.Handler):
    """The messages logged by the task that set `_THIS_TASK`: a task another test left on this
    xdist worker may log on the same logger meanwhile (it runs in a context copied before)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if _THIS_TASK.get():
            self.records.append(record)


async def test_server_errors_are_retried_at_once_within_the_round(caplog: pytest.LogCaptureFixture) -> None:
    store = Flaky()
    keeper = LeaseKeeper(cast(KubeClient, store), "vk-1", 40)
    await keeper.renew("uid-1", NOW)
    store.errors = [server_error(), ApiStatusError(409, "Conflict", "modified"), server_error()]
    store.calls.clear()
    caplog.set_level(logging.INFO, logger="vk_provider.node.lease")
    lines, logger = _ThisTaskLines(), logging.getLogger("vk_provider.node.lease")
    _THIS_TASK.set(True)
    logger.addHandler(lines)
    try:
        await keeper.renew("uid-1", NOW)
    finally:
        logger.removeHandler(lines)
    assert store.calls == ["PUT", "PUT", "GET", "PUT", "PUT"]
    assert {r.getMessage() for r in lines.records} == {"lease renewal failed; trying again"}
    assert [(r.err, r.next, r.attempt, r.maxAttempts) for r in lines.records] == [
        ("500 InternalError: injected", "sending it again at once", 2, 5),
        ("409 Conflict: modified", "reading it again", 3, 5),
        ("500 InternalError: injected", "sending it again at once", 4, 5),
    ]


async def test_five_server_errors_end_the_round_with_the_last_one() -> None:
    store = Flaky()
    keeper = LeaseKeeper(cast(KubeClient, store), "vk-1", 40)
    await keeper.renew("uid-1", NOW)
    store.errors = [server_error() for _ in range(6)]
    store.calls.clear()
    with pytest.raises(ApiStatusError) as caught:
        await keeper.renew("uid-1", NOW)
    assert caught.value.status == 500
    assert store.calls == ["PUT"] * 5
    await keeper.renew("uid-1", NOW)  # the next round: one more error, then the PUT works
    assert store.calls == ["PUT"] * 7


async def test_no_answer_at_all_ends_the_round_at_once() -> None:
    store = Flaky(ApiConnectionError("PUT leases: connection refused"))
    keeper = LeaseKeeper(cast(KubeClient, store), "vk-1", 40)
    keeper.last = {"metadata": {"name": "vk-1", "resourceVersion": "1"}}
    with pytest.raises(ApiConnectionError):
        await keeper.renew("uid-1", NOW)
    assert store.calls == ["PUT"]
