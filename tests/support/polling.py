"""Waiting in tests: `eventually` (async) and `until` (blocking) poll a check until it is truthy.

Both return the check's truthy value and fail with an AssertionError naming what was awaited
once the deadline passes. Deadlines are generous: machines are shared and noisy.

`eventually` takes a check that returns either an awaitable or a plain value (a lambda over
fakes, say), and awaits the former. For either helper, `what` may be a callable that builds the
message when the deadline passes, so that it can show the last thing the check saw (a check
keeps that in a `nonlocal`). A check may raise to stop waiting at once (a process that exited).
Every wait of the suite goes through these two; a test must not write its own sleep loop.
Must not: know about pods, containers or the API (the harness's `wait_for` builds on them).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

DEADLINE = 120.0


def _describe(what: str | Callable[[], str]) -> str:
    return what if isinstance(what, str) else what()


async def eventually(
    check: Callable[[], Awaitable[Any] | Any],
    *,
    within: float = 60.0,
    interval: float = 0.1,
    what: str | Callable[[], str] = "condition",
) -> Any:
    """The first truthy value of `check()` (awaited if it is awaitable), polled every `interval` s."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if loop.time() > end:
            raise AssertionError(f"{_describe(what)} not met before the deadline ({within:g} s)")
        await asyncio.sleep(interval)


def until(
    what: str | Callable[[], str], probe: Callable[[], Any], deadline: float = DEADLINE, interval: float = 0.5
) -> Any:
    """The first truthy value of `probe()`, polled every `interval` s; blocks the calling thread."""
    end = time.monotonic() + deadline
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {_describe(what)}")
        time.sleep(interval)
