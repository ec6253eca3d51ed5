"""Guarded filesystem helpers for a directory this process owns (the provider's state directory).

What lives here: `is_safe_name(name)` (a pod UID, volume or container name usable as one path
component), `within(path, base)` / `strictly_within` (the mount-utils PathWithinBase),
`mount_of(path, mountinfo)` (which filesystem holds a path) and `mounts_under(path, mountinfo)`;
then the blocking helpers the shells run in threads: `read_mountinfo()`; `remove_under(root,
path)`, the one way anything under the state directory is removed, which refuses a path (or a
symlink's target) that resolves outside `root`, and a tree that still holds a mount point; and
`make_private_dirs(path)` / `make_private_dir(path)`, missing directories created 0700.
Must not: import the provider or the sandbox, log, or act on anything outside the directory it
was given.

Upstream: k8s.io/mount-utils mount.go (PathWithinBase).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

PRIVATE_DIR_MODE = 0o700


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")


_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


SAFE_NAME_MAX = 253


class UnsafePathError(ValueError):
    """A path under the state directory was refused: it would reach outside it."""


def is_safe_name(name: str) -> bool:
    """A pod UID, volume or container name that is one plain path component (letters, digits, -)."""
    return len(name) <= SAFE_NAME_MAX and _SAFE_NAME.fullmatch(name) is not None


def within(path: str, base: str) -> bool:
    """PathWithinBase, on absolute normalised paths: `path` is `base` or below it."""
    rel = os.path.relpath(path, base)
    return rel != ".." and not rel.startswith("../")


def strictly_within(path: str, base: str) -> bool:
    return within(path, base) and os.path.relpath(path, base) != "."


def _mount_points(mountinfo: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of each line of /proc/self/mountinfo's text, the point's
    octal escapes (space, tab, newline, backslash) decoded."""
    points = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if sep and len(fields) >= 5 and tail:
            points.append((_OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4]), tail[0]))
    return points


def mount_of(path: str, mountinfo: str) -> tuple[str, str]:
    """(mount point, filesystem type) of the mount holding the absolute `path`, from the text
    of /proc/self/mountinfo; ("", "") when none matches. The last of stacked mounts wins."""
    best = ("", "")
    for point, fstype in _mount_points(mountinfo):
        if within(path, point) and len(point) >= len(best[0]):
            best = (point, fstype)
    return best


def mounts_under(path: str, mountinfo: str) -> list[str]:
    """The mount points strictly below the absolute `path`, deepest first (each once)."""
    below = {point for point, _ in _mount_points(mountinfo) if strictly_within(point, path)}
    return sorted(below, key=lambda p: (-p.count("/"), p))


def _location(path: Path) -> str:
    """Where `path` itself is (its directory resolved, its last component not followed)."""
    text = os.path.abspath(str(path))
    parent, name = os.path.split(text)
    return os.path.join(os.path.realpath(parent), name) if name else text


def remove_under(root: Path, path: Path) -> bool:
    """Remove `path` (a directory tree, a file or a symlink) strictly inside `root`.

    Returns False when there was nothing to remove. Raises UnsafePathError, removing
    nothing, when `path` is `root` itself or lies outside it once its directory is resolved,
    or is a symlink whose target resolves outside `root`. A symlink is removed, never
    followed; directory trees go through shutil.rmtree, which does not follow symlinks.
    """
    real_root = os.path.realpath(root)
    where = _location(path)
    if not strictly_within(where, real_root):
        raise UnsafePathError(f"refusing to remove {str(path)!r}: it is not inside {real_root!r}")
    if not os.path.lexists(where):
        return False
    if os.path.islink(where):
        target = os.path.realpath(where)
        if not within(target, real_root):
            raise UnsafePathError(
                f"refusing to remove {str(path)!r}: a symlink to {target!r}, outside {real_root!r}"
            )
        os.unlink(where)
    elif os.path.isdir(where):
        _refuse_mounts(path, where)
        shutil.rmtree(where)
    else:
        os.unlink(where)
    return True


def read_mountinfo() -> str:
    """The text of /proc/self/mountinfo (undecodable bytes kept as surrogates), for `mount_of`
    and `mounts_under`."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def _refuse_mounts(path: Path, where: str) -> None:
    """rmtree crosses mount points: a tree that still holds one (a sub-path bind of a pod's
    volume, or of a host directory) is refused, never emptied through the mount."""
    held = mounts_under(os.path.realpath(where), read_mountinfo())
    if held:
        raise UnsafePathError(f"refusing to remove {str(path)!r}: {held[0]!r} is mounted under it")


def make_private_dirs(path: Path) -> None:
    """Create the missing directories of `path`, each 0700; existing ones are left as they are."""
    missing: list[Path] = []
    current = path
    while not os.path.lexists(current) and current != current.parent:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, PRIVATE_DIR_MODE)


def make_private_dir(path: Path) -> None:
    """`path` and its missing parents exist; `path` itself is 0700 if this process owns it."""
    make_private_dirs(path)
    st = os.stat(path)
    if st.st_uid == os.geteuid() and st.st_mode & 0o777 != PRIVATE_DIR_MODE:
        os.chmod(path, PRIVATE_DIR_MODE)
