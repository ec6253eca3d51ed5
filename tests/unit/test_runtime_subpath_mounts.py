"""Sub-path bind mounts (runtime.subpath_mounts, security issue 30 item 1): the walk that no
swapped symlink can redirect, the bind mount of what it opened, and their clean-up.

The mount tests need CAP_SYS_ADMIN (root, as CI runs); elsewhere they are skipped. The race
itself, with a pod swapping the directory while its containers start, is
tests/integration/test_security_subpath_race.py.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from vk_common import guarded_paths as paths
from vk_provider.config import DockerConfig
from vk_provider.runtime import subpath_mounts as sm
from vk_provider.runtime import subpaths
from vk_provider.runtime.docker.runtime import DockerRuntime
from vk_provider.runtime.docker.spec import SubPathMount
from vk_provider.runtime.types import ContainerConfigError

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need CAP_SYS_ADMIN")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    vol = tmp_path / "vol"
    vol.mkdir()
    vol.chmod(0o777)
    return vol


@pytest.fixture
def pod_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "state" / "pod"
    yield directory
    sm.detach_mounts_under(tmp_path)  # whatever a failed test left mounted


def test_missing_directories_are_made_with_the_volume_roots_mode(volume: Path) -> None:
    (volume / "kept").mkdir(mode=0o700)
    (volume / "link").symlink_to("kept")  # inside the volume: followed, as the kubelet's EvalSymlinks
    fd = sm.open_subpath(str(volume), "link/a/b", "v", "c")
    try:
        assert sm.opened_path(fd) == os.path.realpath(volume / "kept" / "a" / "b")
    finally:
        os.close(fd)
    modes = {p: mode_of(volume / p) for p in ("kept", "kept/a", "kept/a/b")}
    assert modes == {"kept": 0o700, "kept/a": 0o777, "kept/a/b": 0o777}  # what exists is left as it is


def test_a_symlink_out_of_the_volume_is_refused_and_nothing_is_made_outside(
    volume: Path, tmp_path: Path
) -> None:
    (volume / "out").symlink_to(tmp_path)
    with pytest.raises(subpaths.SubPathError) as info:
        sm.open_subpath(str(volume), "out/new", "v", "c")
    assert info.value.message == 'failed to prepare subPath for volumeMount "v" of container "c"'
    assert not (tmp_path / "new").exists()


def test_a_directory_swapped_for_a_symlink_after_the_check_fails_the_walk(
    volume: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window the race uses: the path is checked while `x` is a directory, and `x` is a
    symlink to a host directory when it is opened. The walk refuses; it never reaches the host."""
    (volume / "x" / "target").mkdir(parents=True)
    host = tmp_path / "host"
    (host / "target").mkdir(parents=True)
    check = subpaths.resolve_subpath

    def check_then_swap(base: str, sub: str, name: str, container: str) -> str:
        resolved = check(base, sub, name, container)
        (volume / "x").rename(volume / "d")
        (volume / "x").symlink_to(host)
        return resolved

    monkeypatch.setattr(subpaths, "resolve_subpath", check_then_swap)
    with pytest.raises(subpaths.SubPathError) as info:
        sm.open_subpath(str(volume), "x/target", "v", "c")
    assert "changed while it was opened" in info.value.detail


