"""A container's CPU and memory read from its cgroup files, for a local engine.

What lives here: `CgroupStats`, which finds a Docker container's cgroup under this host's
`/sys/fs/cgroup` (v1: the `cpuacct` and `memory` hierarchies; v2: the unified one), with
either of Docker's drivers (cgroupfs: `docker/<id>`; systemd: `system.slice/docker-<id>.scope`),
and reads it into the shape of `docker stats` (`cpu_stats.cpu_usage.total_usage`,
`memory_stats.usage` and `.stats`), so `stats.container_stats` reads both alike. Docker 20.10
has no bulk stats call: one `docker stats` per container per pass costs the engine a request
and this process a response to parse each; the cgroup files are a few small reads (cAdvisor,
which the kubelet's /metrics/cadvisor comes from, reads them too).
`read` answers None when the files are not visible from here (a remote engine, or the provider in
a container without the host's cgroup tree): the caller then asks the engine.
Must not: write to a cgroup, or block the event loop (callers run `read` in a thread).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _places(container_id: str) -> tuple[str, ...]:
    return (f"docker/{container_id}", f"system.slice/docker-{container_id}.scope")


def _int(path: Path) -> int:
    return int(path.read_text().split()[0])


def _keyed(path: Path) -> dict[str, int]:
    """A flat-keyed cgroup file (`memory.stat`, `cpu.stat`): `name value` per line."""
    found: dict[str, int] = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            found[name] = int(value)
    return found


class CgroupStats:
    def __init__(self, root: Path = CGROUP_ROOT) -> None:
        self._root = root
        self._unified = (root / "cgroup.controllers").exists()
        self._found: dict[str, str] = {}  # container id -> its place under each hierarchy

    def _place(self, container_id: str) -> str | None:
        place = self._found.get(container_id)
        if place is not None:
            return place
        probe = "cpu.stat" if self._unified else "cpuacct/{}/cpuacct.usage"
        for candidate in _places(container_id):
            path = self._root / candidate / probe if self._unified else self._root / probe.format(candidate)
            if path.exists():
                self._found[container_id] = candidate
                return candidate
        return None

    def read(self, container_id: str) -> dict[str, Any] | None:
        """The container's sample in `docker stats`' shape, or None when its cgroup is not here."""
        place = self._place(container_id)
        if place is None:
            return None
        try:
            if self._unified:
                group = self._root / place
                cpu = _keyed(group / "cpu.stat")["usage_usec"] * 1000
                usage, memory = _int(group / "memory.current"), _keyed(group / "memory.stat")
            else:
                cpu = _int(self._root / "cpuacct" / place / "cpuacct.usage")
                group = self._root / "memory" / place
                usage, memory = _int(group / "memory.usage_in_bytes"), _keyed(group / "memory.stat")
        except (OSError, KeyError, ValueError, IndexError):  # gone since, or not readable
            self._found.pop(container_id, None)
            return None
        return {
            "cpu_stats": {"cpu_usage": {"total_usage": cpu}},
            "memory_stats": {"usage": usage, "stats": memory},
        }

    def forget(self, container_id: str) -> None:
        """The container is gone (or stopped): its place is looked up again if it is asked for."""
        self._found.pop(container_id, None)
