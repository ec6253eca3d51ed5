"""The disk use of this node's emptyDir volumes, from the engine's `system df` answer (pure).

What lives here: `volume_usage(df, node_name)`: (pod UID, pod volume name) -> bytes used, for
every Docker volume labelled with this node whose size the engine reports (`UsageData.Size`;
-1, not computed, is left out). The shell makes the one `df` call per eviction period.
Must not: call Docker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.spec import emptydir_docker_prefix


def volume_usage(df: Mapping[str, Any], node_name: str) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for vol in df.get("Volumes") or []:
        labels = vol.get("Labels") or {}
        uid = str(labels.get(lb.POD_UID) or "")
        prefix = emptydir_docker_prefix(uid)
        name = str(vol.get("Name") or "")
        size = (vol.get("UsageData") or {}).get("Size")
        if labels.get(lb.NODE) != node_name or not uid or not name.startswith(prefix):
            continue
        if isinstance(size, int) and size >= 0:
            out[(uid, name.removeprefix(prefix))] = size
    return out
