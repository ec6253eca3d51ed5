"""The building blocks of server-side Tables: durations, cell lookups and column definitions.

What lives here: kubectl's `HumanDuration` (`staging/src/k8s.io/apimachinery/pkg/util/duration/
duration.go`), `since` (a timestamp's age as printers.go's translateTimestampSince prints it), safe
lookups into objects (`get`, `obj_at`, `items_at`), and column definitions described from the official
schemas (`doc`, `col`, `name_col`, `age_col`), shared by tables.py and tables_dra.py.
Must not: know about any kind, read the store or know about HTTP.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Any

from vk_common.objects import parse_time
from vk_sandbox.api.validation.schema import definitions

Obj = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Durations and timestamps


def human_duration(d: timedelta) -> str:
    """kubectl's HumanDuration: `5s`, `2m30s`, `15m`, `3h20m`, `2d5h`, `400d`, `3y20d`."""
    seconds = int(d.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"


def since(value: Any, now: datetime) -> str:
    ts = parse_time(value if isinstance(value, str) else None)
    return "<unknown>" if ts is None else human_duration(now - ts)


def get(obj: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


def obj_at(obj: Any, *path: str) -> Obj:
    """The map at path, or {} (objects reach here validated, but lists may hold nulls)."""
    value = get(obj, *path)
    return value if isinstance(value, dict) else {}


def items_at(obj: Any, *path: str) -> list[Obj]:
    """The maps of the list at path, skipping anything else."""
    value = get(obj, *path)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------------
# Column definitions


@functools.cache
def doc(definition: str, field: str) -> str:
    prop = (definitions().get(definition, {}).get("properties") or {}).get(field) or {}
    return str(prop.get("description", ""))


META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def col(name: str, description: str, *, priority: int = 0, fmt: str = "", type_: str = "string") -> Obj:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


def name_col(priority: int = 0) -> Obj:
    return col("Name", doc(META, "name"), fmt="name", priority=priority)


def age_col() -> Obj:
    return col("Age", doc(META, "creationTimestamp"))
