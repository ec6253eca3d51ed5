"""Fuzzing the sandbox's patch engine (vk_sandbox.api.patch.apply_patch).

What is fuzzed: PATCH bodies of the three supported types against a stored Pod and Node:
JSON patches (valid operation lists mutated: ops, paths with odd tokens, wrong-typed fields),
merge and strategic merge patches (valid ones mutated, with `$patch`, `$retainKeys`,
`$setElementOrder` and `$deleteFromPrimitiveList` directives, and arbitrary JSON documents),
and arbitrary bodies (bytes that are not JSON, deep nesting). The property: the result is a
dict or the module's `PatchError` (400/415/422), never another exception, and the stored
object is not modified.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzzing import budget, json_values, mutated_bytes, mutated_json
from vk_sandbox.api.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    apply_patch,
)

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web",
        "namespace": "default",
        "labels": {"app": "web"},
        "finalizers": ["a", "b"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1"}],
    },
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "busybox:1",
                "env": [{"name": "A", "value": "1"}],
                "ports": [{"containerPort": 80}],
            }
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
    },
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
}
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"a": "b"}},
    "status": {
        "conditions": [{"type": "Ready", "status": "True"}],
        "addresses": [{"type": "InternalIP", "address": "1"}],
    },
}
TARGETS = {"Pod": POD, "Node": NODE}
JSON_PATCH_OPS: list[dict[str, Any]] = [
    {"op": "add", "path": "/metadata/labels/x", "value": "y"},
    {"op": "replace", "path": "/spec/containers/0/image", "value": "b:2"},
    {"op": "remove", "path": "/metadata/finalizers/0"},
    {"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/app2"},
    {"op": "copy", "from": "/spec/containers/0", "path": "/spec/containers/-"},
    {"op": "test", "path": "/status/phase", "value": "Running"},
]
MERGE: dict[str, Any] = {
    "metadata": {"labels": {"app": None, "x": "y"}, "finalizers": ["c"]},
    "spec": {"containers": [{"name": "app", "image": "b:2"}]},
    "status": {"conditions": [{"type": "Ready", "status": "False"}]},
}
STRATEGIC: dict[str, Any] = {
    "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "labels": {"$patch": "replace", "z": "1"}},
    "spec": {
        "$setElementOrder/containers": [{"name": "app"}],
        "containers": [{"name": "app", "env": [{"name": "A", "$patch": "delete"}]}],
        "volumes": [{"name": "data", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}],
    },
    "status": {"conditions": [{"type": "Ready", "status": "False"}]},
}
PATCHES = {JSON_PATCH: JSON_PATCH_OPS, MERGE_PATCH: MERGE, STRATEGIC_MERGE_PATCH: STRATEGIC}


def _applies_or_patch_error(kind: str, body: bytes | str, content_type: str) -> None:
    target = TARGETS[kind]
    before = copy.deepcopy(target)
    try:
        result = apply_patch(target, body, content_type, kind=kind, api_version="v1")
    except PatchError as exc:
        assert exc.code in (400, 415, 422), exc.code
    else:
        assert isinstance(result, dict)
    assert target == before, "the stored object was modified"


_kinds = st.sampled_from(sorted(TARGETS))
_types = st.sampled_from(sorted(PATCHES))


@budget(500)
@given(kind=_kinds, content_type=_types, data=st.data())
def test_mutated_patches_apply_or_raise_patch_error(
    kind: str, content_type: str, data: st.DataObject
) -> None:
    patch = data.draw(mutated_json(PATCHES[content_type], max_mutations=4))
    _applies_or_patch_error(kind, json.dumps(patch), content_type)


@budget(600)
@given(kind=_kinds, content_type=_types, patch=json_values())
def test_arbitrary_documents_apply_or_raise_patch_error(kind: str, content_type: str, patch: Any) -> None:
    _applies_or_patch_error(kind, json.dumps(patch), content_type)


@budget(400)
@given(
    kind=_kinds,
    content_type=_types,
    body=mutated_bytes(json.dumps(STRATEGIC).encode())
    | st.binary(max_size=64)
    | st.integers(1, 100_000).map(lambda n: "[" * n),
)
def test_arbitrary_bodies_apply_or_raise_patch_error(kind: str, content_type: str, body: bytes | str) -> None:
    _applies_or_patch_error(kind, body, content_type)
