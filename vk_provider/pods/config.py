"""PodConfig: the desired pods of every source, merged by UID and classified.

What lives here: `PodConfig`, which each pod source (the API source, later the static
source) feeds with full lists (`set_pods`) or single changes (`upsert`, `remove`), and
which turns them into `PodUpdate`s for the pod workers: ADD (new UID), UPDATE (spec,
labels or annotations changed), DELETE (a deletionTimestamp appeared: graceful delete),
REMOVE (the pod left its source) and RECONCILE (only the status changed). Every pod
keeps the name of the source it came from; `by_name` finds one as the kubelet's pod manager
does (the kubelet API's `DesiredPods`).
Must not: start containers, write status or talk to the apiserver.

Upstream: pkg/kubelet/config/config.go (podStorage.merge, checkAndUpdatePod).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from vk_common.objects import is_deleting, meta
from vk_common.objects import uid as uid_of


class UpdateKind(StrEnum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    REMOVE = "REMOVE"
    RECONCILE = "RECONCILE"


@dataclass(frozen=True)
class PodUpdate:
    kind: UpdateKind
    pod: Mapping[str, Any]
    source: str


def _semantic(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = pod.get("metadata") or {}
    return (
        pod.get("spec"),
        meta.get("labels"),
        meta.get("annotations"),
        meta.get("deletionTimestamp"),
        meta.get("deletionGracePeriodSeconds"),
    )


def classify(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> UpdateKind | None:
    """What changed between two versions of one pod; None when nothing the kubelet cares about."""
    if old is None:
        return UpdateKind.DELETE if is_deleting(new) else UpdateKind.ADD
    if _semantic(old) != _semantic(new):
        if is_deleting(new):
            return UpdateKind.DELETE
        return UpdateKind.UPDATE
    if old.get("status") != new.get("status"):
        return UpdateKind.RECONCILE
    return None


class PodConfig:
    """Merged desired state; `handler` receives every classified update, in order."""

    def __init__(self, handler: Callable[[PodUpdate], None]) -> None:
        self._handler = handler
        self._pods: dict[str, tuple[str, Mapping[str, Any]]] = {}  # uid -> (source, pod)
        self._synced: set[str] = set()

    def upsert(self, source: str, pod: Mapping[str, Any]) -> None:
        uid = uid_of(pod)
        if not uid:
            return
        old = self._pods.get(uid)
        kind = classify(old[1] if old else None, pod)
        self._pods[uid] = (source, pod)
        if kind is not None:
            self._handler(PodUpdate(kind, pod, source))

    def remove(self, source: str, uid: str) -> None:
        old = self._pods.get(uid)
        if old is None or old[0] != source:
            return
        del self._pods[uid]
        self._handler(PodUpdate(UpdateKind.REMOVE, old[1], source))

    def set_pods(self, source: str, pods: Iterable[Mapping[str, Any]]) -> None:
        """A full list from `source` (initial list or relist): diff against what it had."""
        seen: set[str] = set()
        for pod in pods:
            uid = uid_of(pod)
            if uid:
                seen.add(uid)
                self.upsert(source, pod)
        for uid in [u for u, (s, _) in self._pods.items() if s == source and u not in seen]:
            self.remove(source, uid)
        self._synced.add(source)

    def synced(self, source: str) -> bool:
        """Whether `source` has delivered at least one full list."""
        return source in self._synced

    def get(self, uid: str) -> Mapping[str, Any] | None:
        found = self._pods.get(uid)
        return found[1] if found else None

    def by_name(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The pod of that namespace and name (the kubelet's GetPodByName); while a deleted pod
        and its re-creation both remain, the one not being deleted."""
        found = [
            pod
            for _, pod in self._pods.values()
            if (meta(pod).get("namespace"), meta(pod).get("name")) == (namespace, name)
        ]
        return max(found, key=lambda pod: not is_deleting(pod), default=None)

    def source_of(self, uid: str) -> str | None:
        found = self._pods.get(uid)
        return found[0] if found else None

    def pods(self) -> list[Mapping[str, Any]]:
        return [pod for _, pod in self._pods.values()]
