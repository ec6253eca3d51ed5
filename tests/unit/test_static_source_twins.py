"""scan(): which of two files defining the same pod keeps it (tmp files only; no Docker, no apiserver)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.support import manifests
from tests.support.manifests import sh
from vk_provider.static.source import scan

NODE = "node-a"
NOW = datetime(2026, 11, 30, tzinfo=UTC)


def write(path: Path, name: str, command: str) -> None:
    path.write_text(json.dumps(manifests.pod(name, [sh("main", command)], namespace=None)))


def commands(pods: dict[str, dict[str, object]]) -> list[object]:
    return [pod["spec"]["containers"][0]["command"][2] for pod in pods.values()]  # type: ignore[index]


def test_with_no_pod_held_the_first_file_in_name_order_keeps_the_pod(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "web", "first")
    write(tmp_path / "b.yaml", "web", "second")
    result = scan(str(tmp_path), NODE, NOW, {})
    assert commands(result.pods) == ["first"]
    assert [(Path(b.path).name, b.reason) for b in result.bad] == [
        ("b.yaml", f"pod default/web-node-a is already defined by {tmp_path / 'a.yaml'}")
    ]


def test_a_twin_added_before_a_held_pod_in_name_order_does_not_take_it_over(tmp_path: Path) -> None:
    write(tmp_path / "web.yaml", "web", "running")
    held = scan(str(tmp_path), NODE, NOW, {}).pods
    write(tmp_path / "a-twin.yaml", "web", "newcomer")
    write(tmp_path / "z-twin.yaml", "web", "latecomer")

    result = scan(str(tmp_path), NODE, NOW, held)

    assert result.pods == held
    assert [(Path(b.path).name, b.reason) for b in result.bad] == [
        ("a-twin.yaml", f"pod default/web-node-a is already defined by {tmp_path / 'web.yaml'}"),
        ("z-twin.yaml", f"pod default/web-node-a is already defined by {tmp_path / 'web.yaml'}"),
    ]
    # Once the file that held the pod is gone, the first twin in name order takes over.
    (tmp_path / "web.yaml").unlink()
    after = scan(str(tmp_path), NODE, NOW, result.pods)
    assert commands(after.pods) == ["newcomer"]
    assert [Path(b.path).name for b in after.bad] == ["z-twin.yaml"]


def test_bad_files_are_listed_in_name_order(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", "web", "x")
    write(tmp_path / "c.yaml", "web", "y")
    (tmp_path / "a.yaml").write_text("kind: [")
    (tmp_path / "d.yaml").write_text("kind: [")
    result = scan(str(tmp_path), NODE, NOW, {})
    assert [Path(b.path).name for b in result.bad] == ["a.yaml", "c.yaml", "d.yaml"]
