"""`generate`: the status generator called with the neutral defaults the status tests share.

No waiting reasons, no old status, no probe results, not terminal; a test passes only what it
varies. Must not: hold assertions, or build pods or runtime states (the test files do).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vk_provider.runtime.types import PodRuntimeState
from vk_provider.status.generate import generate_pod_status


def generate(
    pod: dict[str, Any], state: PodRuntimeState | None, *, host_ip: str, now: datetime, **kw: Any
) -> dict[str, Any]:
    args: dict[str, Any] = {
        "waiting": {},
        "pod_is_terminal": False,
        "old_status": None,
        "readiness": {},
        "started": {},
        "host_ip": host_ip,
        "now": now,
    }
    args.update(kw)
    return generate_pod_status(pod, state, **args)
