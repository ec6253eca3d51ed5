"""Log setup: klog-compatible structured lines, as text (klog's header and logfmt pairs) or JSON.

What lives here: `setup_logging(level, fmt, components)`, `get_logger(component)`, `ObjectRef`
(klog's `KObj`), `pod_ref(pod)` and `pod_fields(pod, **more)`. A line is a constant message plus
key/value pairs passed in `extra=`; every key is written, in the order given (`pod_fields(pod)`
gives a pod's `pod` and `uid`, plus e.g. `container=name`, `reason=why`).

The two formats follow the Kubernetes structured logging conventions
(k8s.io/klog/v2 and k8s.io/component-base/logs/json):
- text: `I1205 07:10:00.123456    4242 agent.py:123] "registered node" logger="node.agent" node="vk-1"`:
  klog's header (severity I/W/E, month and day, time with microseconds, process id, file:line),
  the quoted message, then `key=value` pairs in logfmt (strings quoted as Go's strconv.Quote,
  numbers and booleans bare), so a logfmt parser reads them;
- JSON: `{"ts":1733382600123.456,"caller":"agent.py:123","logger":"node.agent","msg":"...","v":0,...}`:
  `ts` in milliseconds since the epoch as component-base's JSON logger writes it, `v` the
  verbosity of an info line (0, or 4 for debug), no `v` on errors (with `err`); a warning, which
  klog's JSON has no level for, is written as an info line with `"level":"warning"`. An
  `ObjectRef` is `{"name":...,"namespace":...}` as klog's KObj marshals it.
An exception's traceback goes in `err` (its message) and `stacktrace` (one escaped string), so a
line stays one line.
Must not: log secret values (callers pass names, never data).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vk_common.log_ring import PROCESS_LOG

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_ROOT = "vk_provider"
# The attributes every LogRecord has: anything else on a record came in through `extra=`.
_RECORD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
_SEVERITY = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W"}  # ERROR and above: "E"
DEBUG_VERBOSITY = 4  # klog's V(4): the debug level of the Kubernetes logging conventions


@dataclass(frozen=True)
class ObjectRef:
    """A namespaced object in a log line, as klog's `KObj`: `ns/name` in text, an object in JSON."""

    name: str
    namespace: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def marshal(self) -> dict[str, str]:
        return {"name": self.name, "namespace": self.namespace} if self.namespace else {"name": self.name}


def _component(record: logging.LogRecord) -> str:
    name = record.name
    return name[len(_ROOT) + 1 :] if name.startswith(_ROOT + ".") else name


def _pairs(record: logging.LogRecord) -> list[tuple[str, Any]]:
    """The line's key/value pairs: `logger`, then every `extra=` key in the order given, then
    the exception's `err` and `stacktrace`."""
    pairs: list[tuple[str, Any]] = [("logger", _component(record))]
    pairs += [(k, v) for k, v in vars(record).items() if k not in _RECORD_ATTRS and v is not None and v != ""]
    if record.exc_info and record.exc_info[1] is not None:
        error = record.exc_info[1]
        pairs.append(("err", str(error) or type(error).__name__))
        pairs.append(("stacktrace", "".join(traceback.format_exception(*record.exc_info)).rstrip()))
    return pairs


def _caller(record: logging.LogRecord) -> str:
    return f"{record.filename}:{record.lineno}"


def _text_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(json.dumps(value, default=str, ensure_ascii=False), ensure_ascii=False)
    return json.dumps(str(value), ensure_ascii=False)


def _json_value(value: Any) -> Any:
    if isinstance(value, ObjectRef):
        return value.marshal()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        t = time.gmtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        severity = _SEVERITY.get(record.levelno, "E")
        header = (
            f"{severity}{time.strftime('%m%d %H:%M:%S', t)}.{micros:06d} {record.process or os.getpid():7d}"
        )
        parts = [f"{header} {_caller(record)}]", json.dumps(record.getMessage(), ensure_ascii=False)]
        parts += [f"{k}={_text_value(v)}" for k, v in _pairs(record)]
        return " ".join(parts)


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"ts": record.created * 1000.0, "caller": _caller(record)}
        pairs = _pairs(record)
        entry["logger"] = pairs[0][1]
        entry["msg"] = record.getMessage()
        if record.levelno < logging.ERROR:
            entry["v"] = DEBUG_VERBOSITY if record.levelno < logging.INFO else 0
        if record.levelno == logging.WARNING:
            entry["level"] = "warning"
        for key, value in pairs[1:]:
            entry[key] = _json_value(value)
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


def setup_logging(
    level: str = "info",
    fmt: str = "text",
    components: Mapping[str, str] | None = None,
    *,
    keep_recent: bool = False,
) -> None:
    """Configure the root handlers once for the whole process: stderr, and with `keep_recent`
    the ring of recent lines the node log query reads (log_ring.py; off, no line is formatted
    twice). `components` sets the
    level of one component and those under it (`{"pods": "debug", "kube.client": "warning"}`),
    as klog's `-vmodule` sets one file's verbosity."""
    formatter = JSONFormatter() if fmt == "json" else TextFormatter()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    if keep_recent:
        PROCESS_LOG.setFormatter(formatter)  # the same lines, kept for the node log query
        root.addHandler(PROCESS_LOG)
    root.setLevel(logging.WARNING)
    logging.getLogger(_ROOT).setLevel(_LEVELS.get(level, logging.INFO))
    for component, component_level in (components or {}).items():
        logging.getLogger(f"{_ROOT}.{component}").setLevel(_LEVELS.get(component_level, logging.INFO))


def get_logger(component: str) -> logging.Logger:
    return logging.getLogger(f"{_ROOT}.{component}")


def object_ref(obj: Mapping[str, Any]) -> ObjectRef:
    meta = obj.get("metadata") or {}
    return ObjectRef(str(meta.get("name", "")), str(meta.get("namespace") or ""))


def pod_ref(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def pod_fields(pod: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    """The `extra=` of a line about `pod`: its `pod` (an ObjectRef) and `uid`, and `more`
    (`container`, `reason`, ...)."""
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    return {"pod": object_ref(pod), **({"uid": uid} if uid else {}), **more}
