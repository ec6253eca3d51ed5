"""Fuzzing the sandbox's label and field selectors (vk_sandbox.storage.selectors).

What is fuzzed: the outside input, the `labelSelector` and `fieldSelector` query strings (valid
ones mutated with the grammar's operators and escapes, and arbitrary text), applied to labels
and to mutated objects. The properties: a query string parses to a selector or raises
`SelectorError` (answered 400), never another exception; a parsed selector applies to any
labels or object without raising; a label selector's requirements do not depend on their order.
The provider has no selector parser of its own: it only writes selector strings.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzzing import budget, mutated_json, mutated_text
from vk_sandbox.storage.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)

LABEL_SELECTOR = "app=web,tier!=db,env in (prod, staging),!canary,zone notin (a),version"
LABEL_FRAGMENTS = (
    "=",
    "==",
    "!=",
    "!",
    "in",
    "notin",
    "(",
    ")",
    ",",
    " ",
    "a/b",
    "x.io/y",
    "-",
    "_",
    ">",
    "<",
)
FIELD_SELECTOR = r"metadata.name=web,spec.nodeName!=n1,status.phase==Running,metadata.namespace=a\,b"
FIELD_FRAGMENTS = (
    "=",
    "==",
    "!=",
    ",",
    "\\",
    "\\,",
    "\\=",
    "\\\\",
    "metadata.name",
    "spec.nodeName",
    "status.podIP",
)
RESOURCES = ("pods", "nodes", "events", "secrets", "namespaces", "configmaps", "replicationcontrollers")
LABELS = st.dictionaries(
    st.sampled_from(["app", "tier", "env", "canary", "zone", "version", "a/b"]), st.text(max_size=8)
)
OBJECT: dict[str, Any] = {
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler"},
    "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}]},
    "type": "Opaque",
}


@budget(1500)
@given(
    text=mutated_text(LABEL_SELECTOR, LABEL_FRAGMENTS, max_mutations=5) | st.text(max_size=30), labels=LABELS
)
def test_label_selectors_parse_or_raise_selector_error(text: str, labels: dict[str, str]) -> None:
    try:
        selector = parse_label_selector(text)
    except SelectorError:
        return
    selector.matches(labels)
    reordered = ",".join(reversed(_split_top_level(text)))
    with contextlib.suppress(SelectorError):  # splitting at commas is not the grammar: it may not parse
        assert set(parse_label_selector(reordered).requirements) == set(selector.requirements), reordered


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [*parts, current]


@budget(800)
@given(
    text=mutated_text(FIELD_SELECTOR, FIELD_FRAGMENTS, max_mutations=5) | st.text(max_size=30),
    resource=st.sampled_from(RESOURCES),
    obj=mutated_json(OBJECT, max_mutations=2),
)
def test_field_selectors_parse_or_raise_selector_error(text: str, resource: str, obj: Any) -> None:
    try:
        selector = parse_field_selector(text, resource)
    except SelectorError:
        return
    if isinstance(obj, dict):
        selector.matches(obj)
