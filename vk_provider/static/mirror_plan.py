"""Mirror pod decisions: which mirror pods to delete and which to create, from two sets.

What lives here: `plan_mirrors(static_pods, mirrors)`, the pure reconcile of the static pods
(by UID, as StaticPodSource delivers them) against the mirror pods the API holds for this node,
giving one `MirrorDecision` per full name that needs work; `build_mirror_pod`, the pod to POST
for a static pod; `find_mirror`, the mirror a static pod's status goes to; and the identity
helpers (`mirror_hash`, `static_hash`; the shared ones are in
`vk_common/objects.py`). Pure: no apiserver, no clock, no logging.

Upstream: pkg/kubelet/pod/mirror_client.go (CreateMirrorPod), pkg/kubelet/pod/pod_manager.go
(IsMirrorPodOf: same full name and mirror annotation == config.hash; the spec is never compared),
pkg/kubelet/kubelet.go (tryReconcileMirrorPods) and kubelet_pods.go (deleteOrphanedMirrorPods).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vk_common.objects import (
    MIRROR_ANNOTATION,
    annotations_of,
    full_name,
    is_deleting,
    is_mirror,
    meta,
    uid,
)
from vk_provider.static.manifest import CONFIG_HASH_ANNOTATION

# Why a mirror pod is deleted (the words appear in the log line).
BEING_DELETED = "being deleted"
OUTDATED = "outdated (the manifest changed)"
DUPLICATE = "a newer mirror pod exists"
ORPHANED = "orphaned (no static pod)"

Pod = Mapping[str, Any]


@dataclass(frozen=True)
class MirrorDecision:
    """The work for one `namespace/name`: delete these mirrors (with why), then maybe create one.

    `create` is the static pod to mirror; it must only be created once every deletion above
    succeeded (the name is taken until then). `waiting` is a mirror that is already being
    force-deleted (grace 0) and is only waiting for its finalizers: nothing may be done
    about the name until it is gone.
    """

    full_name: str
    delete: tuple[tuple[Pod, str], ...] = ()
    create: Pod | None = None
    waiting: Pod | None = None


def mirror_hash(mirror: Pod) -> str:
    return str(annotations_of(mirror).get(MIRROR_ANNOTATION) or "")


def static_hash(static_pod: Pod) -> str:
    """The static pod's `kubernetes.io/config.hash` (its UID), which its mirror must carry."""
    return str(annotations_of(static_pod).get(CONFIG_HASH_ANNOTATION) or uid(static_pod))


def _force_deleted(pod: Pod) -> bool:
    """Deleted with grace 0 already: only finalizers keep it (deleting it again changes nothing)."""
    return is_deleting(pod) and meta(pod).get("deletionGracePeriodSeconds") == 0


def _age_key(pod: Pod) -> tuple[str, str]:
    return (str(meta(pod).get("creationTimestamp") or ""), uid(pod))


def find_mirror(static_pod: Pod, mirrors: Iterable[Pod]) -> Pod | None:
    """The live mirror of `static_pod`: same full name, its hash, not being deleted; the newest if several."""
    name, want = full_name(static_pod), static_hash(static_pod)
    matching = [m for m in mirrors if full_name(m) == name and mirror_hash(m) == want and not is_deleting(m)]
    return max(matching, key=_age_key) if matching else None


def plan_mirrors(static_pods: Mapping[str, Pod], mirrors: Iterable[Pod]) -> list[MirrorDecision]:
    """What to do so each static pod has exactly one current mirror and no other mirror exists.

    Per static pod (by full name): a mirror being deleted gracefully is force-deleted (the
    kubelet's tryReconcileMirrorPods) and one already force-deleted is waited for; a mirror
    with another hash is deleted; of several current ones the newest is kept; with no
    current one left, the static pod is created. A mirror whose full name has no static pod
    is an orphan and deleted. Decisions come sorted by full name; names needing nothing are left out.
    """
    statics: dict[str, Pod] = {}
    for pod in static_pods.values():
        statics.setdefault(full_name(pod), pod)
    by_name: dict[str, list[Pod]] = {}
    for mirror in mirrors:
        if is_mirror(mirror):
            by_name.setdefault(full_name(mirror), []).append(mirror)

    decisions: list[MirrorDecision] = []
    for name in sorted(set(statics) | set(by_name)):
        present = sorted(by_name.get(name, []), key=_age_key)
        static_pod = statics.get(name)
        if static_pod is None:
            deletes = tuple((m, ORPHANED) for m in present if not _force_deleted(m))
            if deletes:
                decisions.append(MirrorDecision(name, delete=deletes))
            continue
        keep = find_mirror(static_pod, present)
        deletes_list: list[tuple[Pod, str]] = []
        waiting: Pod | None = None
        for mirror in present:
            if mirror is keep:
                continue
            if _force_deleted(mirror):
                waiting = mirror
            elif is_deleting(mirror):
                deletes_list.append((mirror, BEING_DELETED))
            elif mirror_hash(mirror) != static_hash(static_pod):
                deletes_list.append((mirror, OUTDATED))
            else:
                deletes_list.append((mirror, DUPLICATE))
        create = static_pod if keep is None and waiting is None else None
        if deletes_list or create is not None or waiting is not None:
            decisions.append(MirrorDecision(name, tuple(deletes_list), create, waiting))
    return decisions


def build_mirror_pod(static_pod: Pod, node_name: str, node_uid: str) -> dict[str, Any]:
    """The mirror pod to create for `static_pod` (CreateMirrorPod): its name, namespace,
    labels, annotations plus `kubernetes.io/config.mirror=<config.hash>`, its spec, and
    exactly one owner reference, to the Node, as a controller without blockOwnerDeletion.
    Nothing else of the static pod (no uid, resourceVersion or status)."""
    static_meta = meta(static_pod)
    copied = {str(k): str(v) for k, v in annotations_of(static_pod).items()}
    copied[MIRROR_ANNOTATION] = static_hash(static_pod)
    metadata: dict[str, Any] = {
        "name": static_meta.get("name", ""),
        "namespace": static_meta.get("namespace") or "default",
        "annotations": copied,
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid, "controller": True}
        ],
    }
    labels = static_meta.get("labels")
    if isinstance(labels, Mapping) and labels:
        metadata["labels"] = {str(k): str(v) for k, v in labels.items()}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(dict(static_pod.get("spec") or {})),
    }
