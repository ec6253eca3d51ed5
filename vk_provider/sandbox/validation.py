"""Object validation for the sandbox apiserver: official v1.32 schemas plus the kind rules that matter.

Lives here: the apimachinery name/label format checks (with upstream's messages, from
`staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go`), schema validation against
kubernetes-validate's `v1.32.0-local-strict` definitions turned into metav1 StatusCause dicts,
unknown-field detection for `fieldValidation=Strict|Warn`, and the pod rules (names, images, update
immutability, mirror-pod annotation) from `pkg/apis/core/validation/validation.go`.
Must not: touch the store, build HTTP responses or raise ApiError (callers turn causes into 422s).
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

SCHEMA_VERSION = "v1.32.0-local-strict"

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"

_QUALIFIED_NAME_RE = re.compile(f"^{QUALIFIED_NAME_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^{LABEL_VALUE_FMT}$")
_DNS1123_LABEL_RE = re.compile(f"^{DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")

_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # Same shape as upstream RegexError, double spaces included.
    s = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            s += " or "
        s += f"'{example}', "
    return s + f"regex used for validation is '{fmt}')"


def _max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(_max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
                DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


def dns1123_label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(_max_len_error(63))
    if not _DNS1123_LABEL_RE.match(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                "my-name",
                "123-abc",
            )
        )
    return errs


def qualified_name_errors(value: str) -> list[str]:
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len_error(63))
    if name and not _QUALIFIED_NAME_RE.match(name):
        errs.append(
            "name part "
            + _regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(_max_len_error(63))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


def go_quote(value: object) -> str:
    """A value as Go's field.Error prints it (%q for strings, %d for ints, %t for bools)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return str(value)


# ---------------------------------------------------------------------------------------------
# The packaged official schemas (read once per process)


@functools.cache
def definitions() -> dict[str, Any]:
    """`$defs` of kubernetes-validate's v1.32 strict `_definitions.json` (x-kubernetes extensions kept)."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / SCHEMA_VERSION
    with (root / "_definitions.json").open("rb") as f:
        defs: dict[str, Any] = json.load(f)["$defs"]
    return defs


@functools.cache
def _gvk_index() -> dict[tuple[str, str], str]:
    index: dict[tuple[str, str], str] = {}
    for name, schema in definitions().items():
        if "WatchEvent" in name:
            continue
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            group, version = gvk.get("group", ""), gvk["version"]
            api_version = f"{group}/{version}" if group else version
            index.setdefault((api_version, gvk["kind"]), name)
    return index


def definition_name(api_version: str, kind: str) -> str | None:
    """The `$defs` key of the top-level type apiVersion/kind, e.g. `io.k8s.api.core.v1.Pod`."""
    return _gvk_index().get((api_version, kind))


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    """Follow a `$ref` (always local `#/$defs/...` in these files) to its definition."""
    ref = schema.get("$ref")
    if ref is None:
        return schema
    target: dict[str, Any] = definitions()[ref.rsplit("/", 1)[-1]]
    return target
