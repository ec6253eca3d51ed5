"""The kinds of value the configuration table is made of, and how each is read, shown and described.

What lives here: `Invalid` (a bad value at a key path), `show` (a value as a message may print
it: never the content of a file that is no configuration), `Kind` and its kinds: `Bool`,
`PositiveInt`, `PositiveNumber`, `Str`, `Enum`, `Duration`, `Quantity`, `StrList`, `StrMap`,
`Section` (a mapping that becomes a frozen dataclass, unknown keys refused) and `ListOf`. Each
parses a YAML value at a key path, dumps a field back to YAML, and gives its JSON Schema. The
table itself, and the kinds that know Kubernetes rules (labels, log components, paths), are in
vk_provider/config_load.py. Must not: know any key of the configuration, or read a file.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from vk_common.quantity import (
    MAX_QUANTITY,
    DurationOutOfRange,
    QuantityOutOfRange,
    format_duration,
    parse_duration,
    parse_quantity,
)


class Invalid(Exception):
    """Raised while walking the data; turned into a ConfigError with the source name."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


def show(value: Any) -> str:
    """How a bad value appears in a message: as the user would have written it in YAML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def type_of(value: Any) -> str:
    """What a value is, without its content: for data that may not be a configuration at all."""
    if isinstance(value, str):
        return "text"
    if value is None or isinstance(value, bool | list | Mapping):
        return show(value)
    return "a number" if isinstance(value, int | float) else f"a YAML {type(value).__name__}"


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
# An unknown key is named in a message only when it could be a mistyped key (the longest known
# one has 20 characters): a file that is no configuration (a symlink to /etc/shadow, a private
# key) must not have its content printed as "unknown keys".
SHOWN_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,23}")


def unknown_key(path: str, key: Any, known: Iterable[str]) -> Invalid:
    """The error for a key no table knows: its path when the key is shown, else the section's."""
    known_keys = f"known keys here: {', '.join(known)}"
    if isinstance(key, str) and SHOWN_KEY.fullmatch(key):
        return Invalid(join_path(path, key), f"unknown key ({known_keys})")
    return Invalid(path, f"unknown key, not shown as it is not a key name ({known_keys})")


def join_path(path: str, key: str) -> str:
    """`path.key`, or `path["key"]` (JSON-escaped) for a key a message could not show plainly."""
    if not _PLAIN_KEY.fullmatch(key):
        return f"{path}[{json.dumps(key)}]"
    return f"{path}.{key}" if path else key


# --- value kinds: parse a YAML value into the dataclass value, and dump it back -----------------


