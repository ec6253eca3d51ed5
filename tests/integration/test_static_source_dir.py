"""StaticPodSource on a real directory: scanning, bad files, notifications and relist.

No Docker and no apiserver: the source only reads files and calls its callbacks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import watchfiles

from tests.support import manifests
from tests.support.manifests import sh
from vk_provider.static.manifest import CONFIG_SEEN_ANNOTATION, MAX_MANIFEST_BYTES
from vk_provider.static.source import BadManifest, StaticPodSource

NODE = "node-a"
DEADLINE = 15.0


def manifest(name: str, command: str = "sleep 3600", **spec: Any) -> str:
    return json.dumps(manifests.pod(name, [sh("main", command)], namespace=None, **spec), indent=1)


class Recorder:
    """Collects what the source delivers, and waits for a condition on it."""

    def __init__(self) -> None:
        self.snapshots: list[dict[str, dict[str, Any]]] = []
        self.errors: list[list[BadManifest]] = [[]]
        self._changed = asyncio.Event()

    async def on_pods(self, pods: dict[str, dict[str, Any]]) -> None:
        self.snapshots.append(pods)
        self._changed.set()

    async def on_errors(self, bad: list[BadManifest]) -> None:
        self.errors.append(bad)
        self._changed.set()

    def names(self) -> set[str]:
        return {pod["metadata"]["name"] for pod in self.snapshots[-1].values()} if self.snapshots else set()

    def bad(self) -> dict[str, str]:
        return {Path(b.path).name: b.reason for b in self.errors[-1]}

    async def wait(self, condition: Callable[[], bool], what: str) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + DEADLINE
        while not condition():
            self._changed.clear()
            remaining = end - loop.time()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {what}: pods {self.names()}, bad {self.bad()}")
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                continue


@pytest.fixture
async def started(
    tmp_path: Path,
) -> AsyncIterator[Callable[..., Awaitable[tuple[StaticPodSource, Recorder]]]]:
    sources: list[StaticPodSource] = []

    async def start(path: Path | None = None, relist: float = 3600.0) -> tuple[StaticPodSource, Recorder]:
        recorder = Recorder()
        src = StaticPodSource(
            str(path or tmp_path), NODE, relist, on_pods=recorder.on_pods, on_errors=recorder.on_errors
        )
        await src.start()
        sources.append(src)
        return src, recorder

    yield start
    for src in sources:
        await asyncio.wait_for(src.stop(), 10)


async def test_scan_reports_good_pods_and_every_kind_of_bad_file(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    started: Callable[..., Awaitable[tuple[StaticPodSource, Recorder]]],
) -> None:
    (tmp_path / "good.yaml").write_text(manifest("good"))
    (tmp_path / "also-good.json").write_text(manifest("other"))
    (tmp_path / ".hidden.yaml").write_text("not: a pod")
    (tmp_path / "README.txt").write_text("not a manifest")
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\n  bad: indent\n")
    (tmp_path / "deploy.yaml").write_text(manifest("d").replace('"Pod"', '"Deployment"'))
    (tmp_path / "noname.yml").write_text(manifest("x").replace('"name": "x"', '"labels": {}'))
    (tmp_path / "twin.yaml").write_text(manifest("good", command="true"))
    (tmp_path / "secret.yaml").write_text(
        manifest("s", volumes=[{"name": "v", "secret": {"secretName": "creds"}}])
    )
    (tmp_path / "invalid.yaml").write_text(manifest("inv").replace('"command"', '"commandd"'))
    (tmp_path / "dir.yaml").mkdir()
    (tmp_path / "dangling.yaml").symlink_to(tmp_path / "nowhere")
    (tmp_path / "huge.yaml").write_bytes(b"#" * (MAX_MANIFEST_BYTES + 1))

    src, rec = await started()

    assert len(rec.snapshots) == 1, "start() delivers the first snapshot before returning"
    assert rec.names() == {"good-node-a", "other-node-a"}
    assert src.pods() == rec.snapshots[-1]
    bad = rec.bad()
    assert set(bad) == {
        "broken.yaml", "deploy.yaml", "noname.yml", "twin.yaml", "secret.yaml",
        "invalid.yaml", "dir.yaml", "dangling.yaml", "huge.yaml",
    }  # fmt: skip
    assert bad["broken.yaml"].startswith("invalid YAML/JSON at line 3, column 6")
    assert bad["deploy.yaml"].startswith("kind 'Deployment'")
    assert bad["noname.yml"] == "metadata.name is missing"
    assert bad["twin.yaml"] == f"pod default/good-node-a is already defined by {tmp_path / 'good.yaml'}"
    assert bad["secret.yaml"].startswith("static pods may not reference secrets")
    assert bad["invalid.yaml"].startswith("invalid Pod: spec.containers[0]: Additional properties")
    assert bad["dir.yaml"] == "is a directory, not a manifest file"
    assert bad["dangling.yaml"] == "cannot read: No such file or directory"
    assert bad["huge.yaml"].startswith("file is larger than")
    assert all(b.path.startswith(str(tmp_path)) for b in rec.errors[-1])
    warnings = [(r.getMessage(), r.path, r.reason) for r in caplog.records if r.levelname == "WARNING"]
    bad_manifest = "bad static pod manifest"
    assert (bad_manifest, str(tmp_path / "noname.yml"), "metadata.name is missing") in warnings
    assert len(warnings) == len(bad)


async def test_changes_are_seen_through_notifications(
    tmp_path: Path, started: Callable[..., Awaitable[tuple[StaticPodSource, Recorder]]]
) -> None:
    _, rec = await started()  # relist once an hour: only notifications can explain a change
    assert rec.snapshots == [{}]

    (tmp_path / "web.yaml").write_text(manifest("web"))
    await rec.wait(lambda: rec.names() == {"web-node-a"}, "the new manifest")
    (first_uid,) = rec.snapshots[-1]

    (tmp_path / "web.yaml").write_text(manifest("web", command="sleep 7200"))
    await rec.wait(
        lambda: bool(rec.snapshots[-1]) and first_uid not in rec.snapshots[-1], "the edited manifest"
    )
    (pod,) = rec.snapshots[-1].values()
    assert pod["metadata"]["name"] == "web-node-a"
    assert pod["spec"]["containers"][0]["command"] == ["sh", "-c", "sleep 7200"]

    (tmp_path / "web.yaml").unlink()
    await rec.wait(lambda: rec.snapshots[-1] == {}, "the removal")


async def test_a_fixed_file_is_picked_up_and_its_error_cleared(
    tmp_path: Path, started: Callable[..., Awaitable[tuple[StaticPodSource, Recorder]]]
) -> None:
    (tmp_path / "good.yaml").write_text(manifest("good"))
    (tmp_path / "bad.yaml").write_text("kind: [")
    _, rec = await started()
    assert set(rec.bad()) == {"bad.yaml"}
    good_uids = set(rec.snapshots[-1])

    (tmp_path / "bad.yaml").write_text(manifest("fixed"))
    await rec.wait(lambda: rec.bad() == {} and "fixed-node-a" in rec.names(), "the fixed file")
    assert good_uids <= set(rec.snapshots[-1]), "the good pod was never dropped"
    assert all(good_uids <= set(s) for s in rec.snapshots)


async def test_relist_finds_changes_without_notifications(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    started: Callable[..., Awaitable[tuple[StaticPodSource, Recorder]]],
) -> None:
    async def deaf(*_: Any, **__: Any) -> AsyncIterator[set[Any]]:  # a watch that never reports
        await asyncio.Event().wait()
        yield set()

    monkeypatch.setattr(watchfiles, "awatch", deaf)
    src, rec = await started(relist=0.2)
    (tmp_path / "late.yaml").write_text(manifest("late"))
    await rec.wait(lambda: rec.names() == {"late-node-a"}, "the relist")
    seen = next(iter(rec.snapshots[-1].values()))["metadata"]["annotations"][CONFIG_SEEN_ANNOTATION]
    count = len(rec.snapshots)
    await asyncio.sleep(1.0)  # several relists of an unchanged directory
    assert len(rec.snapshots) == count, "an unchanged directory delivers nothing new"
    (pod,) = src.pods().values()
    assert pod["metadata"]["annotations"][CONFIG_SEEN_ANNOTATION] == seen, "config.seen is the first sight"


async def test_a_missing_directory_gives_no_pods_until_it_appears(
    tmp_path: Path, started: Callable[..., Awaitable[tuple[StaticPodSource, Recorder]]]
) -> None:
    path = tmp_path / "manifests"
    _, rec = await started(path)  # notifications only: the parent is watched until it exists
    assert rec.snapshots == [{}]
    assert rec.bad() == {}
    path.mkdir()
    (path / "web.yml").write_text(manifest("web"))
    await rec.wait(lambda: rec.names() == {"web-node-a"}, "the pod in the new directory")


async def test_a_single_file_path_is_one_pod(
    tmp_path: Path, started: Callable[..., Awaitable[tuple[StaticPodSource, Recorder]]]
) -> None:
    file = tmp_path / "only.manifest"
    file.write_text(manifest("only"))
    _, rec = await started(file)
    assert rec.names() == {"only-node-a"}
    file.write_text(manifest("only", command="sleep 1"))
    old = set(rec.snapshots[-1])
    await rec.wait(
        lambda: set(rec.snapshots[-1]) != old and bool(rec.snapshots[-1]), "the edited single file"
    )


async def test_a_failing_callback_does_not_stop_the_source(tmp_path: Path) -> None:
    rec = Recorder()

    async def on_pods(pods: dict[str, dict[str, Any]]) -> None:
        await rec.on_pods(pods)
        raise RuntimeError("consumer bug")

    src = StaticPodSource(str(tmp_path), NODE, 3600.0, on_pods=on_pods, on_errors=rec.on_errors)
    await src.start()
    try:
        (tmp_path / "a.yaml").write_text(manifest("a"))
        await rec.wait(lambda: rec.names() == {"a-node-a"}, "a pod after the callback failed")
        (tmp_path / "b.yaml").write_text(manifest("b"))
        await rec.wait(lambda: rec.names() == {"a-node-a", "b-node-a"}, "the next change")
    finally:
        await asyncio.wait_for(src.stop(), 10)


async def test_a_removed_and_recreated_directory_is_followed(
    tmp_path: Path, started: Callable[..., Awaitable[tuple[StaticPodSource, Recorder]]]
) -> None:
    path = tmp_path / "manifests"
    path.mkdir()
    (path / "a.yaml").write_text(manifest("a"))
    _, rec = await started(path)  # notifications only
    assert rec.names() == {"a-node-a"}
    (path / "a.yaml").unlink()
    path.rmdir()
    await rec.wait(lambda: rec.snapshots[-1] == {}, "the pods of the removed directory to go")
    path.mkdir()
    (path / "b.yaml").write_text(manifest("b"))
    await rec.wait(lambda: rec.names() == {"b-node-a"}, "the pod in the recreated directory")
    (path / "c.yaml").write_text(manifest("c"))
    await rec.wait(lambda: rec.names() == {"b-node-a", "c-node-a"}, "a later file in the recreated directory")
