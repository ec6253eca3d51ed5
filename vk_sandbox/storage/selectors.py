"""Label and field selectors as the real apiserver parses and applies them.

Lives here: the label selector grammar of `staging/src/k8s.io/apimachinery/pkg/labels/selector.go`
(=, ==, !=, in, notin, exists, !key; its parse error messages), the field selector grammar of
`staging/src/k8s.io/apimachinery/pkg/fields/selector.go` (=, ==, !=, `\\` escapes), and the
per-resource selectable fields (`ToSelectableFields` in `pkg/registry/core/*/strategy.go` and the
field label conversions in `pkg/apis/core/v1/conversion.go`).
Must not: know about HTTP or the store; SelectorError carries only the message (callers answer 400).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vk_sandbox.api.validation.field import go_quote
from vk_sandbox.api.validation.names import label_value_errors, qualified_name_errors


class SelectorError(Exception):
    """A selector that does not parse, or names a field the resource cannot be selected by."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------------------------------------
# Label selectors


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "==", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in ("=", "==", "in"):
            return self.key in labels and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        return self.key not in labels  # "!"


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


_SPECIAL = "=!(),><"
_KEYWORDS = {"in": "in", "notin": "notin"}
_SYMBOLS = {")": ")", ",": ",", "!": "!", "==": "==", "=": "=", ">": ">", "<": "<", "!=": "!=", "(": "("}
_IDENT = "ident"
_EOS = "eos"
_ERROR = "error"