class Kind(abc.ABC):
    @abc.abstractmethod
    def parse(self, value: Any, path: str) -> Any: ...

    @abc.abstractmethod
    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema (draft 7) of the values `parse` may accept: their shape and types;
        `parse` keeps the finer checks (quantities, durations, label syntax)."""

    def dump(self, value: Any) -> Any:
        return value


class Bool(Kind):
    def parse(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise Invalid(path, f"expected true or false, got {show(value)}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


class PositiveInt(Kind):
    def parse(self, value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise Invalid(path, f"expected a positive integer, got {show(value)}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1}


class PositiveNumber(Kind):
    def parse(self, value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise Invalid(path, f"expected a positive number, got {show(value)}")
        return float(value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "number", "exclusiveMinimum": 0}


class Str(Kind):
    def __init__(self, check: Callable[[str], str | None] | None = None, pattern: str | None = None) -> None:
        self.check = check
        self.pattern = pattern  # for the JSON Schema only: a coarse form of `check`

    def parse(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise Invalid(path, f"expected a string, got {show(value)}")
        problem = self.check(value) if self.check else None
        if problem:
            raise Invalid(path, problem)
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": self.pattern} if self.pattern else {"type": "string"}


class Enum(Kind):
    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def parse(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or value not in self.choices:
            raise Invalid(path, f"expected one of {', '.join(self.choices)}, got {show(value)}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"enum": list(self.choices)}


class Duration(Kind):
    def parse(self, value: Any, path: str) -> float:
        if not isinstance(value, str):
            raise Invalid(path, f"expected a duration like '10s', '5m' or '1h30m', got {show(value)}")
        try:
            seconds = parse_duration(value)
        except DurationOutOfRange:
            raise Invalid(
                path, f"expected a duration of at most 2562047h47m16.854775807s, got {value!r}"
            ) from None
        except ValueError:
            raise Invalid(path, f"expected a duration like '10s', '5m' or '1h30m', got {value!r}") from None
        if seconds <= 0:
            raise Invalid(path, f"expected a positive duration, got {value!r}")
        return seconds

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "description": "a duration like '10s', '5m' or '1h30m'"}

    def dump(self, value: Any) -> str:
        return format_duration(value)


def plain_text(value: Any) -> str:
    """A scalar as the text a quantity is parsed from ("" for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return ""
    try:
        return str(value)
    except ValueError:  # an int of more digits than str() converts
        return ""


class Quantity(Kind):
    """A non-negative Kubernetes quantity, kept as written; `auto` where Docker can tell."""

    def __init__(self, allow_auto: bool) -> None:
        self.allow_auto = allow_auto

    def parse(self, value: Any, path: str) -> str:
        if self.allow_auto and value == "auto":
            return "auto"
        text = plain_text(value)
        try:
            valid = parse_quantity(text) >= 0
        except QuantityOutOfRange:
            raise Invalid(
                path, f"expected a Kubernetes quantity of at most {MAX_QUANTITY}, got {show(value)}"
            ) from None
        except ValueError:
            valid = False
        if not valid:
            auto = " or 'auto'" if self.allow_auto else ""
            raise Invalid(
                path, f"expected a Kubernetes quantity like '500m', '16Gi' or '4'{auto}, got {show(value)}"
            )
        return text

    def json_schema(self) -> dict[str, Any]:
        auto = " or 'auto'" if self.allow_auto else ""
        return {"type": ["string", "number"], "description": f"a Kubernetes quantity{auto}"}


class StrMap(Kind):
    """A mapping of string keys to string values, each pair checked by `entry` at its key's path."""

    what = "a mapping"

    def parse(self, value: Any, path: str) -> dict[str, str]:
        if not isinstance(value, Mapping):
            raise Invalid(path, f"expected {self.what}, got {show(value)}")
        return {
            str(key): self.entry(key, val, f"{path}[{json.dumps(str(key))}]") for key, val in value.items()
        }

    @abc.abstractmethod
    def entry(self, key: Any, value: Any, where: str) -> str:
        """The value to keep for `key`, or Invalid at `where`."""

    def value_schema(self) -> dict[str, Any]:
        return {"type": "string"}

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": self.value_schema()}

    def dump(self, value: Any) -> dict[str, str]:
        return dict(value)


class Section(Kind):
    """A nested mapping that becomes a frozen dataclass; unknown keys are refused."""

    def __init__(
        self,
        cls: type[Any],
        fields: Iterable[tuple[str, str, Kind]],
        check: Callable[[Any, str], None] | None = None,
    ) -> None:
        self.cls = cls
        self.fields = {key: (attr, kind) for key, attr, kind in fields}
        self.check = check
        self._required = {
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }

    def parse(self, value: Any, path: str) -> Any:
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise Invalid(path, f"expected a mapping, got {show(value)}")
        kwargs: dict[str, Any] = {}
        for key, item in value.items():
            if key not in self.fields:
                raise unknown_key(path, key, self.fields)
            attr, kind = self.fields[key]
            kwargs[attr] = kind.parse(item, join_path(path, key))
        for key, (attr, _) in self.fields.items():
            if attr not in kwargs and attr in self._required:
                raise Invalid(join_path(path, key), "is required")
        result = self.cls(**kwargs)
        if self.check:
            self.check(result, path)
        return result

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "additionalProperties": False,
            "properties": {key: kind.json_schema() for key, (_, kind) in self.fields.items()},
        }
        required = [key for key, (attr, _) in self.fields.items() if attr in self._required]
        if required:
            schema["required"] = required
        return schema

    def dump(self, value: Any) -> dict[str, Any]:
        return {key: kind.dump(getattr(value, attr)) for key, (attr, kind) in self.fields.items()}


class ListOf(Kind):
    """A list of `item`s; `what` names the expected value in an error."""

    what = "a list"

    def __init__(self, item: Kind) -> None:
        self.item = item

    def parse(self, value: Any, path: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise Invalid(path, f"expected {self.what}, got {show(value)}")
        return tuple(self.item.parse(v, f"{path}[{i}]") for i, v in enumerate(value))

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.json_schema()}

    def dump(self, value: Any) -> list[Any]:
        return [self.item.dump(v) for v in value]


class StrList(ListOf):
    what = "a list of strings"

    def __init__(self, item: Str) -> None:
        super().__init__(item)


# --- checks on single strings -------------------------------------------------------------------
