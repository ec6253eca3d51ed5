"""The RuntimeClass admission plugin's changes to a new pod, once its RuntimeClass is found.

What lives here: `admit_runtime_class(pod, runtime_class)`, as plugin/pkg/admission/runtimeclass/
admission.go's Admit and Validate: the class's `overhead.podFixed` becomes the pod's
`spec.overhead` (a pod that sets a different one, or sets one without a class that defines it, is
refused), and the class's `scheduling` joins the pod's: its nodeSelector merged in (a conflicting
key is refused), its tolerations added. Upstream's MergeTolerations also drops a toleration
another one covers; here only exact duplicates are left out.
Must not: look up the RuntimeClass (api/handlers/verbs.py does) or touch the store.
"""

from __future__ import annotations

from typing import Any

from vk_sandbox.api import errors
from vk_sandbox.api.quantity import parse_quantity

Obj = dict[str, Any]


def _same_resources(a: Obj, b: Obj) -> bool:
    """apiequality.Semantic.DeepEqual of two ResourceLists: quantities compared by value."""
    try:
        return a.keys() == b.keys() and all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)
    except (TypeError, ValueError):
        return a == b


def admit_runtime_class(pod: Obj, runtime_class: Obj | None) -> None:
    """Mutates pod as the plugin's Admit does, then refuses it (403) as its Validate would."""
    spec = pod.setdefault("spec", {})
    name = str(pod.get("metadata", {}).get("name") or "")
    overhead = ((runtime_class or {}).get("overhead") or {}).get("podFixed")
    if overhead is not None:
        if spec.get("overhead") and not _same_resources(spec["overhead"], overhead):
            raise errors.forbidden(
                "pods", name, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
            )
        spec["overhead"] = dict(overhead)
    elif spec.get("overhead") is not None:
        raise errors.forbidden(
            "pods", name, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
        )
    scheduling = (runtime_class or {}).get("scheduling") or {}
    selector = scheduling.get("nodeSelector") or {}
    if selector:
        merged = dict(spec.get("nodeSelector") or {})
        for key, value in selector.items():
            if key in merged and merged[key] != value:
                raise errors.forbidden(
                    "pods",
                    name,
                    f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                    f"pod.spec.nodeSelector[{key}] = {merged[key]}",
                )
            merged[key] = value
        spec["nodeSelector"] = merged
    tolerations = list(spec.get("tolerations") or [])
    for toleration in scheduling.get("tolerations") or []:
        if toleration not in tolerations:
            tolerations.append(toleration)
    if tolerations:
        spec["tolerations"] = tolerations
