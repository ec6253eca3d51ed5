"""A process's figures from /proc: its children (`child_pids`), its CPU time (`cpu_seconds`,
utime + stime of all its threads) and its resident memory (`rss_mb`); and the whole machine's
busy CPU time (`machine_busy_seconds`), and the CPU time of the live processes by command name
(`cpu_by_command`).

Must not: import from `tests/`; write to /proc or signal a process (it only reads).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path


def child_pids(pid: int) -> list[int]:
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                pids += [int(child) for child in (task / "children").read_text().split()]
    return pids


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat: user, nice, system, irq, softirq
    and steal; not idle or iowait): every process and the kernel, the engine's runc and iptables
    children included."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def cpu_by_command(groups: Mapping[str, tuple[str, ...]]) -> dict[str, float]:
    """`cpu_seconds` of every live process whose command name (/proc/<pid>/comm, at most 15
    characters) starts with one of a group's prefixes, summed by group."""
    totals = dict.fromkeys(groups, 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            command = (entry / "comm").read_text().strip()
            for group, prefixes in groups.items():
                if command.startswith(prefixes):
                    totals[group] += cpu_seconds(int(entry.name))
                    break
    return totals


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
