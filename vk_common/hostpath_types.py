"""hostPath volume `type` checks on the engine's host, as the kubelet's hostPath plugin does them.

What lives here: `host_path_volumes(pod)` (pure: each hostPath's name, path and type) and
`check_host_path(path, path_type)`, the blocking check (run in a thread,
on the provider's host, which is the engine's for a local engine): DirectoryOrCreate makes a
missing directory (0755, parents too), FileOrCreate a missing empty file (0644, its parent
must exist), then the path must be of the type asked (Directory, File, Socket, CharDevice,
BlockDevice); an unset type checks nothing. A failure raises `HostPathTypeError` with the
kubelet's text, which the pod worker reports as the FailedMount Event's error.
Must not: log, decide whether hostPath is allowed (the provider's
kuberuntime/admission.check_pod_allowed does), or touch any path but the one given.

Upstream: pkg/volume/hostpath/host_path.go (hostPathMounter.SetUp, checkTypeInternal,
typeMatchedOrError, makeDir, makeFile), pkg/volume/util/hostutil/hostutil.go (getFileType).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from typing import Any

DIR_MODE = 0o755  # makeDir: os.MkdirAll(pathname, 0755)
FILE_MODE = 0o644  # makeFile: os.OpenFile(pathname, os.O_CREATE, 0644)

# What each checked type must be: (getFileType's name of it, the word typeMatchedOrError uses).
_EXPECTED = {
    "Directory": ("Directory", "directory"),
    "DirectoryOrCreate": ("Directory", "directory"),
    "File": ("File", "file"),
    "FileOrCreate": ("File", "file"),
    "Socket": ("Socket", "socket file"),
    "CharDevice": ("CharDevice", "character device"),
    "BlockDevice": ("BlockDevice", "block device"),
}


class HostPathTypeError(Exception):
    """The hostPath cannot be set up; `str()` is the kubelet's error text."""


def _go_error(op: str, exc: OSError, path: str) -> str:
    """An OSError as Go's *PathError prints it: `mkdir /x: permission denied`."""
    reason = (exc.strerror or str(exc)).lower()
    return f"{op} {exc.filename or path}: {reason}"


def file_type(path: str) -> str:
    """getFileType: Directory, File, Socket, CharDevice or BlockDevice (symlinks followed)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError as exc:
        raise HostPathTypeError(f"path {json.dumps(path)} does not exist") from exc
    except OSError as exc:
        raise HostPathTypeError(_go_error("stat", exc, path)) from exc
    if stat.S_ISDIR(mode):
        return "Directory"
    if stat.S_ISREG(mode):
        return "File"
    if stat.S_ISSOCK(mode):
        return "Socket"
    if stat.S_ISCHR(mode):
        return "CharDevice"
    if stat.S_ISBLK(mode):
        return "BlockDevice"
    raise HostPathTypeError("only recognise file, directory, socket, block device and character device")


def _create(path: str, path_type: str) -> None:
    """makeDir / makeFile for a path that does not exist."""
    directory = path_type == "DirectoryOrCreate"
    try:
        if directory:
            os.makedirs(path, DIR_MODE, exist_ok=True)
        else:
            os.close(os.open(path, os.O_CREAT | os.O_RDONLY, FILE_MODE))
    except OSError as exc:
        raise HostPathTypeError(_go_error("mkdir" if directory else "open", exc, path)) from exc


def check_host_path(path: str, path_type: str) -> None:
    """hostPathMounter.SetUp: raises HostPathTypeError unless `path` is (or was made) `path_type`."""
    if ".." in path.replace("\\", "/").split("/"):
        raise HostPathTypeError(f"invalid HostPath `{path}`: must not contain '..'")
    if not path_type:
        return
    expected = _EXPECTED.get(path_type)
    if expected is None:
        raise HostPathTypeError(f"{path_type} is an invalid volume type")
    if path_type.endswith("OrCreate") and not os.path.exists(path):
        _create(path, path_type)
        return  # as checkTypeInternal: what it just made is not checked again
    want, word = expected
    try:
        actual = file_type(path)
    except HostPathTypeError as exc:
        raise HostPathTypeError(
            f"hostPath type check failed, {path} is not a {word}, unable to determine its type: {exc}"
        ) from exc
    if actual != want:
        raise HostPathTypeError(f"hostPath type check failed: {path} is not a {word}, it's a {actual}")


def host_path_volumes(pod: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(volume name, path, type) of the pod's hostPath volumes, in spec order."""
    out = []
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        if "hostPath" in vol:
            source = vol.get("hostPath") or {}
            out.append((str(vol.get("name", "")), str(source.get("path", "")), str(source.get("type") or "")))
    return out
