"""runtime.docker.volume_tar: the tars that ship a volume's files, and reading a volume back."""

from __future__ import annotations

import io
import tarfile

from vk_provider.runtime.docker.spec import VOLUME_ROOT_PATH
from vk_provider.runtime.docker.volume_tar import SLOTS, ShippedState, payload_tar, read_volume
from vk_provider.runtime.types import VolumeFile

FILES = [VolumeFile("a", b"1", 0o644), VolumeFile("d/b", b"2", 0o400, uid=1000, gid=2000)]


def entries(tar: bytes) -> list[tuple[str, bytes, int, int, int, str]]:
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return [
            (m.name.removeprefix(VOLUME_ROOT_PATH).lstrip("/"), m.type, m.mode, m.uid, m.gid, m.linkname)
            for m in t.getmembers()
        ]


def as_archive(tar: bytes) -> bytes:
    """What get_archive gives of the volume after extracting `tar` into an empty one (each
    name's last entry wins, as Docker's extraction leaves it)."""
    last: dict[str, tuple[tarfile.TarInfo, bytes]] = {}
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        for m in t.getmembers():
            f = t.extractfile(m) if m.isfile() else None
            last[m.name] = (m, f.read() if f else b"")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as out:
        for m, data in last.values():
            out.addfile(m, io.BytesIO(data) if m.isfile() else None)
    return buf.getvalue()


def test_payload_is_the_atomic_writer_layout_in_a_slot() -> None:
    tar, state = payload_tar(FILES, None, ShippedState(slot=None), "..2026_12_01_19_00_00.000001", 0)
    got = entries(tar)
    payload = f"{SLOTS[0]}/..2026_12_01_19_00_00.000001"
    assert got[0] == ("", tarfile.DIRTYPE, 0o755, 0, 0, "")
    # the slot is emptied first: a file entry removes whatever directory had its name
    assert got[1][:2] == (SLOTS[0], tarfile.REGTYPE) and got[2][:2] == (SLOTS[0], tarfile.DIRTYPE)
    assert (f"{payload}/a", tarfile.REGTYPE, 0o644, 0, 0, "") in got
    assert (f"{payload}/d/b", tarfile.REGTYPE, 0o400, 1000, 2000, "") in got
    names = [g[0] for g in got]
    assert names.index(f"{payload}/d") < names.index(f"{payload}/d/b")
    swap = names.index("..data")
    assert got[swap][1:] == (tarfile.SYMTYPE, 0o777, 0, 0, payload)
    assert ("a", tarfile.SYMTYPE, 0o777, 0, 0, "..data/a") in got[swap:]
    assert ("d", tarfile.SYMTYPE, 0o777, 0, 0, "..data/d") in got[swap:]
    # after the swap the other slot is emptied: the previous payload goes
    assert [g[:2] for g in got[-2:]] == [(SLOTS[1], tarfile.REGTYPE), (SLOTS[1], tarfile.DIRTYPE)]
    assert state.slot == SLOTS[0] and state.visible == {"a", "d"}


def test_fs_group_owns_the_directories_setgid() -> None:
    tar, state = payload_tar(FILES, 3000, ShippedState(slot=None), "..t", 0)
    dirs = [g for g in entries(tar) if g[1] == tarfile.DIRTYPE and not g[0].startswith(SLOTS[1])]
    assert dirs and all(g[2:5] == (0o2755, 0, 3000) for g in dirs)
    assert state.group == 3000


def test_updates_alternate_slots_and_keep_existing_links() -> None:
    _, first = payload_tar(FILES, None, ShippedState(slot=None), "..t1", 0)
    tar, second = payload_tar(
        [VolumeFile("a", b"new", 0o644), VolumeFile("c", b"3", 0o644)], None, first, "..t2", 0
    )
    got = entries(tar)
    links = [g[0] for g in got if g[1] == tarfile.SYMTYPE]
    assert links == ["..data", "c"]  # `a` exists already: not replaced, so readers see no gap
    assert ("..data", tarfile.SYMTYPE, 0o777, 0, 0, f"{SLOTS[1]}/..t2") in got
    assert [g[0] for g in got[-2:]] == [SLOTS[0], SLOTS[0]]
    assert second.slot == SLOTS[1] and second.visible == {"a", "c", "d"}  # `d` dangles


def test_a_volume_read_back_says_whether_it_holds_the_files() -> None:
    tar, shipped = payload_tar(FILES, 3000, ShippedState(slot=None), "..t1", 0)
    read = read_volume(as_archive(tar))
    assert read == shipped
    assert read.holds(FILES, 3000)
    assert not read.holds(FILES, None)
    assert not read.holds([VolumeFile("a", b"changed", 0o644), FILES[1]], 3000)
    assert not read.holds([VolumeFile("a", b"1", 0o600), FILES[1]], 3000)
    assert not read.holds(FILES[:1], 3000)
    assert read_volume(as_archive(payload_tar([], None, ShippedState(slot=None), "..t", 0)[0])).holds(
        [], None
    )


def test_an_empty_or_foreign_volume_holds_nothing() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        root = tarfile.TarInfo(VOLUME_ROOT_PATH)
        root.type = tarfile.DIRTYPE
        t.addfile(root)
    assert read_volume(buf.getvalue()) == ShippedState(slot=None)
    assert not ShippedState(slot=None).holds([], None)
