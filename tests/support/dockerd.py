"""The machine's Docker engine stopped and started again, for the resilience suite's outage test.

What lives here: `engine_stopped`, an async context manager that stops the local dockerd with
SIGTERM (its containers die with it: no live-restore), waits for it to exit, and on the way out,
whatever happened inside, starts it again the way CI does (`scripts/ensure-docker.sh`, in a
session of its own so the engine outlives the test run) and waits until it answers.
Must not: be used by a test without the `engine_exclusive` marker (every other Docker user of
the machine loses its containers), or leave the engine down.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.polling import eventually

REPO = Path(__file__).resolve().parents[2]
STOP_WITHIN = 60.0  # dockerd stops its containers first (a 10 s stop timeout each, in parallel)


def _dockerd_pid() -> int:
    found = subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True, text=True, check=False)
    pids = [int(pid) for pid in found.stdout.split()]
    if len(pids) != 1:
        pytest.skip(f"needs one local dockerd to stop (pgrep found {pids})")
    return pids[0]


def _exited(pid: int) -> bool:
    """Gone, or a zombie its parent has not reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _start_engine() -> None:
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure-docker.sh")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        start_new_session=True,  # dockerd must not share the test run's process group
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"dockerd did not come back: {done.stderr}"


@contextlib.asynccontextmanager
async def engine_stopped(within: float = STOP_WITHIN) -> AsyncIterator[None]:
    """dockerd is down inside the block (it has `within` seconds to stop its containers); it is
    started again (and answers) when the block ends."""
    pid = _dockerd_pid()
    try:
        os.kill(pid, signal.SIGTERM)
        await eventually(lambda: _exited(pid), within=within, interval=0.2, what=f"dockerd {pid} exited")
        yield
    finally:
        await asyncio.to_thread(_start_engine)
