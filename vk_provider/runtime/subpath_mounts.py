"""Sub-path bind mounts: what a container is given for a volumeMount's `subPath`.

A sub-path's directories live in a volume a pod may write (an emptyDir, a hostPath), so the
pod can swap one of them for a symlink between a check and its use: checking a path and
then handing the engine the path string lets the engine follow a symlink planted after the
check (CVE-2017-1002101, CVE-2021-25741). The kubelet's answer, reproduced here: resolve
the sub-path once, check it is inside the volume, then walk it again from the volume's root
with `openat(O_NOFOLLOW)` one component at a time (a component swapped for a symlink fails
the walk), make missing directories with `mkdirat` on the way, and bind-mount the opened
descriptor (`/proc/self/fd/N`) onto a directory of the pod's own under the state directory,
`<pod dir>/volume-subpaths/<volume>/<container>/<mount index>`. The engine gets that path,
which no pod can reach, and the mount holds the inode that was checked.

What lives here (blocking: the runtime runs it in its pool): `open_subpath` (the safe
walk, the missing directories made with the volume root's mode as the kubelet's
SafeMakeDir), `bind_subpath` (the walk, then the mount; a previous mount on the same target
is detached first), `clean_subpaths(pod_dir)` (every mount under the pod's
`volume-subpaths/` detached: the kubelet's CleanSubPaths, before the pod's directory is
removed; `detach_mounts_under` for any tree) and `probe_bind_mounts(state_dir)` (whether
this process may mount at all: CAP_SYS_ADMIN in a mount namespace the engine shares,
docs/security.md).
Must not: follow a symlink inside a volume once the path is checked, mount anywhere but
under a pod's `volume-subpaths/`, or remove a file (`guarded_paths.remove_under` does, and
refuses a tree that still holds a mount).

Upstream: pkg/volume/util/subpath/subpath_linux.go (doBindSubPath, safeOpenSubPath,
doSafeOpen, doSafeMakeDir, prepareSubpathTarget, doCleanSubPaths).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from pathlib import Path

from vk_common import guarded_paths as paths
from vk_provider.runtime import subpaths

SUBPATHS_DIR = "volume-subpaths"
PROBE_DIR = ".subpath-probe"
MS_BIND = 4096  # <sys/mount.h>
MNT_DETACH = 2
MAX_STACKED = 16  # mounts detached from one target before giving up

# A component is opened without following it: a symlink yields a descriptor of the link itself,
# which the next openat refuses (ENOTDIR) and the last step refuses by its type.
_WALK_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _bind(source: str, target: str) -> None:
    if _libc.mount(os.fsencode(source), os.fsencode(target), None, MS_BIND, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), target)


def _detach(target: str) -> bool:
    """Detach the top mount on `target`; False when nothing is mounted there."""
    if _libc.umount2(os.fsencode(target), MNT_DETACH) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOENT):  # not a mount point, or gone
        return False
    raise OSError(err, os.strerror(err), target)


def _detach_all(target: str) -> None:
    for _ in range(MAX_STACKED):
        if not _detach(target):
            return
    raise OSError(errno.EBUSY, f"more than {MAX_STACKED} mounts stacked", target)


def _failed(volume: str, container: str, detail: str) -> subpaths.SubPathError:
    return subpaths.SubPathError(
        f'failed to prepare subPath for volumeMount "{volume}" of container "{container}"', detail
    )


def _step(parent: int, name: str, mode: int) -> int:
    """The descriptor of `name` in the directory `parent`, made (mode `mode`) when missing."""
    try:
        return os.open(name, _WALK_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        pass
    created = True
    try:
        os.mkdir(name, mode, dir_fd=parent)
    except FileExistsError:
        created = False  # made meanwhile (by a container of the pod): walked as it is
    child = os.open(name, _DIR_FLAGS, dir_fd=parent)  # ELOOP if a symlink took its place
    if created:
        os.fchmod(child, mode)  # not left to the umask
    return child


def open_subpath(base: str, sub: str, volume: str, container: str) -> int:
    """An O_PATH descriptor of `sub` inside the volume directory `base`, walked without
    following any symlink after the check; missing directories are made on the way with the
    mode of the volume's root (makeMounts: SafeMakeDir(subPath, volumePath, GetMode(volumePath))).

    `sub` has passed `subpaths.check_subpath`. Symlinks inside the volume that stay inside it
    are allowed (they are resolved first, as the kubelet's EvalSymlinks does); SubPathError
    when the resolved path leaves the volume, or when anything on it changed before the walk
    (a component is now a symlink or not a directory). The caller closes the descriptor.
    """
    real_base = os.path.realpath(base)
    resolved = subpaths.resolve_subpath(real_base, sub, volume, container)
    rel = os.path.relpath(resolved, real_base)
    try:
        fd = os.open(real_base, _DIR_FLAGS)
    except OSError as exc:
        raise _failed(volume, container, f"cannot open volume path {real_base!r}: {exc.strerror}") from exc
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        for name in [] if rel == "." else rel.split("/"):
            child = _step(fd, name, mode)
            os.close(fd)
            fd = child
        if stat.S_ISLNK(os.fstat(fd).st_mode):
            raise _failed(volume, container, f"{resolved!r} became a symlink while it was opened")
        return fd
    except OSError as exc:
        os.close(fd)
        raise _failed(
            volume, container, f"{resolved!r} changed while it was opened (not followed): {exc.strerror}"
        ) from exc
    except BaseException:
        os.close(fd)
        raise


def opened_path(fd: int) -> str:
    """Where an opened descriptor is now (the kernel's name for it)."""
    return os.readlink(f"/proc/self/fd/{fd}")


def _prepare_target(target: Path, directory: bool) -> None:
    """The mount point: an empty directory (or file) of the pod's own, nothing mounted on it."""
    paths.make_private_dirs(target.parent)
    where = str(target)
    _detach_all(where)
    if os.path.lexists(where) and (os.path.isdir(where) and not os.path.islink(where)) != directory:
        if directory:
            os.unlink(where)
        else:
            os.rmdir(where)
    if directory:
        if not os.path.isdir(where):
            os.mkdir(where, paths.PRIVATE_DIR_MODE)
    elif not os.path.lexists(where):
        os.close(os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))


def bind_subpath(base: str, sub: str, volume: str, container: str, target: Path) -> str:
    """Bind the checked sub-path onto `target` and return `target`, the path the engine binds.

    `target` is `<pod dir>/volume-subpaths/<volume>/<container>/<index>`; a mount already
    there (the container's previous start) is detached first, so every start is checked
    again. SubPathError as `open_subpath`, and when the mount itself fails.
    """
    fd = open_subpath(base, sub, volume, container)
    try:
        _prepare_target(target, stat.S_ISDIR(os.fstat(fd).st_mode))
        _bind(f"/proc/self/fd/{fd}", str(target))
    except OSError as exc:
        raise _failed(volume, container, f"cannot bind-mount it onto {target}: {exc}") from exc
    finally:
        os.close(fd)
    return str(target)


def clean_subpaths(pod_dir: Path) -> int:
    """Detach every mount under `<pod_dir>/volume-subpaths`; how many."""
    return detach_mounts_under(pod_dir / SUBPATHS_DIR)


def detach_mounts_under(path: Path) -> int:
    """Detach every mount strictly below `path`, deepest first; how many."""
    points = paths.mounts_under(os.path.realpath(path), paths.read_mountinfo())
    for point in points:
        _detach_all(point)
    return len(points)


def probe_bind_mounts(state_dir: Path) -> str | None:
    """None when this process can bind-mount an opened directory under `state_dir`; else why not.

    Whether the engine sees such a mount is not probed: it does when the provider runs on the
    engine's host, or in a container whose state directory is mounted with Bidirectional
    propagation (the chart's `engine.subPathMounts`, docs/security.md).
    """
    probe = state_dir / PROBE_DIR
    source, target = probe / "source", probe / "target"
    if paths.mounts_under(os.path.realpath(probe), paths.read_mountinfo()):
        _detach_all(str(target))  # a probe a killed provider left mounted
    paths.make_private_dirs(source)
    paths.make_private_dirs(target)
    (source / "mark").touch()
    try:
        fd = os.open(source, _DIR_FLAGS)
        try:
            _bind(f"/proc/self/fd/{fd}", str(target))
        finally:
            os.close(fd)
    except OSError as exc:
        return f"cannot bind-mount under {state_dir} ({exc.strerror}; the provider needs CAP_SYS_ADMIN)"
    try:
        if not (target / "mark").exists():
            return f"a bind mount under {state_dir} did not show its source"
    finally:
        _detach_all(str(target))
        paths.remove_under(state_dir, probe)
    return None
