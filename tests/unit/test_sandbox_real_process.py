"""The real control plane's components as child processes: the restart back-off and the supervision."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from tests.support.polling import eventually
from vk_common.tasks import cancel_and_wait
from vk_sandbox.real.process import ComponentProcess, RestartBackoff


def test_the_first_exit_restarts_at_once_then_10_s_doubling_up_to_5_min() -> None:
    backoff = RestartBackoff()
    delays = [backoff.delay(now) for now in (0.0, 1.0, 12.0, 40.0, 100.0, 200.0, 400.0, 800.0, 1200.0)]
    assert delays == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]


def test_an_exit_long_after_the_previous_one_starts_over() -> None:
    backoff = RestartBackoff()
    assert [backoff.delay(0.0), backoff.delay(5.0), backoff.delay(10.0)] == [0.0, 10.0, 20.0]
    assert backoff.delay(10.0 + 601.0) == 0.0
    assert backoff.delay(620.0) == 10.0


async def test_a_component_that_keeps_exiting_is_started_again_each_time(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    component = ComponentProcess("flaky", ["sh", "-c", f"echo run >> {runs}; exit 3"], tmp_path / "flaky.log")
    await component.start()
    supervisor = asyncio.create_task(component.supervise(RestartBackoff(initial=0.05, cap=0.1)))
    try:
        await eventually(
            lambda: runs.exists() and len(runs.read_text().splitlines()) >= 4, within=30, what="4 runs"
        )
        assert component.restarts >= 3
    finally:
        await cancel_and_wait(supervisor)
        await component.stop()


async def test_a_killed_component_comes_back_and_stays_stopped_once_supervision_ends(
    tmp_path: Path,
) -> None:
    component = ComponentProcess("sleeper", ["sleep", "600"], tmp_path / "sleeper.log")
    await component.start()
    assert component.proc is not None
    first = component.proc.pid
    supervisor = asyncio.create_task(component.supervise())
    try:
        os.kill(first, signal.SIGKILL)
        await eventually(
            lambda: component.running and component.proc is not None and component.proc.pid != first,
            within=30,
            what="the sleeper started again",
        )
        assert component.restarts == 1
    finally:
        assert await cancel_and_wait(supervisor) == []
        await component.stop()
    assert not component.running and component.restarts == 1
