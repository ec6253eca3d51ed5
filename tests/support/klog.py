"""A reader of the provider's log lines in klog's two formats, as a log shipper parses them.

What lives here: `parse_text` (klog's header, the quoted message and logfmt `key=value` pairs
whose quoted values are Go/JSON string literals) and `parse_line` (either format, by its first
character). Both return a `Line`. Must not: accept a line a logfmt or JSON parser would reject.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_HEADER = re.compile(r"^([IWE])(\d{4} \d\d:\d\d:\d\d\.\d{6}) +(\d+) ([^ \]]+:\d+)\] ")
_KEY = re.compile(r" ([A-Za-z_][A-Za-z0-9_.-]*)=")
_BARE = re.compile(r"[^ \"]+")
_DECODER = json.JSONDecoder()


@dataclass
class Line:
    severity: str  # I, W or E (JSON: from `v` and `level`)
    msg: str
    caller: str
    pairs: dict[str, Any] = field(default_factory=dict)


def parse_text(line: str) -> Line:
    header = _HEADER.match(line)
    if header is None:
        raise ValueError(f"no klog header: {line!r}")
    rest = line[header.end() :]
    msg, end = _DECODER.raw_decode(rest)
    pairs: dict[str, Any] = {}
    while end < len(rest):
        key = _KEY.match(rest, end)
        if key is None:
            raise ValueError(f"not a key=value pair at {rest[end:]!r}")
        end = key.end()
        if rest.startswith('"', end):
            value, end = _DECODER.raw_decode(rest, end)
        else:
            bare = _BARE.match(rest, end)
            if bare is None:
                raise ValueError(f"no value for {key.group(1)} in {line!r}")
            value, end = bare.group(0), bare.end()
        pairs[key.group(1)] = value
    return Line(header.group(1), str(msg), header.group(4), pairs)


def parse_line(line: str) -> Line:
    if line.startswith("{"):
        entry = json.loads(line)
        severity = "E" if "v" not in entry else "W" if entry.get("level") == "warning" else "I"
        own = ("ts", "caller", "msg", "v", "level")
        return Line(severity, entry["msg"], entry["caller"], {k: v for k, v in entry.items() if k not in own})
    return parse_text(line)
