"""A large object does not stall the sandbox API (issue 13 item 11): decoding, defaulting and
validating a pod near the 3 MiB limit happens off the event loop, so other clients are answered
while it is admitted.

No absolute time is asserted: a request sent while the huge create is admitted must be answered
well before the create is (on the event loop it waited for the whole admission).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

from tests.support.sandbox import RunningSandbox, admin_session


async def test_other_requests_are_answered_while_a_huge_pod_is_admitted(
    sandbox: RunningSandbox,
) -> None:
    containers = [{"name": "c", "image": "vk-test/busybox:1"} for _ in range(40_000)]  # ~1.2 MB
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"}}
    pod["spec"] = {"containers": containers}
    body = json.dumps(pod).encode()
    sent = asyncio.Event()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]
        sent.set()

    async with admin_session(sandbox) as http:

        async def create() -> tuple[int, float]:
            async with http.post(
                sandbox.url + "/api/v1/namespaces/default/pods",
                data=chunks(),
                headers={"Content-Type": "application/json"},
            ) as response:
                await response.read()
                return response.status, time.monotonic()

        async def list_meanwhile() -> tuple[float, float]:
            await sent.wait()
            await asyncio.sleep(0.2)  # the body has arrived: the pod is being admitted
            asked = time.monotonic()
            async with http.get(sandbox.url + "/api/v1/namespaces") as response:
                assert response.status == 200
            return asked, time.monotonic()

        (status, created), (asked, listed) = await asyncio.gather(create(), list_meanwhile())
    assert status == 422  # 39,999 duplicate container names
    # the list took a small part of the time the create still needed (on the loop: all of it)
    assert listed - asked < (created - asked) / 2, (listed - asked, created - asked)
