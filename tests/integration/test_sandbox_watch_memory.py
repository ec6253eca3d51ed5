"""Memory of the sandbox's watches over HTTP (issue 13 item 11): many watches of a large object
share one serialization of each event, a watch that ends leaves no state in the store, and a
client that does not read is cut off once its buffer is full while the others keep receiving.

Figures are tracemalloc's for this process (server and client), with generous margins."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.polling import eventually
from tests.support.sandbox import RunningSandbox, admin_session, running_sandbox

MIB = 1024 * 1024
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _configmap(value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": value}}


async def _write(
    session: aiohttp.ClientSession, sandbox: RunningSandbox, value: str, *, create: bool = False
) -> str:
    body = json.dumps(_configmap(value))
    headers = {"Content-Type": "application/json"}
    url = sandbox.url + CONFIGMAPS + ("" if create else "/big")
    async with session.request("POST" if create else "PUT", url, data=body, headers=headers) as r:
        assert r.status in (200, 201), await r.text()
        return str((await r.json())["metadata"]["resourceVersion"])


async def _open_watch(
    session: aiohttp.ClientSession, sandbox: RunningSandbox, rv: str
) -> aiohttp.ClientResponse:
    url = f"{sandbox.url}{CONFIGMAPS}?watch=true&resourceVersion={rv}&timeoutSeconds=300"
    response = await session.get(url)
    assert response.status == 200
    return response


async def _lines(response: aiohttp.ClientResponse, count: int) -> list[dict[str, Any]]:
    return [json.loads(await response.content.readline(max_line_length=8 * MIB)) for _ in range(count)]


async def test_watches_of_a_large_object_share_its_serialization_and_leave_no_state(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, controllers=False) as sandbox, admin_session(sandbox) as session:
        rv = await _write(session, sandbox, "0" * 2 * MIB, create=True)
        baseline = sandbox.store.stats()["watches"]
        watches = [await _open_watch(session, sandbox, rv) for _ in range(50)]
        await asyncio.sleep(0.2)
        gc.collect()
        tracemalloc.start()
        try:
            for i in range(1, 6):
                await _write(session, sandbox, str(i) * 2 * MIB)
            await asyncio.sleep(1)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # 5 events of 2 MiB to 50 watchers: one JSON per event, not one per watcher (was > 100 MiB)
        assert peak < 120 * MIB, f"peak {peak / MIB:.0f} MiB"
        for watch in watches:
            events = await asyncio.wait_for(_lines(watch, 5), 60)
            assert [e["type"] for e in events] == ["MODIFIED"] * 5
            assert events[-1]["object"]["data"]["k"] == "5" * 2 * MIB
            watch.close()
        await eventually(
            lambda: sandbox.store.stats()["watches"] == baseline,
            within=10,
            interval=0.1,
            what="the watches closed",
        )
        stats = sandbox.store.stats()
        assert stats["watches"] == baseline and stats["watchBufferedBytes"] == 0


async def test_a_client_that_does_not_read_is_cut_off_and_the_others_keep_receiving(tmp_path: Path) -> None:
    # a watcher may fall 8 MiB behind (the log's budget); each 1 MiB update is charged 2 MiB
    async with (
        running_sandbox(tmp_path, controllers=False, watch_history_bytes=8 * MIB) as sandbox,
        admin_session(sandbox) as session,
    ):
        rv = await _write(session, sandbox, "0" * MIB, create=True)
        baseline = sandbox.store.stats()["watches"]
        stalled = await _open_watch(session, sandbox, rv)
        reader = await _open_watch(session, sandbox, rv)
        for i in range(1, 41):
            written = await _write(session, sandbox, str(i % 10) * MIB)
            (event,) = await asyncio.wait_for(_lines(reader, 1), 30)
            assert event["type"] == "MODIFIED" and event["object"]["metadata"]["resourceVersion"] == written
        stats = sandbox.store.stats()
        assert stats["watches"] == baseline + 1, "the stalled watch is still registered"
        assert stats["watchBufferedBytes"] <= 8 * MIB
        received = 0
        with contextlib.suppress(aiohttp.ClientPayloadError, aiohttp.ClientConnectionError):
            async with asyncio.timeout(60):
                while await stalled.content.readline(max_line_length=8 * MIB):
                    received += 1
        assert received < 40, "the stalled watch was not terminated"
        reader.close()
        stalled.close()
