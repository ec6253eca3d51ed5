"""vk_common.tasks: the start-once / cancel-and-wait lifecycle every background part uses."""

from __future__ import annotations

import asyncio

import pytest

from vk_common.tasks import BackgroundTask, cancel_and_wait


async def test_start_runs_once_and_stop_cancels_and_waits() -> None:
    started = 0
    cleaned = asyncio.Event()

    async def run() -> None:
        nonlocal started
        started += 1
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.set()

    task = BackgroundTask("sleeper")
    task.start(run)
    task.start(run)  # already running: not started twice
    await asyncio.sleep(0)
    assert task.running and started == 1
    await task.stop()
    assert cleaned.is_set(), "stop waits until the task's clean-up has run"
    assert not task.running
    await task.stop()  # stopping twice is harmless


async def test_a_finished_task_is_started_anew() -> None:
    runs = 0

    async def run() -> None:
        nonlocal runs
        runs += 1

    task = BackgroundTask("once")
    task.start(run)
    await asyncio.sleep(0.01)
    task.start(run)
    await asyncio.sleep(0.01)
    assert runs == 2
    await task.stop()


async def test_stop_with_grace_lets_a_task_that_ends_by_itself_finish() -> None:
    finishing = asyncio.Event()
    finished = False

    async def run() -> None:
        nonlocal finished
        await finishing.wait()
        await asyncio.sleep(0.05)  # the last step of its work, not to be cut short
        finished = True

    task = BackgroundTask("finisher")
    task.start(run)
    finishing.set()
    await task.stop(grace=5)
    assert finished, "the grace lets the task end by itself"


async def test_stop_with_grace_cancels_a_task_that_does_not_end_in_time() -> None:
    cancelled = asyncio.Event()

    async def run() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = BackgroundTask("stubborn")
    task.start(run)
    await task.stop(grace=0.05)
    assert cancelled.is_set() and not task.running


async def test_stop_raises_what_the_task_failed_with() -> None:
    async def run() -> None:
        raise ValueError("broken")

    task = BackgroundTask("failing")
    task.start(run)
    await asyncio.sleep(0.01)
    with pytest.raises(ValueError, match="broken"):
        await task.stop()


async def test_cancel_and_wait_returns_what_the_tasks_failed_with_and_raises_none() -> None:
    async def broken() -> None:
        raise ValueError("broken")

    async def sleeper() -> None:
        await asyncio.sleep(3600)

    tasks = [asyncio.create_task(broken()), asyncio.create_task(sleeper())]
    await asyncio.sleep(0.01)
    errors = await cancel_and_wait(*tasks, None)
    assert [str(e) for e in errors] == ["broken"]
    assert all(task.done() for task in tasks)


async def test_the_callers_own_cancellation_is_not_swallowed() -> None:
    async def stubborn() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(3600)  # slow clean-up

    inner = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    outer = asyncio.create_task(cancel_and_wait(inner))
    await asyncio.sleep(0.01)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert outer.cancelled()
    await asyncio.sleep(0)
    assert inner.done()
