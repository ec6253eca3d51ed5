"""A process's figures from /proc: its children (`child_pids`), its CPU time (`cpu_seconds`,
utime + stime of all its threads) and its resident memory (`rss_mb`).

Must not: import from `tests/`; write to /proc or signal a process (it only reads).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def child_pids(pid: int) -> list[int]:
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                pids += [int(child) for child in (task / "children").read_text().split()]
    return pids


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` (all its threads), in seconds, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # fields from the 3rd (state) on
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """VmRSS of `pid` in MB (MiB), from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for pid {pid}")
