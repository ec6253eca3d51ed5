"""Security audit (issue 13) item 2: a static pod's identity never becomes a dangerous path.

A manifest's uid, name, namespace and volume names are refused before any path is built
from them (a bad manifest, reported like every other), and every removal under the state
directory goes through `paths.remove_under`, which refuses what resolves outside it. The
removal tests work in temporary directories only: nothing here ever asks to remove "/".
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from vk_common import guarded_paths as paths
from vk_provider.config import DockerConfig
from vk_provider.runtime.docker.labels import TERMINATION_MESSAGE_FILE
from vk_provider.runtime.docker.pod_dirs import PodDirs
from vk_provider.runtime.docker.runtime import DockerRuntime
from vk_provider.static.manifest import ManifestError, parse_manifest
from vk_provider.static.source import scan

NOW = datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC)
UID_RULE = " must be letters, digits and '-' only (it names the pod's directory)"


def manifest(meta: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", **(meta or {})},
        "spec": {"containers": [{"name": "c", "image": "vk-test/busybox:1"}], **spec},
    }


def refusal(doc: dict[str, Any]) -> str:
    with pytest.raises(ManifestError) as info:
        parse_manifest(json.dumps(doc).encode(), "/m/web.yaml", "node-1", NOW)
    return str(info.value)


@pytest.mark.parametrize("uid", ["/", "..", "../..", "a/b", "../../etc", ".", "-x", "a b", "x" * 254, 5])
def test_an_unsafe_uid_is_refused(uid: Any) -> None:
    assert refusal(manifest({"uid": uid})) == f"invalid Pod: metadata.uid: {uid!r}{UID_RULE}"


def test_a_safe_uid_is_kept() -> None:
    uid = "0d6c2a1e-5b7f-4c1e-9a43-4f6d1b2c3e4f"
    pod = parse_manifest(json.dumps(manifest({"uid": uid})).encode(), "/m/web.yaml", "node-1", NOW)
    assert pod["metadata"]["uid"] == uid


def test_a_name_or_namespace_with_backsteps_is_refused() -> None:
    assert "metadata.name: '../..'" in refusal(manifest({"name": "../.."}))
    assert "is not a DNS-1123 subdomain" in refusal(manifest({"name": "a/../../b"}))
    assert refusal(manifest({"namespace": "../.."})) == (
        "invalid Pod: metadata.namespace: '../..' is not a DNS-1123 label"
    )


def test_a_volume_name_that_is_not_a_plain_name_is_refused() -> None:
    volume = {"name": "../../escape", "downwardAPI": {"items": []}}
    assert refusal(manifest(volumes=[volume])) == (
        "invalid Pod: spec.volumes[0].name: '../../escape' is not a DNS-1123 label"
    )
    twice = [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]
    assert refusal(manifest(volumes=twice)) == "invalid Pod: spec.volumes[1].name: duplicate volume name 'v'"


def test_a_bad_identity_is_a_bad_manifest_and_the_other_pods_stay(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(json.dumps(manifest({"uid": "/"})))
    (tmp_path / "good.yaml").write_text(json.dumps(manifest({"name": "good"})))
    result = scan(str(tmp_path), "node-1", NOW, {})
    assert [p["metadata"]["name"] for p in result.pods.values()] == ["good-node-1"]
    assert [(Path(b.path).name, b.reason) for b in result.bad] == [
        (
            "bad.yaml",
            f"invalid Pod: metadata.uid: '/'{UID_RULE}",
        )
    ]


# ---------------------------------------------------------------- the guarded removal


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "state"
    (root / "pod" / "sub").mkdir(parents=True)
    (root / "pod" / "sub" / "f").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    return {"root": root, "outside": outside}


def test_removal_inside_the_root_works(tree: dict[str, Path]) -> None:
    root = tree["root"]
    assert paths.remove_under(root, root / "pod" / "sub" / "f")
    assert paths.remove_under(root, root / "pod")
    assert not (root / "pod").exists() and root.is_dir()
    assert not paths.remove_under(root, root / "pod"), "nothing left to remove"


@pytest.mark.parametrize(
    "where",
    [
        lambda r: Path("/"),
        lambda r: r,
        lambda r: r / "..",
        lambda r: r / ".." / "outside",
        lambda r: r / "pod" / ".." / ".." / "outside",
        lambda r: r / "/",
        lambda r: Path("relative"),
    ],
    ids=["slash", "root-itself", "parent", "sibling", "backsteps", "joined-slash", "relative"],
)
def test_removal_refuses_what_is_not_inside_the_root(tree: dict[str, Path], where: Any) -> None:
    root = tree["root"]
    with pytest.raises(paths.UnsafePathError, match="refusing to remove"):
        paths.remove_under(root, where(root))
    assert (tree["outside"] / "keep").read_text() == "keep"
    assert (root / "pod" / "sub" / "f").exists()


def test_removal_refuses_a_symlink_to_outside_and_never_follows_one(tree: dict[str, Path]) -> None:
    root, outside = tree["root"], tree["outside"]
    (root / "pod" / "out").symlink_to(outside)
    (root / "pod" / "file").symlink_to(outside / "keep")
    (root / "via").symlink_to(outside)
    for link in (root / "pod" / "out", root / "pod" / "file", root / "via" / "keep"):
        with pytest.raises(paths.UnsafePathError):
            paths.remove_under(root, link)
    assert (outside / "keep").read_text() == "keep"
    # A tree holding a symlink to outside is removed without following it.
    (root / "pod" / "out").unlink()
    (root / "pod" / "file").unlink()
    (root / "pod" / "sub" / "out").symlink_to(outside)
    assert paths.remove_under(root, root / "pod")
    assert (outside / "keep").read_text() == "keep"


def test_removal_of_a_symlink_inside_removes_the_link_only(tree: dict[str, Path]) -> None:
    root = tree["root"]
    (root / "link").symlink_to(root / "pod")
    assert paths.remove_under(root, root / "link")
    assert not os.path.lexists(root / "link") and (root / "pod" / "sub" / "f").exists()


def test_the_root_may_be_reached_through_a_symlink(tree: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "alias").symlink_to(tree["root"])
    assert paths.remove_under(tmp_path / "alias", tmp_path / "alias" / "pod")
    assert not (tree["root"] / "pod").exists()


def runtime_for(state: Path) -> DockerRuntime:
    config = DockerConfig(host="unix:///nonexistent/docker.sock", state_dir=str(state))
    return DockerRuntime(config, "node-1")


@pytest.mark.parametrize("uid", ["/", "..", "../outside", "a/b", ""])
def test_the_runtime_never_removes_or_builds_a_path_from_an_unsafe_uid(
    tree: dict[str, Path], uid: str, caplog: pytest.LogCaptureFixture
) -> None:
    state = tree["root"]
    node = state / "node-1"
    (node / "pod").mkdir(parents=True)
    runtime = runtime_for(state)
    with caplog.at_level(logging.ERROR):
        PodDirs(node).drop_pod_dir(uid)
    assert any("cannot be a directory name" in r.err for r in caplog.records), caplog.records
    assert (tree["outside"] / "keep").exists() and (node / "pod").is_dir()
    with pytest.raises(paths.UnsafePathError):
        runtime.volume_dir(uid, "v")
    with pytest.raises(paths.UnsafePathError):
        runtime.volume_dir("pod", "../../x")


def test_the_runtime_refuses_a_termination_file_label_outside_the_pod(
    tree: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    state = tree["root"]
    (state / "node-1" / "u1").mkdir(parents=True)
    with caplog.at_level(logging.ERROR):
        PodDirs(state / "node-1").drop_container_dir(
            "u1", {TERMINATION_MESSAGE_FILE: str(tree["outside"] / "keep")}
        )
    assert any("refusing to remove" in r.err for r in caplog.records), caplog.records
    assert (tree["outside"] / "keep").exists()
