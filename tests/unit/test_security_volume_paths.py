"""Security audit (issue 13) items 1 and 3: subPath escapes and the volume files on the host.

Item 1: a subPath (or an expanded subPathExpr) may not be absolute or hold `..`, on every
volume type, and once its symlinks are resolved it must stay inside the volume's directory
(`runtime/subpaths`, used by `kuberuntime/mounts.py`; the walk and bind that keep it there after
the check are tests/unit/test_runtime_subpath_mounts.py). Item 3: the volume files are
reachable by no other host user (0700 directories above the volume) while inside the
volume the pod's modes, and the kubelet's fsGroup / fsUser ownership, apply.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.support import docker_kwargs
from tests.support.launches import launch
from vk_common import guarded_paths as paths
from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.pods.volume_writer import write_atomically
from vk_provider.pods.volumes import Fetched, TokenSource, VolumeFile, fs_user, volume_files
from vk_provider.runtime import subpaths
from vk_provider.runtime.docker import spec
from vk_provider.runtime.types import ContainerConfigError

ESCAPE = "../../../../../../etc"


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def pod_with(volume: dict[str, Any], mount: dict[str, Any], **spec_extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {
            "containers": [{"name": "main", "image": "b", "volumeMounts": [{"mountPath": "/m", **mount}]}],
            "volumes": [volume],
            **spec_extra,
        },
    }


def launch_of(pod: dict[str, Any], env: tuple[tuple[str, str], ...] = ()) -> ContainerLaunch:
    return launch(pod, env=env)


def joined(m: spec.SubPathMount) -> str:
    return f"{m.source}/{m.sub}"


def checked(m: spec.SubPathMount) -> str:
    return subpaths.resolve_subpath(m.source, m.sub, m.volume, m.container)


def binds(pod: dict[str, Any], env: tuple[tuple[str, str], ...] = (), **kw: Any) -> list[str]:
    kw.setdefault("resolve_subpath", joined)
    kwargs = docker_kwargs.container_create_kwargs(
        launch_of(pod, env), node_name="n", termination_file=None, volumes_root="/st/u1/volumes", **kw
    )
    return list(kwargs.get("volumes") or [])


# ---------------------------------------------------------------- the pure checks


@pytest.mark.parametrize("sub", ["..", ESCAPE, "a/../../b", "a/..", "../x", "a\\..\\..\\b"])
def test_a_subpath_with_a_backstep_is_refused(sub: str) -> None:
    with pytest.raises(ContainerConfigError) as info:
        subpaths.check_subpath(sub)
    assert info.value.message == f"unable to provision SubPath `{sub}`: must not contain '..'"
    assert info.value.reason == "CreateContainerConfigError"


def test_an_absolute_subpath_is_refused() -> None:
    with pytest.raises(ContainerConfigError) as info:
        subpaths.check_subpath("/etc")
    assert info.value.message == "error SubPath `/etc` must not be an absolute path"


@pytest.mark.parametrize("sub", ["a", "a/b", "..data/key", "a..b", "..."])
def test_plain_subpaths_pass(sub: str) -> None:
    subpaths.check_subpath(sub)


def test_subpath_expr_is_expanded_from_the_environment_then_checked() -> None:
    env = (("POD", "web-0"), ("EVIL", "../../etc"), ("EMPTY", ""))
    assert subpaths.subpath_of({"subPathExpr": "logs/$(POD)"}, env) == "logs/web-0"
    assert subpaths.subpath_of({"subPathExpr": "$$(POD)"}, env) == "$(POD)"
    with pytest.raises(ContainerConfigError, match=r"unable to provision SubPath `\.\./\.\./etc`"):
        subpaths.subpath_of({"subPathExpr": "$(EVIL)"}, env)
    with pytest.raises(ContainerConfigError) as info:
        subpaths.subpath_of({"subPathExpr": "$(NOPE)/$(EMPTY)"}, env)
    assert info.value.message == "missing value for EMPTY, NOPE"


VOLUME_TYPES = {
    "configMap": {"name": "v", "configMap": {"name": "c"}},
    "secret": {"name": "v", "secret": {"secretName": "s"}},
    "projected": {"name": "v", "projected": {"sources": [{"configMap": {"name": "c"}}]}},
    "downwardAPI": {"name": "v", "downwardAPI": {"items": []}},
    "hostPath": {"name": "v", "hostPath": {"path": "/srv/data"}},
    "emptyDir": {"name": "v", "emptyDir": {}},
}


@pytest.mark.parametrize("kind", sorted(VOLUME_TYPES))
@pytest.mark.parametrize("field", ["subPath", "subPathExpr"])
def test_every_volume_type_refuses_an_escaping_subpath(kind: str, field: str) -> None:
    value = ESCAPE if field == "subPath" else "$(SUB)"
    pod = pod_with(VOLUME_TYPES[kind], {"name": "v", field: value})
    with pytest.raises(ContainerConfigError, match=r"must not contain '\.\.'"):
        binds(pod, env=(("SUB", ESCAPE),))
    pod = pod_with(VOLUME_TYPES[kind], {"name": "v", field: "/etc" if field == "subPath" else "/$(SUB)"})
    with pytest.raises(ContainerConfigError, match="must not be an absolute path"):
        binds(pod, env=(("SUB", "etc"),))


def test_subpath_expr_binds_the_expanded_path() -> None:
    pod = pod_with(VOLUME_TYPES["configMap"], {"name": "v", "subPathExpr": "$(KEY)"})
    assert binds(pod, env=(("KEY", "app.conf"),)) == ["/st/u1/volumes/v/app.conf:/m:ro"]


# ---------------------------------------------------------------- symlinks on the host


def test_a_symlink_to_outside_the_volume_is_refused(tmp_path: Path) -> None:
    volume = tmp_path / "vol"
    (volume / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (volume / "out").symlink_to(outside)
    (volume / "etc").symlink_to("/etc")
    (volume / "sub" / "up").symlink_to("../..")  # relative, two levels up: tmp_path
    (volume / "dangling").symlink_to(tmp_path / "missing" / "x")
    for sub in ("out", "etc", "sub/up", "sub/up/outside", "dangling", "out/file"):
        with pytest.raises(subpaths.SubPathError) as info:
            subpaths.resolve_subpath(str(volume), sub, "cfg", "main")
        assert info.value.message == 'failed to prepare subPath for volumeMount "cfg" of container "main"'
        assert info.value.reason == "CreateContainerConfigError"
        assert "not within volume path" in info.value.detail


def test_a_symlink_inside_the_volume_is_followed(tmp_path: Path) -> None:
    volume = tmp_path / "vol"
    (volume / "data" / "d").mkdir(parents=True)
    (volume / "data" / "d" / "f").write_text("x")
    (volume / "link").symlink_to("data/d")
    (volume / "self").symlink_to(".")
    real = os.path.realpath(volume)
    assert subpaths.resolve_subpath(str(volume), "link/f", "v", "c") == f"{real}/data/d/f"
    assert subpaths.resolve_subpath(str(volume), "self", "v", "c") == real
    assert subpaths.resolve_subpath(str(volume), "new/dir", "v", "c") == f"{real}/new/dir"


def test_the_volume_directory_may_itself_be_behind_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real" / "vol").mkdir(parents=True)
    (tmp_path / "real" / "vol" / "k").write_text("x")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    resolved = subpaths.resolve_subpath(str(tmp_path / "alias" / "vol"), "k", "v", "c")
    assert resolved == os.path.realpath(tmp_path / "real" / "vol" / "k")


def test_binds_of_an_atomically_written_volume_resolve_to_the_payload(tmp_path: Path) -> None:
    root = tmp_path / "volumes"
    write_atomically(root / "v", [VolumeFile("app.conf", b"x", 0o644)])
    pod = pod_with(VOLUME_TYPES["configMap"], {"name": "v", "subPath": "app.conf"})
    kwargs = docker_kwargs.container_create_kwargs(
        launch_of(pod),
        node_name="n",
        termination_file=None,
        volumes_root=str(root),
        resolve_subpath=checked,
    )
    source = kwargs["volumes"][0].split(":")[0]
    assert source == os.path.realpath(root / "v" / "app.conf")
    assert "/..20" in source and Path(source).read_bytes() == b"x"


def test_a_hostpath_subpath_through_a_symlink_to_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "root").symlink_to("/")
    volume = {"name": "v", "hostPath": {"path": str(tmp_path / "data")}}
    pod = pod_with(volume, {"name": "v", "subPath": "root/etc"})
    with pytest.raises(subpaths.SubPathError):
        binds(pod, resolve_subpath=checked)


# ---------------------------------------------------------------- the files on the host (item 3)


def test_the_directories_above_a_volume_are_private(tmp_path: Path) -> None:
    target = tmp_path / "state" / "node" / "uid" / "volumes" / "creds"
    write_atomically(target, [VolumeFile("password", b"hunter2", 0o644)])
    for directory in (tmp_path / "state", tmp_path / "state" / "node", target.parent.parent, target.parent):
        assert mode_of(directory) == 0o700, directory
    assert mode_of(target) == 0o755  # the bind's root: a non-root container must traverse it
    assert mode_of(target / "password") == 0o644  # what the pod asked for


def test_make_private_dir_tightens_an_existing_node_directory(tmp_path: Path) -> None:
    node = tmp_path / "node"
    node.mkdir(mode=0o755)
    os.chmod(node, 0o755)
    paths.make_private_dir(node)
    assert mode_of(node) == 0o700


def test_fs_user_is_the_one_run_as_user_of_every_container() -> None:
    def pod(pod_user: int | None, *users: int | None) -> dict[str, Any]:
        containers = [
            {"name": f"c{i}", **({"securityContext": {"runAsUser": u}} if u is not None else {})}
            for i, u in enumerate(users)
        ]
        sc = {"runAsUser": pod_user} if pod_user is not None else {}
        return {"spec": {"securityContext": sc, "containers": containers}}

    assert fs_user(pod(1234, None, None)) == 1234
    assert fs_user(pod(None, 1234, 1234)) == 1234
    assert fs_user(pod(1000, 1234, None)) is None  # two different users
    assert fs_user(pod(None, 1234, None)) is None  # one container has none
    assert fs_user(pod(None, None)) is None


TOKEN = TokenSource(service_account="default", audience="", expiration_seconds=3600)
TOKEN_VOLUME = {
    "name": "kube-api-access",
    "projected": {
        "defaultMode": 0o644,
        "sources": [{"serviceAccountToken": {"path": "token"}}, {"secret": {"name": "s"}}],
    },
}


def _files(pod: dict[str, Any], ownership: bool) -> dict[str, VolumeFile]:
    fetched = Fetched(
        objects={("secret", "s"): {"data": {"k": "eA=="}}}, tokens={TOKEN: "t"}, token_errors={}
    )
    return {f.path: f for f in volume_files(pod, TOKEN_VOLUME, fetched, {}, ownership=ownership)}


def test_a_token_is_0600_and_owned_by_the_pods_user_when_ownership_applies() -> None:
    pod = {"spec": {"securityContext": {"runAsUser": 1234}, "containers": [{"name": "c"}]}}
    files = _files(pod, ownership=True)
    assert (files["token"].mode, files["token"].uid, files["token"].gid) == (0o600, 1234, None)
    assert (files["k"].mode, files["k"].uid) == (0o644, None)  # only tokens get the fsUser
    files = _files(pod, ownership=False)
    assert (files["token"].mode, files["token"].uid) == (0o644, None)


def test_fs_group_owns_every_file_with_group_read() -> None:
    pod = {"spec": {"securityContext": {"fsGroup": 2000}, "containers": [{"name": "c"}]}}
    volume = {"name": "s", "secret": {"secretName": "s", "defaultMode": 0o400}}
    fetched = Fetched(objects={("secret", "s"): {"data": {"k": "eA=="}}}, tokens={}, token_errors={})
    (f,) = volume_files(pod, volume, fetched, {}, ownership=True)
    assert (f.mode, f.gid, f.uid) == (0o440, 2000, None)
    files = _files(pod, ownership=True)
    assert (files["token"].mode, files["token"].gid) == (0o640, 2000)  # 0600, then the group's read


@pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")
def test_the_writer_applies_owners_and_the_groups_directories(tmp_path: Path) -> None:
    target = tmp_path / "volumes" / "v"
    files = [VolumeFile("token", b"t", 0o600, uid=1234), VolumeFile("d/k", b"x", 0o440, gid=2000)]
    assert write_atomically(target, files, group=2000)
    payload = target / os.readlink(target / "..data")
    token = os.stat(payload / "token")
    assert (stat.S_IMODE(token.st_mode), token.st_uid) == (0o600, 1234)
    key = os.stat(payload / "d" / "k")
    assert (stat.S_IMODE(key.st_mode), key.st_gid) == (0o440, 2000)
    for directory in (target, payload, payload / "d"):
        st = os.stat(directory)
        assert (stat.S_IMODE(st.st_mode), st.st_gid) == (0o2755, 2000), directory
    assert not write_atomically(target, files, group=2000), "unchanged, owners included"


def test_an_emptydir_subpath_binds_its_volumes_host_directory_or_is_refused() -> None:
    pod = pod_with(VOLUME_TYPES["emptyDir"], {"name": "v", "subPathExpr": "$(SUB)/x"})
    assert binds(pod, env=(("SUB", "a"),), emptydir_dirs={"v": "/dv/_data"}) == ["/dv/_data/a/x:/m:rw"]
    with pytest.raises(ContainerConfigError, match="needs its Docker volume's directory on this host"):
        binds(pod, env=(("SUB", "a"),))


def test_the_shell_is_told_which_subpaths_a_pod_can_swap() -> None:
    """emptyDir and hostPath are written by pods: their sub-paths must be bound, not resolved."""
    seen: list[spec.SubPathMount] = []

    def record(m: spec.SubPathMount) -> str:
        seen.append(m)
        return "/bound"

    for kind in ("hostPath", "emptyDir", "configMap"):
        pod = pod_with(VOLUME_TYPES[kind], {"name": "v", "subPath": "a/b"})
        assert binds(pod, resolve_subpath=record, emptydir_dirs={"v": "/dv/_data"})[0].startswith(
            "/bound:/m:"
        )
    assert [(m.source, m.sub, m.index, m.writable) for m in seen] == [
        ("/srv/data", "a/b", 0, True),
        ("/dv/_data", "a/b", 0, True),
        ("/st/u1/volumes/v", "a/b", 0, False),
    ]


@pytest.mark.parametrize("kind", ["hostPath", "emptyDir"])
def test_without_the_engines_host_a_subpath_of_a_writable_volume_is_refused(kind: str) -> None:
    """A remote engine: nothing on its host would check the path, so it is not joined unchecked."""
    pod = pod_with(VOLUME_TYPES[kind], {"name": "v", "subPath": "a"})
    with pytest.raises(ContainerConfigError, match=r"needs .*(local engine|directory on this host)"):
        binds(pod, resolve_subpath=None, emptydir_dirs={"v": "/dv/_data"})
