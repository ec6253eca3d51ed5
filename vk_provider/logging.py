"""Log setup: readable text or JSON lines, each line with time, level and component.

What lives here: `setup_logging(level, fmt)`, `get_logger(component)`, `pod_ref(pod)` and
`pod_fields(pod, **more)`. A line's context goes in `extra=` under the keys of `FIELDS`:
`node`, `pod` (`namespace/name`), `uid`, `container`, `reason`; `extra=pod_fields(pod)`
gives a pod's `pod` and `uid` (plus e.g. `container=name`, `reason=why`). JSON lines carry
each present field as its own key; text lines show `node=`, `pod=` and `container=`.
Must not: log secret values (callers pass names, never data).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_ROOT = "vk_provider"
# The context a line may carry (`extra=`), in the order JSON lines list them.
FIELDS = ("node", "pod", "uid", "container", "reason")


def _timestamp(record: logging.LogRecord) -> str:
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{base}.{int(record.msecs):03d}Z"


def _component(record: logging.LogRecord) -> str:
    name = record.name
    return name[len(_ROOT) + 1 :] if name.startswith(_ROOT + ".") else name


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), f"{record.levelname:<7}", f"[{_component(record)}]"]
        for key in ("node", "pod", "container"):
            value = getattr(record, key, None)
            if value:
                parts.append(f"{key}={value}")
        parts.append(record.getMessage())
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname.lower(),
            "component": _component(record),
            "msg": record.getMessage(),
        }
        for key in FIELDS:
            value = getattr(record, key, None)
            if value:
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def setup_logging(level: str = "info", fmt: str = "text") -> None:
    """Configure the root handler once for the whole process (stderr)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger(_ROOT).setLevel(_LEVELS.get(level, logging.INFO))


def get_logger(component: str) -> logging.Logger:
    return logging.getLogger(f"{_ROOT}.{component}")


def pod_ref(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def pod_fields(pod: Mapping[str, Any], **more: str) -> dict[str, str]:
    """The `extra=` of a line about `pod`: its `pod` and `uid`, and `more` (`container`, `reason`)."""
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    return {"pod": pod_ref(pod), **({"uid": uid} if uid else {}), **more}
