"""PodSources: static pods first, then adoption of what runs, then the API source, then
housekeeping; the API watch (tests.support.pods_api: pods a, b and the mirror m, then b's
deletion) fans out to the status manager (not deletions) and the mirror pods (everything);
and BadManifestEvents: one Warning Event on the Node per newly bad manifest file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from tests.support.pods_api import ListOnlyClient
from tests.support.polling import eventually
from vk_provider.config import StaticPodsConfig
from vk_provider.kube.client import KubeClient
from vk_provider.kube.events import EventRecorder
from vk_provider.pods.config import PodUpdate
from vk_provider.pods.sources import PodSources
from vk_provider.pods.workers import PodWorkers
from vk_provider.static.mirror import MirrorPods
from vk_provider.static.source import BAD_MANIFEST_REASON, BadManifest, BadManifestEvents
from vk_provider.status.manager import StatusManager

NODE = "vk-1"
NODE_REF = {"kind": "Node", "metadata": {"name": NODE}}
WEB = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: vk-test/busybox:1
"""


class Journal:
    """Every part's calls, in the order they happened."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, ...]] = []

    def index(self, *entry: str) -> int:
        return self.entries.index(entry)

    # the pod workers
    def update(self, update: PodUpdate) -> None:
        self.entries.append(("update", update.kind.value, update.source, update.pod["metadata"]["name"]))

    async def adopt(self, known_uids: Iterable[str]) -> None:
        self.entries.append(("adopt", *sorted(known_uids)))

    def start_housekeeping(self) -> None:
        self.entries.append(("housekeeping",))

    # the status manager
    def observe_pod(self, pod: Mapping[str, Any]) -> None:
        self.entries.append(("status", pod["metadata"]["uid"]))

    # the mirror pods
    def set_static_pods(self, pods: Mapping[str, Mapping[str, Any]]) -> None:
        self.entries.append(("static pods", *sorted(p["metadata"]["name"] for p in pods.values())))

    def observe(self, event_type: str, pod: Mapping[str, Any]) -> None:
        self.entries.append(("mirror", event_type, pod["metadata"]["uid"]))

    def observed_synced(self) -> None:
        self.entries.append(("mirror synced",))


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, str, str, str]] = []

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((obj, type_, reason, message))


def sources(journal: Journal, static_path: str = "", recorder: Recorder | None = None) -> PodSources:
    return PodSources(
        cast(KubeClient, ListOnlyClient()),
        NODE,
        StaticPodsConfig(path=static_path, relist_interval=3600.0),
        workers=cast(PodWorkers, journal),
        status=cast(StatusManager, journal),
        mirrors=cast(MirrorPods, journal),
        recorder=cast(EventRecorder, recorder or Recorder()),
        node_ref=NODE_REF,
    )


async def test_static_pods_then_adoption_then_the_api_then_housekeeping(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(WEB)
    journal = Journal()
    parts = sources(journal, str(tmp_path))
    await parts.start()
    try:
        # start() returns once the static pods are delivered; the API side is not begun yet.
        assert journal.entries == [
            ("update", "ADD", "file", f"web-{NODE.lower()}"),
            ("static pods", f"web-{NODE.lower()}"),
        ]
        await eventually(lambda: ("update", "REMOVE", "api", "b") in journal.entries, within=10)
    finally:
        await parts.stop()
    [static_uid] = [
        p["metadata"]["uid"] for p in parts.pod_config.pods() if p["metadata"]["name"].startswith("web")
    ]
    # adoption knows the API's pods and the static ones, not the mirror
    adopt = journal.index("adopt", *sorted(["a", "b", static_uid]))
    assert adopt < journal.index("update", "ADD", "api", "a") < journal.index("mirror synced")
    assert journal.index("mirror synced") < journal.index("housekeeping")
    assert journal.index("status", "a") < journal.index("mirror", "ADDED", "a")  # status first, as before
    assert ("status", "m") in journal.entries and ("mirror", "ADDED", "m") in journal.entries
    assert ("mirror", "DELETED", "b") in journal.entries
    statuses = [e for e in journal.entries if e[0] == "status"]
    assert statuses == [("status", "a"), ("status", "m"), ("status", "b")]  # not the deletion
    assert not [e for e in journal.entries if e[0] == "update" and e[3] == "m"]  # mirror pods reach no worker


async def test_without_a_static_path_every_mirror_is_an_orphan() -> None:
    journal = Journal()
    parts = sources(journal)
    await parts.start()
    try:
        assert parts.static_source is None
        assert journal.entries[0] == ("static pods",)
        await eventually(lambda: ("housekeeping",) in journal.entries, within=10)
    finally:
        await parts.stop()
    assert journal.entries[1] == ("adopt", "a", "b")


async def test_a_bad_manifest_file_is_one_warning_event_on_the_node(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\n  bad: indent\n")
    recorder = Recorder()
    parts = sources(Journal(), str(tmp_path), recorder)
    await parts.start()
    await parts.stop()
    [(obj, type_, reason, message)] = recorder.events
    assert (obj, type_, reason) == (NODE_REF, "Warning", BAD_MANIFEST_REASON)
    assert message.startswith(f"{tmp_path / 'bad.yaml'}: ")


async def test_bad_manifest_events_only_for_newly_bad_files() -> None:
    recorder = Recorder()
    report = BadManifestEvents(cast(EventRecorder, recorder), NODE_REF)
    one, two = BadManifest("/m/one.yaml", "no kind"), BadManifest("/m/two.yaml", "too large")
    await report([one])
    await report([one, two])
    await report([two])
    await report([one, two])  # one is bad again: reported again
    assert [m for *_, m in recorder.events] == [
        "/m/one.yaml: no kind",
        "/m/two.yaml: too large",
        "/m/one.yaml: no kind",
    ]
    assert {r for _, _, r, _ in recorder.events} == {BAD_MANIFEST_REASON}
