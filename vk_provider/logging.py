"""Log setup: readable text or JSON lines, each line with time, level and component.

What lives here: `setup_logging(level, fmt)`, `get_logger(component)` and `pod_ref(pod)`.
A pod's `namespace/name` is passed as `extra={"pod": pod_ref(pod)}` and appears in the
line. Must not: log secret values (callers pass names, never data).
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


def _timestamp(record: logging.LogRecord) -> str:
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{base}.{int(record.msecs):03d}Z"


def _component(record: logging.LogRecord) -> str:
    name = record.name
    return name[len(_ROOT) + 1 :] if name.startswith(_ROOT + ".") else name


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        pod = getattr(record, "pod", None)
        node = getattr(record, "node", None)
        parts = [_timestamp(record), f"{record.levelname:<7}", f"[{_component(record)}]"]
        if node:
            parts.append(f"node={node}")
        if pod:
            parts.append(f"pod={pod}")
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
        for key in ("pod", "node"):
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
