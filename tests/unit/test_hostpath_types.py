"""hostPath `type` checks (vk_common.hostpath_types), on real files of a temporary directory."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from vk_common.hostpath_types import HostPathTypeError, check_host_path, host_path_volumes


def test_directory_or_create_makes_the_missing_directory_and_its_parents_0755(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    old = os.umask(0o022)
    try:
        check_host_path(str(target), "DirectoryOrCreate")
    finally:
        os.umask(old)
    assert target.is_dir()
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    check_host_path(str(target), "DirectoryOrCreate")  # existing: checked, fine


def test_file_or_create_makes_an_empty_0644_file_but_not_its_parent(tmp_path: Path) -> None:
    target = tmp_path / "f"
    old = os.umask(0o022)
    try:
        check_host_path(str(target), "FileOrCreate")
    finally:
        os.umask(old)
    assert target.read_bytes() == b""
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    missing = tmp_path / "nope" / "f"
    with pytest.raises(HostPathTypeError) as err:
        check_host_path(str(missing), "FileOrCreate")
    assert str(err.value) == f"open {missing}: no such file or directory"


def test_a_path_of_another_type_fails_with_the_kubelets_message(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(HostPathTypeError) as err:
        check_host_path(str(tmp_path / "f"), "Directory")
    assert str(err.value) == f"hostPath type check failed: {tmp_path}/f is not a directory, it's a File"
    with pytest.raises(HostPathTypeError) as err:
        check_host_path(str(tmp_path), "FileOrCreate")
    assert str(err.value) == f"hostPath type check failed: {tmp_path} is not a file, it's a Directory"
    with pytest.raises(HostPathTypeError) as err:
        check_host_path(str(tmp_path), "Socket")
    assert str(err.value) == f"hostPath type check failed: {tmp_path} is not a socket file, it's a Directory"


def test_a_missing_path_cannot_have_its_type_determined(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    for path_type, word in [("Directory", "directory"), ("File", "file"), ("BlockDevice", "block device")]:
        with pytest.raises(HostPathTypeError) as err:
            check_host_path(str(missing), path_type)
        assert str(err.value) == (
            f"hostPath type check failed, {missing} is not a {word}, unable to determine its type: "
            f'path "{missing}" does not exist'
        )
    assert not missing.exists()


def test_sockets_and_devices_are_recognised(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        check_host_path(str(path), "Socket")
    finally:
        server.close()
    check_host_path("/dev/null", "CharDevice")
    with pytest.raises(HostPathTypeError, match="is not a block device, it's a CharDevice"):
        check_host_path("/dev/null", "BlockDevice")


def test_an_unset_type_checks_nothing_and_backsteps_or_unknown_types_fail(tmp_path: Path) -> None:
    check_host_path(str(tmp_path / "missing"), "")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(HostPathTypeError, match=r"^invalid HostPath `/a/../b`: must not contain '..'$"):
        check_host_path("/a/../b", "")
    with pytest.raises(HostPathTypeError, match=r"^Pipe is an invalid volume type$"):
        check_host_path(str(tmp_path), "Pipe")


def test_host_path_volumes_lists_name_path_and_type() -> None:
    pod = {
        "spec": {
            "volumes": [
                {"name": "a", "hostPath": {"path": "/x", "type": "Directory"}},
                {"name": "b", "emptyDir": {}},
                {"name": "c", "hostPath": {"path": "/y"}},
            ]
        }
    }
    assert host_path_volumes(pod) == [("a", "/x", "Directory"), ("c", "/y", "")]
