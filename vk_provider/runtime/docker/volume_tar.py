"""The tars that ship an API-backed volume's files into a Docker volume, and reading one back (pure).

What lives here: `payload_tar(files, group, current, stamp)`, one tar that, extracted at `/`
of a container mounting the volume at `/VOLUME_ROOT_PATH` (Docker's archive extraction:
an existing directory is kept when the entry is a directory too, anything else is removed
first), makes the volume hold exactly `files` in the kubelet's AtomicWriter layout:

    ..data -> ..slot_b/..2026_12_01_19_00_00.123456789   the payload, a fresh timestamped dir
    <name> -> ..data/<name>                               every user-visible top-level name
    ..slot_a/                                             the previous payload's slot, emptied

The payload alternates between two slots: a tar cannot delete, but an entry that is not a
directory removes the directory of its name, so each slot is emptied (a file entry, then a
directory entry of the same name) before it is filled, and the old slot once `..data` points
to the new one. The volume so keeps at most one payload, like the kubelet's volume. A
user-visible name no longer in the payload cannot be removed: it stays as a dangling symlink
(reading it fails as for a missing file) until a later payload has that name again.
`read_volume(tar)` parses what `get_archive` returns of the volume (active slot, visible names,
the payload's files and owners) and `ShippedState.holds(files, group)` says whether it already
holds exactly `files`. Must not: talk to Docker or touch the local filesystem.

Upstream: pkg/volume/util/atomic_writer.go (the layout), pkg/volume/volume_linux.go
(SetVolumeOwnership: fsGroup directories setgid, group r-x).
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from vk_provider.runtime.docker.spec import VOLUME_ROOT_PATH
from vk_provider.runtime.types import VolumeFile

DATA_DIR = "..data"
SLOTS = ("..slot_a", "..slot_b")
DIR_MODE = 0o755  # inside the volume: a non-root container must traverse it
GROUP_DIR_BITS = 0o2550  # volume_linux.go: setgid + roMask + execMask for an fsGroup's directories


@dataclass(frozen=True)
class ShippedState:
    """What a shipped volume holds: the slot `..data` points into, the visible names, the payload."""

    slot: str | None  # None: nothing shipped yet
    visible: frozenset[str] = frozenset()
    files: frozenset[VolumeFile] = frozenset()
    group: int | None = None  # the payload directory's group when it is setgid (an fsGroup)

    def holds(self, files: Sequence[VolumeFile], group: int | None) -> bool:
        wanted = frozenset(_owned(f) for f in files)
        names = {_top(f.path) for f in files}
        return (
            self.slot is not None and self.files == wanted and self.group == group and names <= self.visible
        )


def _owned(f: VolumeFile) -> VolumeFile:
    """The file as extraction leaves it: no owner given is root's (the engine extracts as root)."""
    return VolumeFile(f.path, f.data, f.mode, f.uid or 0, f.gid or 0)


def _top(path: str) -> str:
    return PurePosixPath(path).parts[0]


class _Tar:
    def __init__(self, mtime: float) -> None:
        self.entries: list[tuple[tarfile.TarInfo, bytes]] = []
        self.mtime = mtime

    def add(
        self,
        name: str,
        kind: bytes,
        *,
        mode: int = DIR_MODE,
        uid: int = 0,
        gid: int = 0,
        data: bytes = b"",
        link: str = "",
    ) -> None:
        entry = tarfile.TarInfo(f"{VOLUME_ROOT_PATH}/{name}" if name else VOLUME_ROOT_PATH)
        entry.type, entry.mode, entry.uid, entry.gid = kind, mode, uid, gid
        entry.mtime, entry.linkname, entry.size = int(self.mtime), link, len(data)
        self.entries.append((entry, data))

    def empty_dir(self, name: str, mode: int, gid: int) -> None:
        """`name` as an empty directory, whatever it was: a file entry removes it, then the directory."""
        self.add(name, tarfile.REGTYPE, mode=0o600)
        self.add(name, tarfile.DIRTYPE, mode=mode, gid=gid)

    def close(self) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for entry, data in self.entries:
                tar.addfile(entry, io.BytesIO(data) if entry.isfile() else None)
        return buf.getvalue()


def _dir_bits(group: int | None) -> tuple[int, int]:
    return (DIR_MODE, 0) if group is None else (DIR_MODE | GROUP_DIR_BITS, group)


def payload_tar(
    files: Sequence[VolumeFile], group: int | None, current: ShippedState, stamp: str, mtime: float
) -> tuple[bytes, ShippedState]:
    """The tar that makes the volume hold `files` (see the module), and the state it leaves.

    `stamp` is the payload directory's name (`..<timestamp>`); `group` (an fsGroup) owns the
    directories, setgid, as in `pods.volume_writer.write_atomically`; the caller checked the
    paths (relative, no `..`).
    """
    slot = SLOTS[1] if current.slot == SLOTS[0] else SLOTS[0]
    old = SLOTS[0] if slot == SLOTS[1] else SLOTS[1]
    mode, gid = _dir_bits(group)
    payload = f"{slot}/{stamp}"
    tar = _Tar(mtime)
    tar.add("", tarfile.DIRTYPE, mode=mode, gid=gid)  # the volume's root (the mount point)
    tar.empty_dir(slot, mode, gid)
    tar.add(payload, tarfile.DIRTYPE, mode=mode, gid=gid)
    made: set[str] = set()
    for f in files:
        parents = PurePosixPath(f.path).parents
        for parent in reversed(parents[:-1]):
            if str(parent) not in made:
                made.add(str(parent))
                tar.add(f"{payload}/{parent}", tarfile.DIRTYPE, mode=mode, gid=gid)
        tar.add(
            f"{payload}/{f.path}", tarfile.REGTYPE, mode=f.mode, uid=f.uid or 0, gid=f.gid or 0, data=f.data
        )
    tar.add(DATA_DIR, tarfile.SYMTYPE, mode=0o777, link=payload)  # the swap
    visible = {_top(f.path) for f in files}
    for name in sorted(visible - current.visible):  # an existing link is not replaced (no gap)
        tar.add(name, tarfile.SYMTYPE, mode=0o777, link=f"{DATA_DIR}/{name}")
    tar.empty_dir(old, DIR_MODE, 0)
    state = ShippedState(
        slot=slot,
        visible=frozenset(visible | current.visible),
        files=frozenset(_owned(f) for f in files),
        group=group,
    )
    return tar.close(), state


def read_volume(data: bytes) -> ShippedState:
    """The state of a volume from the tar `get_archive` gives of its mount point."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
        root = members[0].name.split("/")[0] if members else ""
        by_name = {m.name.removeprefix(root).lstrip("/"): m for m in members}
        data_link = by_name.get(DATA_DIR)
        if data_link is None or not data_link.issym():
            return ShippedState(slot=None)
        target = data_link.linkname.rstrip("/")
        slot = target.split("/")[0]
        if slot not in SLOTS:
            return ShippedState(slot=None)
        files = set()
        for name, m in by_name.items():
            if name.startswith(target + "/") and m.isfile():
                extracted = tar.extractfile(m)
                content = extracted.read() if extracted is not None else b""
                files.add(VolumeFile(name[len(target) + 1 :], content, m.mode & 0o7777, m.uid, m.gid))
        payload = by_name.get(target)
        group = payload.gid if payload is not None and payload.mode & 0o2000 else None
        visible = frozenset(
            n for n, m in by_name.items() if n and "/" not in n and not n.startswith("..") and m.issym()
        )
        return ShippedState(slot=slot, visible=visible, files=frozenset(files), group=group)
