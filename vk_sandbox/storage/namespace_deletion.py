"""What the namespace controller's deleter reports on a terminating namespace: its five status
conditions (pkg/controller/namespace/deletion/status_condition_utils.go), from what is left in it.

What lives here: `Leftovers` (the objects still in the namespace, by resource, after a pass of
the deleter) with `estimate` (namespaced_resources_deleter.go's estimateGracefulTermination for
pods: the longest termination grace period of a pod not yet Succeeded or Failed; while it is
above 0, pods left over are not an error; nor are objects a finalizer holds), and `conditions`,
the namespace's new `status.conditions`. Pods go first (KEP-5080, deleteAllContent): while any is
left, the other content is not deleted and the conditions leave out the content totals.
Must not: delete anything or touch the store (storage/store.py runs the passes).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from vk_sandbox.api.resources import by_key
from vk_sandbox.storage.objects import Obj, now_rfc3339

_TYPES = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
_OK = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}


@dataclass
class Leftovers:
    """What a pass of the deleter left in `namespace`, by store key ("pods", "leases.coordination.k8s.io")."""

    namespace: str
    by_resource: dict[str, list[Obj]] = field(default_factory=dict)

    def estimate(self) -> int:
        grace = [
            int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30) or 0)
            for pod in self.by_resource.get("pods", [])
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        return max(grace, default=0)

    def empty(self) -> bool:
        return not any(self.by_resource.values())


def _gvr(key: str) -> tuple[str, str, str]:
    info = by_key(key)
    return (info.group, info.version, info.name) if info else ("", "v1", key)


def _condition(type_: str, status: str, reason: str, message: str, old: dict[str, Any]) -> Obj:
    previous = old.get(type_) or {}
    moved = previous.get("status") != status or not previous.get("lastTransitionTime")
    return {
        "type": type_,
        "status": status,
        "lastTransitionTime": now_rfc3339() if moved else previous["lastTransitionTime"],
        "reason": reason,
        "message": message,
    }


def _unexpected(left: Leftovers, key: str, items: list[Obj]) -> bool:
    """deleteAllContentForGroupVersionResource's error: items left that no finalizer holds and no
    graceful termination explains (finalizers are "a normal condition")."""
    graceful = left.estimate() if key == "pods" else 0
    return graceful == 0 and not any(o["metadata"].get("finalizers") for o in items)


def conditions(left: Leftovers, old_conditions: list[Obj]) -> list[Obj]:
    """The five conditions, in upstream's order, each kept as it was unless it changed. While pods
    are left, deleteAllContent updates the conditions without the content totals."""
    old = {str(c.get("type")): c for c in old_conditions if isinstance(c, dict)}
    remaining = {key: items for key, items in left.by_resource.items() if items}
    failed: dict[str, tuple[str, str]] = {}
    errs = sorted(
        f"unexpected items still remain in namespace: {left.namespace} for gvr: "
        f"{_gvr(k)[0]}/{_gvr(k)[1]}, Resource={_gvr(k)[2]}"
        for k, items in remaining.items()
        if _unexpected(left, k, items)
    )
    if errs:
        failed["NamespaceDeletionContentFailure"] = (
            "ContentDeletionFailed",
            f"Failed to delete all resource types, {len(errs)} remaining: {', '.join(errs)}",
        )
    if remaining and "pods" not in remaining:  # ProcessContentTotals
        counts = sorted(
            f"{_gvr(k)[2]}.{_gvr(k)[0]} has {len(items)} resource instances" for k, items in remaining.items()
        )
        failed["NamespaceContentRemaining"] = (
            "SomeResourcesRemain",
            f"Some resources are remaining: {', '.join(counts)}",
        )
        finalizers = Counter(
            f for items in remaining.values() for o in items for f in o["metadata"].get("finalizers") or []
        )
        if finalizers:
            held = sorted(f"{name} in {count} resource instances" for name, count in finalizers.items())
            failed["NamespaceFinalizersRemaining"] = (
                "SomeFinalizersRemain",
                f"Some content in the namespace has finalizers remaining: {', '.join(held)}",
            )
    out = []
    for type_ in _TYPES:
        status, (reason, message) = ("True", failed[type_]) if type_ in failed else ("False", _OK[type_])
        out.append(_condition(type_, status, reason, message, old))
    return out
