"""The fuzz suite's settings profiles and shared hypothesis strategies.

What lives here: the profiles (`fuzz`, the bounded one `make test` runs, and `fuzz-long`, a
campaign a hundred times longer, chosen with `HYPOTHESIS_PROFILE=fuzz-long`), `load_profile()`,
`budget(n)` (the settings of one target: `n` examples under `fuzz`, scaled under the profile in
force), and the strategies every fuzz test draws from: Kubernetes-ish JSON values
(`json_values`), nasty scalars (`nasty_scalars`), mutations of a valid JSON document
(`mutated_json`), of valid bytes (`mutated_bytes`) and of valid text (`mutated_text`).
Must not: import the code under test (the strategies know JSON, bytes and text, not the
parsers), or assert anything.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

PROFILE_ENV = "HYPOTHESIS_PROFILE"
DEFAULT_PROFILE = "fuzz"
_BASE_EXAMPLES = 100  # max_examples of the `fuzz` profile; budget(n) scales by the profile's own

# Every fuzz run draws anew (derandomize off); a failure prints its reproduce_failure blob and
# the fuzz conftest's seed. No example database: CI's checkout is fresh, and a local campaign
# should not replay an old failure into an unrelated run.
settings.register_profile(
    DEFAULT_PROFILE,
    max_examples=_BASE_EXAMPLES,
    deadline=None,
    derandomize=False,
    print_blob=True,
    database=None,
)
settings.register_profile(
    "fuzz-long", parent=settings.get_profile(DEFAULT_PROFILE), max_examples=100 * _BASE_EXAMPLES
)


def load_profile() -> str:
    """Load the profile `HYPOTHESIS_PROFILE` names (default `fuzz`); return its name."""
    name = os.environ.get(PROFILE_ENV, DEFAULT_PROFILE)
    settings.load_profile(name)
    return name


def budget(examples: int, **overrides: Any) -> settings:
    """One target's settings: `examples` under the `fuzz` profile, as many times more as the
    profile in force has examples beyond it (a hundred under `fuzz-long`); `overrides` are
    further settings of that target (e.g. a generous `deadline`)."""
    scale = max(1, settings.default.max_examples // _BASE_EXAMPLES)
    return settings(settings.default, max_examples=examples * scale, **overrides)


# --- JSON values ------------------------------------------------------------------------------

# Keys the API and its patches give meaning to, so mutations reach code past "unknown field".
K8S_KEYS = (
    "apiVersion", "kind", "metadata", "name", "namespace", "generateName", "uid", "labels",
    "annotations", "finalizers", "ownerReferences", "resourceVersion", "deletionTimestamp",
    "creationTimestamp", "spec", "status", "containers", "initContainers", "image", "command",
    "args", "env", "value", "valueFrom", "ports", "containerPort", "protocol", "resources",
    "limits", "requests", "cpu", "memory", "volumes", "volumeMounts", "mountPath", "subPath",
    "configMap", "secret", "emptyDir", "sizeLimit", "nodeName", "nodeSelector", "tolerations",
    "key", "operator", "values", "effect", "conditions", "type", "target", "selector",
    "matchLabels", "matchExpressions", "data", "binaryData", "stringData", "preconditions",
    "propagationPolicy", "gracePeriodSeconds", "dryRun", "op", "path", "from",
    "$patch", "$retainKeys", "$setElementOrder/containers", "$deleteFromPrimitiveList/finalizers",
)  # fmt: skip

# Scalars that broke parsers before (issue 13): huge exponents and numbers, non-ASCII digits,
# pointers with odd tokens, too-long names, NUL and backslashes.
NASTY_STRINGS = (
    "", " ", "0", "-1", "01", "1e1000000", "1e9999999999", "-1e-1000000", "1E+18", "9" * 400,
    "9" * 400 + "s", "1.5.6", "²", "٣", "1²", "a:²", "Ki", "16Gi", "500m", "1h30m", "-5s",
    "/metadata/finalizers/²", "/metadata/finalizers/-", "/spec/containers/0", "/", "~1~0", "~2",
    "Bad\\Name,x=1", "a=b,c!=d", "x in (a,b)", "!x", "a" * 254, "A" * 64, "default", "v1", "Pod",
    "\x00", "\\", "\ud7ff", "\ufeff", "null", "true", "[", "{", "'", '"',
)  # fmt: skip

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=24)
_ints = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from(
    [0, 1, -1, 2**31, 2**63 - 1, 2**63, 2**64, 10**30]
)
_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1e308, -0.0, 5e-324, 0.5])

nasty_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), _ints, _floats, st.sampled_from(NASTY_STRINGS), _text
)

keys: st.SearchStrategy[str] = st.sampled_from(K8S_KEYS) | st.sampled_from(NASTY_STRINGS) | _text


def json_values(max_leaves: int = 24) -> st.SearchStrategy[Any]:
    """JSON-serialisable values: nasty scalars in lists and mappings keyed like Kubernetes objects."""
    return st.recursive(
        nasty_scalars,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
        max_leaves=max_leaves,
    )


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into `doc` (keys and indexes), the root `()` included."""
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _paths(value, (*prefix, index))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return doc


