"""The event pump's conversion, ordering, dedup on resume and reconnect, over plain iterators."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from vk_provider.runtime.docker.events import EventPump, runtime_event
from vk_provider.runtime.docker.streams import thread_stream
from vk_provider.runtime.types import ContainerRole, EventsResumed


def raw(action: str, cid: str, nanos: int, node: str = "n1", **attrs: str) -> dict[str, Any]:
    return {
        "Type": "container",
        "Action": action,
        "id": cid,
        "timeNano": nanos,
        "Actor": {
            "ID": cid,
            "Attributes": {
                "io.vk-provider.node": node,
                "io.vk-provider.pod.uid": "u1",
                "io.vk-provider.container.name": "app",
                "io.vk-provider.role": "app",
                **attrs,
            },
        },
    }


def test_runtime_event_conversion() -> None:
    ev = runtime_event(raw("die", "c1", 1_700_000_000_000_000_000, exitCode="3"), "n1")
    assert ev is not None
    assert (ev.pod_uid, ev.container_name, ev.role, ev.action, ev.exit_code) == (
        "u1",
        "app",
        ContainerRole.APP,
        "die",
        3,
    )
    assert ev.time is not None and ev.time.year == 2023
    assert runtime_event(raw("start", "c1", 1), "n1") is not None
    assert runtime_event(raw("exec_start: sh", "c1", 1), "n1") is None
    assert runtime_event(raw("die", "c1", 1, node="other"), "n1") is None


class FlakyOpener:
    """Two connections: the first breaks after one event, the second replays it then goes on."""

    def __init__(self) -> None:
        self.calls: list[float | None] = []

    def __call__(self, since: float | None) -> Iterator[dict[str, Any]]:
        self.calls.append(since)
        if len(self.calls) == 1:
            return self._broken()
        if len(self.calls) == 2:
            return iter([raw("start", "c1", 10), raw("die", "c1", 20, exitCode="0")])
        return iter(())

    @staticmethod
    def _broken() -> Iterator[dict[str, Any]]:
        yield raw("start", "c1", 10)
        raise ConnectionError("stream broke")


async def test_pump_reconnects_resumes_marks_the_gap_and_skips_duplicates(monkeypatch: Any) -> None:
    monkeypatch.setattr("vk_provider.runtime.docker.events.BACKOFF_INITIAL", 0.01)
    opener = FlakyOpener()
    pump = EventPump(opener, "n1")
    pump.start()
    exited = pump.wait_exit("c1")
    got: list[object] = []
    async for ev in pump.events():
        if isinstance(ev, EventsResumed):
            got.append("resumed")
            continue
        got.append((ev.action, ev.exit_code))
        if ev.action == "die":
            break
    await asyncio.wait_for(exited, 5)
    pump.close()
    assert got == [("start", None), "resumed", ("die", 0)]
    assert opener.calls[:2] == [None, 10 / 1e9]


async def test_thread_stream_yields_items_and_raises_errors() -> None:
    def items() -> Iterator[bytes]:
        yield b"a"
        yield b"b"

    assert [x async for x in thread_stream(items, name="t")] == [b"a", b"b"]

    def failing() -> Iterator[bytes]:
        yield b"a"
        raise OSError("boom")

    seen = []
    with pytest.raises(OSError, match="boom"):
        async for x in thread_stream(failing, name="t"):
            seen.append(x)
    assert seen == [b"a"]
