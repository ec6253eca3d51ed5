"""The pods' cgroups on the engine's host: one parent cgroup per pod, as the kubelet lays them out.

What lives here: `PodCgroups`, the node's pod cgroups under its root (`<docker.cgroupRoot>/<node>`,
never the host kubelet's `kubepods`, whose kubelet removes cgroups it does not know), laid out as
pkg/kubelet/cm/pod_container_manager_linux.go does: a Guaranteed pod at `<root>/pod<uid>`, the
others at `<root>/burstable/pod<uid>` and `<root>/besteffort/pod<uid>`; named for the engine's
cgroup driver (`cgroupfs`: that path; `systemd`: the slice, `vk_provider-<node>-burstable-pod<uid>.slice`
with `-` in a part written `_`, as cgroup_manager_linux.go ToSystemd does) and written in its
cgroup version's files (v1: cpu.shares, cpu.cfs_quota_us / cpu.cfs_period_us,
memory.limit_in_bytes in each controller's hierarchy; v2: cpu.weight, cpu.max, memory.max in one
directory, cpu and memory enabled in the parents' cgroup.subtree_control). `ensure` makes a pod's
cgroup with its limits before its sandbox is created under it (`parent` is the sandbox's and its
containers' CgroupParent), `update` sets new limits (an in-place resize), `remove` takes it away
with the pod, `pod_uids` finds the pods that still have one (after a restart, for the orphan
clean-up) and `remove_root` the node's own cgroups once no pod has one. Blocking filesystem work:
the runtime calls it in its pool.
Must not: decide a pod's limits or QoS class (kuberuntime/pod_resources.py does) or be used with
an engine on another host.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from vk_provider.runtime.types import LinuxResources, RuntimeFailure

CGROUP_MOUNT = Path("/sys/fs/cgroup")
POD_PREFIX = "pod"
QOS_DIRS = {"Guaranteed": "", "Burstable": "burstable", "BestEffort": "besteffort"}
V1_LIMIT_CONTROLLERS = ("cpu", "memory")  # the hierarchies whose files carry the pod's limits


class CgroupDriver(StrEnum):
    CGROUPFS = "cgroupfs"
    SYSTEMD = "systemd"


def cpu_weight(shares: int) -> int:
    """cgroup v2's cpu.weight for v1 cpu.shares (the kubelet's CpuSharesToCpuWeight)."""
    return 1 + ((shares - 2) * 9999) // 262142 if shares else 100


def _systemd_part(part: str) -> str:
    return part.replace("-", "_")


def _kill_all(directory: Path) -> None:
    """SIGKILL every process left in one cgroup directory (none: nothing to do)."""
    try:
        pids = (directory / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


@dataclass(frozen=True)
class PodCgroups:
    """`root`: the node's cgroup, e.g. /vk-provider/<node>; `mount`: where the host's cgroup
    file systems are (v1: one directory per hierarchy below it)."""

    root: str
    driver: CgroupDriver
    version: int  # 1 or 2
    mount: Path = CGROUP_MOUNT

    def _parts(self, qos: str, uid: str) -> list[str]:
        parts = [p for p in self.root.split("/") if p]
        if QOS_DIRS.get(qos):
            parts.append(QOS_DIRS[qos])
        return [*parts, POD_PREFIX + uid]

    def _path(self, parts: list[str]) -> str:
        """The cgroup's path below a hierarchy's mount: the parts, or for systemd the nested
        slices (`/a.slice/a-b.slice/a-b-c.slice`)."""
        if self.driver == CgroupDriver.CGROUPFS:
            return "/".join(parts)
        names = ["-".join(_systemd_part(p) for p in parts[: i + 1]) + ".slice" for i in range(len(parts))]
        return "/".join(names)

    def parent(self, qos: str, uid: str) -> str:
        """The engine's CgroupParent for the pod's sandbox and containers."""
        parts = self._parts(qos, uid)
        if self.driver == CgroupDriver.SYSTEMD:
            return "-".join(_systemd_part(p) for p in parts) + ".slice"
        return "/" + "/".join(parts)

    def directories(
        self, qos: str, uid: str, controllers: tuple[str, ...] = V1_LIMIT_CONTROLLERS
    ) -> list[Path]:
        """The pod cgroup's directories: one per v1 controller (`controllers`), or the v2 one."""
        path = self._path(self._parts(qos, uid))
        if self.version == 2:
            return [self.mount / path]
        return [self.mount / controller / path for controller in controllers]

    @staticmethod
    def limit_files(version: int, resources: LinuxResources) -> dict[str, str]:
        """The files and values of `resources` (0: unlimited) for one cgroup version; v1's are
        named with their controller (`cpu/cpu.shares`)."""
        if version == 2:
            quota = str(resources.cpu_quota) if resources.cpu_quota else "max"
            return {
                "cpu.weight": str(cpu_weight(resources.cpu_shares)),
                "cpu.max": f"{quota} {resources.cpu_period or 100000}",
                "memory.max": str(resources.memory_limit) if resources.memory_limit else "max",
            }
        return {
            "cpu/cpu.shares": str(resources.cpu_shares or 1024),
            "cpu/cpu.cfs_period_us": str(resources.cpu_period or 100000),
            "cpu/cpu.cfs_quota_us": str(resources.cpu_quota) if resources.cpu_quota else "-1",
            "memory/memory.limit_in_bytes": str(resources.memory_limit) if resources.memory_limit else "-1",
        }

    def prepare(self) -> None:
        """Make the node's root cgroup (v1: in the cpu and memory hierarchies); OSError when the
        host's cgroups cannot be written here (a read-only /sys/fs/cgroup in a container)."""
        parts = [p for p in self.root.split("/") if p]
        path = self._path(parts)
        if self.version == 2:
            self._enable_v2_controllers(path + "/x")
            (self.mount / path).mkdir(parents=True, exist_ok=True)
            return
        for controller in V1_LIMIT_CONTROLLERS:
            (self.mount / controller / path).mkdir(parents=True, exist_ok=True)

    def ensure(self, qos: str, uid: str, resources: LinuxResources) -> str:
        """Make the pod's cgroup (and its parents) with `resources`; its CgroupParent back."""
        try:
            if self.version == 2:
                self._enable_v2_controllers(self._path(self._parts(qos, uid)))
            for directory in self.directories(qos, uid):
                directory.mkdir(parents=True, exist_ok=True)
            self._write(qos, uid, resources)
        except OSError as exc:
            raise RuntimeFailure(
                f"cannot make the pod cgroup {self.parent(qos, uid)}: {exc.strerror or exc}"
            ) from exc
        return self.parent(qos, uid)

    def update(self, qos: str, uid: str, resources: LinuxResources) -> None:
        """New limits on an existing pod cgroup (an in-place resize)."""
        try:
            self._write(qos, uid, resources)
        except OSError as exc:
            raise RuntimeFailure(
                f"cannot update the pod cgroup {self.parent(qos, uid)}: {exc.strerror or exc}"
            ) from exc

    def _write(self, qos: str, uid: str, resources: LinuxResources) -> None:
        path = self._path(self._parts(qos, uid))
        for name, value in self.limit_files(self.version, resources).items():
            target = self.mount / path / name if self.version == 2 else self._v1_file(name, path)
            if name.endswith("cfs_period_us") and resources.cpu_quota == 0:
                continue  # with no quota the period stays the parent's
            target.write_text(value)

    def _v1_file(self, name: str, path: str) -> Path:
        controller, file = name.split("/", 1)
        return self.mount / controller / path / file

    def _enable_v2_controllers(self, path: str) -> None:
        """cpu and memory enabled from the mount down to the pod cgroup's parent, as runc's
        cgroup manager does before it writes a child's limits."""
        current = self.mount
        for part in path.split("/")[:-1]:
            with contextlib.suppress(OSError):  # a controller the host does not delegate
                (current / "cgroup.subtree_control").write_text("+cpu +memory")
            current = current / part
            current.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            (current / "cgroup.subtree_control").write_text("+cpu +memory")

    def remove(self, uid: str) -> bool:
        """Remove the pod's cgroup in every hierarchy, with whatever cgroups the engine left
        under it (Podman's conmon cgroups outlive their containers), deepest first. The engine
        removed the pod's containers: a process still in one is killed first, as the kubelet's
        pod cgroup manager does before it destroys a pod cgroup (Podman 4.3 leaves the conmon
        of an exec session running after its container is removed). False when one is still
        busy, to be tried again."""
        removed = True
        for qos in QOS_DIRS:
            for top in self._all_directories(qos, uid):
                for directory, _, _ in os.walk(top, topdown=False):
                    _kill_all(Path(directory))
                    try:
                        os.rmdir(directory)
                    except FileNotFoundError:
                        continue
                    except OSError as exc:
                        if exc.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                            raise
                        removed = False
        return removed

    def _all_directories(self, qos: str, uid: str) -> list[Path]:
        """The pod cgroup's directory in every v1 hierarchy (the engine made it in each)."""
        if self.version == 2:
            return self.directories(qos, uid)
        path = self._path(self._parts(qos, uid))
        hierarchies = [d for d in self.mount.iterdir() if d.is_dir() and not d.is_symlink()]
        return [h / path for h in hierarchies if (h / path).is_dir()]

    def remove_root(self) -> bool:
        """Remove the node's own cgroups (its QoS ones, then its root) once no pod cgroup is
        left under them; False when something still is."""
        if self.pod_uids():
            return False
        parts = [p for p in self.root.split("/") if p]
        paths = [self._path([*parts, d]) for d in QOS_DIRS.values() if d] + [self._path(parts)]
        hierarchies = [self.mount] if self.version == 2 else [d for d in self.mount.iterdir() if d.is_dir()]
        for hierarchy in hierarchies:
            for path in paths:
                with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                    (hierarchy / path).rmdir()
        return True

    def pod_uids(self) -> set[str]:
        """The UIDs of the pods that have a cgroup here."""
        found: set[str] = set()
        for qos in QOS_DIRS:
            directory = self.directories(qos, "", controllers=("memory",))[0].parent
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                for entry in os.scandir(directory):
                    uid = self._uid_of(entry.name)
                    if uid and entry.is_dir():
                        found.add(uid)
        return found

    def _uid_of(self, name: str) -> str:
        """The pod UID a cgroup directory's name holds ("" for one that is no pod's)."""
        if self.driver == CgroupDriver.SYSTEMD:
            if not name.endswith(".slice"):
                return ""
            name = name.removesuffix(".slice").rsplit("-", 1)[-1].replace("_", "-")
        return name.removeprefix(POD_PREFIX) if name.startswith(POD_PREFIX) else ""
