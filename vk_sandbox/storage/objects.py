"""JSON-shaped objects as the sandbox's storage keeps them: copies, compact encoding and times.

What lives here: `Obj`, `clone` (a deep copy of a stored object, with vk_common's `copy_json`),
`encode` (the compact JSON the watch and the size accounting use), `now_rfc3339` and `parse_time`.
Must not: know about resources, the store or HTTP.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from vk_common.objects import copy_json, format_time
from vk_common.objects import parse_time as parse_rfc3339

Obj = dict[str, Any]


def clone(obj: Obj) -> Obj:
    """Deep copy of a JSON-shaped object (faster than copy.deepcopy for plain dicts and lists)."""
    return {k: copy_json(v) for k, v in obj.items()}


def encode(obj: Obj) -> bytes:
    """The compact JSON of obj, as the watch and the size accounting serialize it."""
    return json.dumps(obj, separators=(",", ":")).encode()


def now_rfc3339(delta_seconds: float = 0) -> str:
    """metav1.Time of now plus `delta_seconds` (vk_common.objects.format_time)."""
    return format_time(datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=delta_seconds))


def parse_time(value: str) -> datetime:
    """An RFC 3339 time the store wrote; raises ValueError for one that does not parse."""
    parsed = parse_rfc3339(value)
    if parsed is None:
        raise ValueError(f"not an RFC 3339 time: {value!r}")
    return parsed


def metadata(obj: Obj) -> Obj:
    """obj's metadata dict, made (and set on obj) when it has none."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta
