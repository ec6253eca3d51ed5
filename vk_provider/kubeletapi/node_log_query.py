"""The node log query's parameters, read and checked as the 1.37 kubelet reads and checks them.

What lives here: `NodeLogQuery` (`query` split into services and files, `sinceTime`,
`untilTime`, `tailLines`, `boot`, `pattern`), `parse_query` (a request's parameters: None when
it has none, or the kubelet's 400 texts) and `validate` (the kubelet's 406 texts), after
k8s.io/kubernetes@v1.37.2 pkg/kubelet/kubelet_server_journal.go (newNodeLogQuery, validate,
safeServiceName), with error texts as apimachinery's field errors and aggregates print them.
Must not: read a log or touch the file system beyond the one `stat` of a queried file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

MAX_TAIL_LINES = 100_000
MAX_SERVICE_LENGTH = 256
MAX_SERVICES = 4
_UNSAFE_SERVICE_CHARACTERS = re.compile(r"[^a-zA-Z\-_.:0-9@]+")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


@dataclass(frozen=True)
class NodeLogQuery:
    services: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    tail_lines: int | None = None
    boot: int | None = None
    pattern: str = ""
    raw: Mapping[str, str] = field(default_factory=dict)  # the options as given, for error texts

    @property
    def has_options(self) -> bool:
        return any(x is not None for x in (self.since, self.until, self.tail_lines, self.boot)) or bool(
            self.pattern
        )


def _value(value: Any) -> str:
    """apimachinery's field.Error value: a string quoted, anything else as JSON."""
    return json.dumps(value) if not isinstance(value, str) else _go_quote(value)


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_value(value)}: {detail}"


def aggregate(errors: Sequence[str]) -> str:
    """utilerrors.Aggregate's Error(): one message, or `[a, b]` (duplicates once)."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _atoi(text: str) -> int | None:
    """Go's strconv.Atoi: an optional sign and decimal digits, nothing else."""
    return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None


def _rfc3339(text: str) -> datetime | None:
    if not _RFC3339.match(text):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


# The options that parse, with the kubelet's error detail when one does not.
_OPTIONS: tuple[tuple[str, Callable[[str], Any], Callable[[str], str]], ...] = (
    ("sinceTime", _rfc3339, lambda _: "invalid time format"),
    ("untilTime", _rfc3339, lambda _: "invalid time format"),
    ("boot", _atoi, lambda text: f"strconv.Atoi: parsing {_go_quote(text)}: invalid syntax"),
    ("tailLines", _atoi, lambda text: f"strconv.Atoi: parsing {_go_quote(text)}: invalid syntax"),
)


def parse_query(params: Mapping[str, Sequence[str]]) -> tuple[NodeLogQuery | None, list[str]]:
    """(the query, None when the request names no parameter of one; the kubelet's 400 errors)."""
    errors: list[str] = []
    queries = list(params.get("query", ()))
    files = tuple(q for q in queries if "/" in q or "\\" in q)
    services = tuple(q for q in queries if not ("/" in q or "\\" in q) and q.strip())
    if "query" in params and not files and not services:
        errors.append(invalid("query", queries, "may not be empty"))
    found: dict[str, Any] = {}
    raw: dict[str, str] = {}
    for name, parse, detail in _OPTIONS:
        text = (params.get(name) or [""])[0]
        if text:
            raw[name] = text
            found[name] = parse(text)
            if found[name] is None:
                errors.append(invalid(name, text, detail(text)))
    pattern = (params.get("pattern") or [""])[0]
    if errors:
        return None, errors
    query = NodeLogQuery(
        services, files, found.get("sinceTime"), found.get("untilTime"), found.get("tailLines"),
        found.get("boot"), pattern, raw,
    )  # fmt: skip
    return (None if query == NodeLogQuery() else query), []


def _service_problem(service: str) -> str:
    if len(service) > MAX_SERVICE_LENGTH:
        return f"length must be less than {MAX_SERVICE_LENGTH}"
    if _UNSAFE_SERVICE_CHARACTERS.search(service):
        return "input contains unsupported characters"
    return ""


def inside(log_dir: Path, relative: str) -> Path | None:
    """`relative` under `log_dir` resolved (symlinks followed), or None when that leaves it."""
    root = os.path.realpath(log_dir)
    target = os.path.realpath(os.path.join(root, relative.lstrip("/")))
    return Path(target) if os.path.commonpath([root, target]) == root else None


def _stat_problem(log_dir: Path, name: str) -> str:
    """os.Root.Stat of `name` under `log_dir`: it may not leave the directory."""
    target = inside(log_dir, name.replace("\\", "/"))  # a Windows client's separator, as the kubelet
    if target is None:
        return f"statat {name}: path escapes from parent"
    if not target.exists():
        return f"statat {name}: no such file or directory"
    return ""


def validate(query: NodeLogQuery, log_dir: Path) -> list[str]:
    """The kubelet's `nodeLogQuery.validate`: its 406 errors."""
    errors = [invalid("query", s, p) for s in query.services if (p := _service_problem(s))]
    if len(query.services) > MAX_SERVICES:
        errors.append(f"query: Too many: {len(query.services)}: must have at most {MAX_SERVICES} items")
    if not query.files and not query.services:
        errors.append("query: Required value: cannot be empty with options")
    elif query.files and query.services:
        both = f"[{' '.join(query.files)}], [{' '.join(query.services)}]"
        errors.append(invalid("query", both, "cannot specify a file and service"))
    elif len(query.files) > 1:
        errors.append(invalid("query", list(query.files), "cannot specify more than one file"))
    elif query.files and query.has_options:
        errors.append(invalid("query", list(query.files), "cannot specify file with options"))
    elif query.files and (problem := _stat_problem(log_dir, query.files[0])):
        errors.append(invalid("query", list(query.files), problem))
    if query.since and query.until and query.since > query.until:
        errors.append(invalid("untilTime", query.raw["untilTime"], "must be after `sinceTime`"))
    if query.boot is not None and query.boot > 0:
        errors.append(invalid("boot", query.boot, "must be less than 1"))
    if query.tail_lines is not None and not 0 <= query.tail_lines <= MAX_TAIL_LINES:
        errors.append(
            invalid("tailLines", query.tail_lines, f"must be between 0 and {MAX_TAIL_LINES}, inclusive")
        )
    try:  # RE2 (Go's regexp/syntax, Perl flags) is close to a subset of Python's re
        re.compile(query.pattern)
    except re.error as exc:
        errors.append(invalid("pattern", query.pattern, f"error parsing regexp: {exc}"))
    return errors
