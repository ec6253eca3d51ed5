"""Field errors as metav1 StatusCause dicts, worded like apimachinery's `field.Error`.

What lives here: `go_quote` (a value as field.Error prints it, Go's `%q`) and one constructor per
error type of `staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go` that the
sandbox reports (`required`, `invalid`, `not_supported`, `duplicate`, `forbidden`, `not_found`),
plus the plain `cause` and `child_path` (field.Path.Child).
Must not: validate anything itself or raise (callers turn causes into 422s).
"""

from __future__ import annotations

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _go_quoted_rune(c: str) -> str:
    if c in ('"', "\\"):
        return "\\" + c
    if c in _GO_ESCAPES:
        return _GO_ESCAPES[c]
    if c.isprintable():
        return c
    code = ord(c)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def go_quote(value: object) -> str:
    """A value as Go's field.Error prints it (%q, i.e. strconv.Quote, for strings: control and
    other unprintable characters escaped; %d for ints, %t for bools)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + "".join(map(_go_quoted_rune, value)) + '"'
    return str(value)


def child_path(path: str, key: str) -> str:
    """The path of field `key` under `path` (`spec` + `containers` -> `spec.containers`)."""
    return f"{path}.{key}" if path else key


def cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def required(field: str, detail: str = "") -> dict[str, str]:
    return cause("FieldValueRequired", field, "Required value" + (f": {detail}" if detail else ""))


def invalid(field: str, value: object, detail: str) -> dict[str, str]:
    return cause("FieldValueInvalid", field, f"Invalid value: {go_quote(value)}: {detail}")


def not_supported(field: str, value: object, supported: list[str]) -> dict[str, str]:
    values = ", ".join(go_quote(v) for v in supported)
    return cause(
        "FieldValueNotSupported", field, f"Unsupported value: {go_quote(value)}: supported values: {values}"
    )


def duplicate(field: str, value: object) -> dict[str, str]:
    return cause("FieldValueDuplicate", field, f"Duplicate value: {go_quote(value)}")


def forbidden(field: str, detail: str) -> dict[str, str]:
    return cause("FieldValueForbidden", field, f"Forbidden: {detail}")


def not_found(field: str, value: object) -> dict[str, str]:
    return cause("FieldValueNotFound", field, f"Not found: {go_quote(value)}")