def test_a_last_component_swapped_for_a_symlink_is_refused(
    volume: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (volume / "target").mkdir()
    check = subpaths.resolve_subpath

    def check_then_swap(base: str, sub: str, name: str, container: str) -> str:
        resolved = check(base, sub, name, container)
        (volume / "target").rmdir()
        (volume / "target").symlink_to(tmp_path)
        return resolved

    monkeypatch.setattr(subpaths, "resolve_subpath", check_then_swap)
    with pytest.raises(subpaths.SubPathError, match="failed to prepare subPath"):
        sm.open_subpath(str(volume), "target", "v", "c")


def test_mounts_under_decodes_mountinfo_and_lists_deepest_first() -> None:
    mountinfo = "\n".join(
        [
            "27 1 254:0 / / rw - ext4 /dev/vda rw",
            r"90 27 254:0 /a /s/pod/volume-subpaths/v/c/0 rw - ext4 /dev/vda rw",
            r"91 27 254:0 /b /s/pod/volume-subpaths/my\040vol/c/1 rw - ext4 /dev/vda rw",
            r"92 90 0:5 / /s/pod/volume-subpaths/v/c/0/inner rw - tmpfs t rw",
            "93 27 0:6 / /s/other rw - tmpfs t rw",
        ]
    )
    assert paths.mounts_under("/s/pod", mountinfo) == [
        "/s/pod/volume-subpaths/v/c/0/inner",
        "/s/pod/volume-subpaths/my vol/c/1",
        "/s/pod/volume-subpaths/v/c/0",
    ]
    assert paths.mounts_under("/s/pod/volume-subpaths/v/c/0", mountinfo) == [
        "/s/pod/volume-subpaths/v/c/0/inner"
    ]


@needs_root
def test_the_bind_holds_what_was_checked_whatever_is_swapped_later(
    volume: Path, pod_dir: Path, tmp_path: Path
) -> None:
    (volume / "x" / "target").mkdir(parents=True)
    target = pod_dir / sm.SUBPATHS_DIR / "v" / "c" / "0"
    assert sm.bind_subpath(str(volume), "x/target", "v", "c", target) == str(target)
    (target / "written").write_text("through the mount")
    assert (volume / "x" / "target" / "written").read_text() == "through the mount"
    host = tmp_path / "host"
    (host / "target").mkdir(parents=True)
    (volume / "x").rename(volume / "d")
    (volume / "x").symlink_to(host)
    assert os.listdir(target) == ["written"], "the mount holds the checked directory, not the new path"
    assert os.listdir(host / "target") == []


@needs_root
def test_a_restart_binds_again_on_the_same_target_without_stacking(volume: Path, pod_dir: Path) -> None:
    (volume / "one").mkdir()
    (volume / "one" / "f").write_text("1")
    (volume / "two").write_text("a file")
    target = pod_dir / sm.SUBPATHS_DIR / "v" / "c" / "0"
    sm.bind_subpath(str(volume), "one", "v", "c", target)
    sm.bind_subpath(str(volume), "one", "v", "c", target)
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        assert paths.mounts_under(str(pod_dir), f.read()) == [str(target)]
    sm.bind_subpath(str(volume), "two", "v", "c", target)  # now a file: the target becomes one
    assert target.is_file() and target.read_text() == "a file"


@needs_root
def test_clean_up_detaches_before_the_pods_files_go_and_never_deletes_through_a_mount(
    volume: Path, pod_dir: Path
) -> None:
    (volume / "keep").mkdir()
    (volume / "keep" / "data").write_text("the volume's")
    sm.bind_subpath(str(volume), "keep", "v", "c", pod_dir / sm.SUBPATHS_DIR / "v" / "c" / "0")
    with pytest.raises(paths.UnsafePathError, match="is mounted under it"):
        paths.remove_under(pod_dir.parent, pod_dir)
    assert sm.clean_subpaths(pod_dir) == 1
    assert paths.remove_under(pod_dir.parent, pod_dir)
    assert (volume / "keep" / "data").read_text() == "the volume's"


@needs_root
def test_the_probe_says_whether_this_process_may_bind_mount(tmp_path: Path) -> None:
    assert sm.probe_bind_mounts(tmp_path / "state") is None
    assert os.listdir(tmp_path / "state") == [], "the probe leaves nothing behind"
    # Without CAP_SYS_ADMIN (dropped from the bounding set with util-linux's setpriv): a reason,
    # which the runtime logs at start and gives in every refusal.
    script = "import sys; from pathlib import Path; from vk_provider.runtime import subpath_mounts as sm; "
    script += "print(sm.probe_bind_mounts(Path(sys.argv[1])))"
    out = subprocess.run(
        ["setpriv", "--bounding-set", "-sys_admin", sys.executable, "-c", script, str(tmp_path / "other")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "cannot bind-mount" in out and "CAP_SYS_ADMIN" in out


def test_without_mounts_a_writable_volumes_subpath_is_refused_and_an_api_volumes_is_checked(
    tmp_path: Path,
) -> None:
    runtime = DockerRuntime(DockerConfig(state_dir=str(tmp_path / "state")), "node")
    runtime._subpath_refusal = "cannot bind-mount here"
    source = runtime._subpath_source("uid-1")
    with pytest.raises(
        ContainerConfigError, match=r'subPath of volume "data" .* refused on this node: cannot'
    ):
        source(SubPathMount(str(tmp_path), "a", "data", "main", 0, writable=True))
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "key").write_text("v")
    assert source(SubPathMount(str(tmp_path / "cfg"), "key", "cfg", "main", 1, writable=False)) == str(
        (tmp_path / "cfg" / "key").resolve()
    )