def _lex(s: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in " \t\r\n":
            i += 1
        if i >= n:
            items.append((_EOS, ""))
            return items
        if s[i] in _SPECIAL:
            buf, last = "", None
            while i < n and s[i] in _SPECIAL:
                buf += s[i]
                if buf in _SYMBOLS:
                    last = buf
                    i += 1
                elif last is not None:
                    break
                else:
                    i += 1
            if last is None:
                items.append((_ERROR, f"error expected: keyword found '{buf}'"))
            else:
                items.append((_SYMBOLS[last], last))
            continue
        start = i
        while i < n and s[i] not in _SPECIAL and s[i] not in " \t\r\n":
            i += 1
        word = s[start:i]
        items.append((_KEYWORDS.get(word, _IDENT), word))


class _LabelParser:
    def __init__(self, s: str) -> None:
        self.items = _lex(s)
        self.pos = 0

    def _look(self, values_ctx: bool = True) -> tuple[str, str]:
        tok, lit = self.items[self.pos]
        if values_ctx and tok in ("in", "notin"):
            tok = _IDENT
        return tok, lit

    def _take(self, values_ctx: bool = True) -> tuple[str, str]:
        item = self._look(values_ctx)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self._look()
            if tok in (_IDENT, "!"):
                try:
                    reqs.append(self._requirement())
                except SelectorError as e:
                    raise SelectorError(f"unable to parse requirement: {e.message}") from None
                t, lit2 = self._take()
                if t == _EOS:
                    return reqs
                if t == ",":
                    t2, l2 = self._look()
                    if t2 not in (_IDENT, "!"):
                        raise SelectorError(f"found '{l2}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{lit2}', expected: ',' or 'end of string'")
            if tok == _EOS:
                return reqs
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        tok, lit = self._take()
        op = ""
        if tok == "!":
            op = "!"
            tok, lit = self._take()
        if tok != _IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        key_errs = qualified_name_errors(key)
        if key_errs:
            raise SelectorError(f"key: Invalid value: {go_quote(key)}: {'; '.join(key_errs)}")
        if op == "!" or self._look()[0] in (_EOS, ","):
            return Requirement(key, op or "exists")
        tok, lit = self._take(values_ctx=False)
        if tok not in ("in", "notin", "=", "==", "!=", ">", "<"):
            raise SelectorError(f"found '{lit}', expected: '=', '!=', '==', 'in', notin'")
        if tok in (">", "<"):
            raise SelectorError(f"found '{lit}', expected: '=', '!=', '==', 'in', notin'")
        values = self._set_values() if tok in ("in", "notin") else self._exact_value()
        for i, v in enumerate(values):
            errs = label_value_errors(v)
            if errs:
                raise SelectorError(f"values[{i}][{key}]: Invalid value: {go_quote(v)}: {'; '.join(errs)}")
        return Requirement(key, tok, tuple(sorted(set(values))))

    def _set_values(self) -> list[str]:
        tok, lit = self._take()
        if tok != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._look()
        if tok == ")":
            self._take()
            return [""]
        if tok not in (_IDENT, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values: list[str] = []
        while True:
            tok, lit = self._take()
            if tok == _IDENT:
                values.append(lit)
                tok2, lit2 = self._look()
                if tok2 == ",":
                    continue
                if tok2 == ")":
                    self._take()
                    return values
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == ",":
                if not values:
                    values.append("")
                tok2, _ = self._look()
                if tok2 == ")":
                    values.append("")
                    self._take()
                    return values
                if tok2 == ",":
                    self._take()
                    values.append("")
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> list[str]:
        tok, lit = self._look()
        if tok in (_EOS, ","):
            return [""]
        tok, lit = self._take()
        if tok == _IDENT:
            return [lit]
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse_label_selector(s: str) -> LabelSelector:
    """Parse a labelSelector query parameter; raise SelectorError with upstream's message."""
    if not s.strip():
        return LabelSelector()
    reqs = _LabelParser(s).parse()
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


# ---------------------------------------------------------------------------------------------
# Field selectors


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur


def _s(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _pod_ip(obj: Mapping[str, Any]) -> str:
    ips = _get(obj, "status", "podIPs") or []
    if ips:
        return _s(ips[0].get("ip"))
    return _s(_get(obj, "status", "podIP"))


_Getter = Callable[[Mapping[str, Any]], str]


def _path(*p: str) -> _Getter:
    return lambda obj: _s(_get(obj, *p))


_META: dict[str, _Getter] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

_FIELDS: dict[str, dict[str, _Getter]] = {
    "pods": {
        **_META,
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda o: "true" if _get(o, "spec", "hostNetwork") else "false",
        "status.phase": _path("status", "phase"),
        "status.podIP": _pod_ip,
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "nodes": {
        **_META,
        "spec.unschedulable": lambda o: "true" if _get(o, "spec", "unschedulable") else "false",
    },
    "events": {
        **_META,
        **{
            f"involvedObject.{f}": _path("involvedObject", f)
            for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
        },
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
    "secrets": {**_META, "type": _path("type")},
    "namespaces": {**_META, "status.phase": _path("status", "phase")},
    # pkg/registry/resource/resourceslice/strategy.go toSelectableFields (cluster-scoped: no namespace)
    "resourceslices": {
        "metadata.name": _path("metadata", "name"),
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.driver": _path("spec", "driver"),
        "spec.pool.name": _path("spec", "pool", "name"),
    },
}


def field_value(obj: Mapping[str, Any], resource: str, field_name: str) -> str | None:
    """The selectable value of field_name on obj, or None if the resource does not support it."""
    getter = _FIELDS.get(resource, _META).get(field_name)
    return None if getter is None else getter(obj)


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str  # "=", "==" or "!="
    value: str

    def matches(self, actual: str) -> bool:
        return (actual == self.value) != (self.operator == "!=")


@dataclass(frozen=True)
class FieldSelector:
    resource: str
    requirements: tuple[FieldRequirement, ...] = field(default=())

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for r in self.requirements:
            actual = field_value(obj, self.resource, r.field)
            if actual is None or not r.matches(actual):
                return False
        return True


def _split_terms(s: str) -> list[str]:
    terms, cur, escaped = [], "", False
    for ch in s:
        if escaped:
            cur += ch
            escaped = False
        elif ch == "\\":
            cur += ch
            escaped = True
        elif ch == ",":
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    terms.append(cur)
    return terms


def _unescape(v: str) -> str:
    if not any(c in v for c in "\\,="):
        return v
    out, in_slash = "", False
    for ch in v:
        if in_slash:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out += ch
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {ch}")
        else:
            out += ch
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return out


def parse_field_selector(s: str, resource: str) -> FieldSelector:
    """Parse a fieldSelector for resource; unsupported fields raise `field label not supported: f`."""
    if not s:
        return FieldSelector(resource)
    supported = _FIELDS.get(resource, _META)
    reqs: list[FieldRequirement] = []
    for term in _split_terms(s):
        if not term:
            continue
        for i in range(len(term)):
            op = next((o for o in ("!=", "==", "=") if term.startswith(o, i)), None)
            if op is not None:
                lhs, rhs = term[:i], term[i + len(op) :]
                break
        else:
            raise SelectorError(f"invalid selector: '{s}'; can't understand '{term}'")
        reqs.append(FieldRequirement(lhs, op, _unescape(rhs)))
    for r in reqs:
        if r.field not in supported:
            raise SelectorError(f"field label not supported: {r.field}")
    return FieldSelector(resource, tuple(reqs))