def _delete(doc: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return doc
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    return doc


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


@st.composite
def mutated_json(draw: st.DrawFn, valid: Any, max_mutations: int = 3) -> Any:
    """`valid` (deep-copied) with a few mutations at drawn paths: a subtree replaced by any JSON
    value or a nasty scalar, removed, wrapped in a list, or turned into its string."""
    doc = copy.deepcopy(valid)
    for _ in range(draw(st.integers(min_value=1, max_value=max_mutations))):
        path = draw(st.sampled_from(_paths(doc)))
        action = draw(st.sampled_from(("replace", "scalar", "delete", "wrap", "stringify", "add")))
        current = _get(doc, path)
        if action == "replace":
            doc = _replace(doc, path, draw(json_values()))
        elif action == "scalar":
            doc = _replace(doc, path, draw(nasty_scalars))
        elif action == "delete":
            doc = _delete(doc, path)
        elif action == "wrap":
            doc = _replace(doc, path, [current])
        elif action == "stringify":
            doc = _replace(doc, path, str(current))
        elif isinstance(current, dict):
            current[draw(keys)] = draw(json_values(8))
        elif isinstance(current, list):
            current.insert(draw(st.integers(0, len(current))), draw(json_values(8)))
    return doc


@st.composite
def mutated_bytes(draw: st.DrawFn, valid: bytes, max_mutations: int = 4) -> bytes:
    """`valid` with a few byte-level mutations: flips, overwrites, insertions, deletions,
    truncation and duplicated slices (what a fuzzer does to a captured wire encoding)."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(min_value=1, max_value=max_mutations))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(("flip", "set", "insert", "delete", "truncate", "duplicate")))
        if action == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "set" and at < len(data):
            data[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]) | st.integers(0, 255))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif action == "truncate":
            del data[at:]
        elif action == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 32))]
    return bytes(data)


@st.composite
def mutated_text(draw: st.DrawFn, valid: str, fragments: Sequence[str], max_mutations: int = 4) -> str:
    """`valid` with a few text mutations: a fragment (from `fragments` or NASTY_STRINGS) inserted
    or overwriting a span, a span deleted or duplicated, or the text cut."""
    text = valid
    pieces = st.sampled_from(tuple(fragments) + NASTY_STRINGS) | _text
    for _ in range(draw(st.integers(min_value=1, max_value=max_mutations))):
        at = draw(st.integers(0, len(text)))
        end = min(len(text), at + draw(st.integers(0, 12)))
        action = draw(st.sampled_from(("insert", "overwrite", "delete", "duplicate", "truncate")))
        if action == "insert":
            text = text[:at] + draw(pieces) + text[at:]
        elif action == "overwrite":
            text = text[:at] + draw(pieces) + text[end:]
        elif action == "delete":
            text = text[:at] + text[end:]
        elif action == "duplicate":
            text = text[:end] + text[at:end] + text[end:]
        else:
            text = text[:at]
    return text
