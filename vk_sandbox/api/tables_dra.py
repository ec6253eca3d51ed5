"""Server-side Table columns and cells of the resource.k8s.io kinds that print more than NAME/AGE.

What lives here: printResourceClaim, printResourceSlice and printDeviceTaint with their column
definitions (`pkg/printers/internalversion/printers.go`); deviceclasses and resourceclaimtemplates
print NAME and AGE, tables.py's default. tables.py looks these up by plural.
Must not: read the store or know about HTTP.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from vk_sandbox.api.table_columns import age_col, col, doc, get, name_col, obj_at, since

Obj = dict[str, Any]
_RESOURCE = "io.k8s.api.resource.v1."


def _claim_state(claim: Obj) -> str:
    """resourceClaimState: deleted, then pending (not deleting) or allocated and reserved."""
    states = []
    deleting = bool(get(claim, "metadata", "deletionTimestamp"))
    if deleting:
        states.append("deleted")
    if get(claim, "status", "allocation") is None:
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if get(claim, "status", "reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _claim_cells(claim: Obj, now: datetime) -> list[Any]:
    created = since(get(claim, "metadata", "creationTimestamp"), now)
    return [get(claim, "metadata", "name") or "", _claim_state(claim), created]


def _slice_cells(slice_: Obj, now: datetime) -> list[Any]:
    spec = obj_at(slice_, "spec")
    return [
        get(slice_, "metadata", "name") or "",
        spec.get("nodeName") or "",
        spec.get("driver") or "",
        get(spec, "pool", "name") or "",
        since(get(slice_, "metadata", "creationTimestamp"), now),
    ]


def _taint_rule_cells(rule: Obj, now: datetime) -> list[Any]:
    taint = obj_at(rule, "spec", "taint")
    added = taint.get("timeAdded")
    return [
        get(rule, "metadata", "name") or "",
        taint.get("key") or "",
        taint.get("value") or "",
        taint.get("effect") or "",
        since(added, now) if added else "",
        since(get(rule, "metadata", "creationTimestamp"), now),
    ]


def _claim_columns() -> list[Obj]:
    state = "A summary of the current state (allocated, pending, reserved, etc.)."
    return [name_col(), col("State", state), age_col()]


def _slice_columns() -> list[Obj]:
    spec = _RESOURCE + "ResourceSliceSpec"
    return [
        name_col(),
        col("Node", doc(spec, "nodeName")),
        col("Driver", doc(spec, "driver")),
        col("Pool", doc(_RESOURCE + "ResourcePool", "name")),
        age_col(),
    ]


def _taint_rule_columns() -> list[Obj]:
    taint = _RESOURCE + "DeviceTaint"
    return [
        name_col(),
        col("Key", doc(taint, "key")),
        col("Value", doc(taint, "value")),
        col("Effect", doc(taint, "effect")),
        col("TimeAdded", doc(taint, "timeAdded")),
        age_col(),
    ]


COLUMNS: dict[str, Callable[[], list[Obj]]] = {
    "resourceclaims": _claim_columns,
    "resourceslices": _slice_columns,
    "devicetaintrules": _taint_rule_columns,
}
CELLS: dict[str, Callable[[Obj, datetime], list[Any]]] = {
    "resourceclaims": _claim_cells,
    "resourceslices": _slice_cells,
    "devicetaintrules": _taint_rule_cells,
}
