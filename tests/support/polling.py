"""Waiting in tests: `eventually` (async) and `until` (blocking) poll a check until it is truthy.

Both return the check's truthy value and fail with an AssertionError naming what was awaited
once the deadline passes. Deadlines are generous: machines are shared and noisy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

DEADLINE = 120.0


async def eventually(
    check: Callable[[], Awaitable[Any]],
    *,
    within: float = 60.0,
    interval: float = 0.1,
    what: str = "condition",
) -> Any:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while True:
        result = await check()
        if result:
            return result
        if loop.time() > end:
            raise AssertionError(f"{what} not met before the deadline ({within:g} s)")
        await asyncio.sleep(interval)


def until(what: str, probe: Callable[[], Any], deadline: float = DEADLINE, interval: float = 0.5) -> Any:
    end = time.monotonic() + deadline
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
