"""Name, label and key format checks of apimachinery, with upstream's messages.

What lives here: the DNS-1123 label and subdomain checks, qualified names (label keys,
annotation keys), label values and ConfigMap/Secret keys (`IsConfigMapKey`), each returning the
list of messages upstream's `staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go`
returns (RegexError's wording included), and their format regexes.
Must not: build causes, read schemas or know any kind (kinds.py applies these to objects).
"""

from __future__ import annotations

import re

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
    if not _QUALIFIED_NAME_RE.match(name):
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


_CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")


def config_key_errors(key: str) -> list[str]:
    """IsConfigMapKey (k8s.io/apimachinery pkg/util/validation/validation.go)."""
    errs = [_max_len_error(253)] if len(key) > 253 else []
    if not _CONFIG_KEY_RE.match(key):
        errs.append(
            _regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                "[-._a-zA-Z0-9]+",
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    if key in (".", ".."):
        errs.append(f"must not be '{key}'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs
