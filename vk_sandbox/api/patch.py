"""PATCH bodies applied to stored objects, as the real apiserver applies them.

Lives here: strategic merge patch driven by the `x-kubernetes-patch-strategy` /
`x-kubernetes-patch-merge-key` extensions of the official schemas (validation/schema.py; algorithm of
`staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go` with the server's options
MergeParallelList and IgnoreUnmatchedNulls), JSON merge patch (RFC 7386) and JSON patch (RFC 6902,
error texts of evanphx/json-patch), and the content-type dispatch with its 415 answer.
Must not: touch the store, check preconditions (a `metadata.uid` in a patch is merged like any field;
the caller compares it with the stored uid) or validate the result.
"""

from __future__ import annotations

import json
from typing import Any

from vk_common.objects import copy_json
from vk_sandbox.api.validation.schema import (
    MAX_DEPTH,
    definition_name,
    definitions,
    resolve,
    too_deep,
)

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# What this server accepts, in the order the real server lists them in its 415 message; server-side
# apply is not implemented, so application/apply-patch+yaml is not offered.
SUPPORTED_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)
JSON_PATCH_FAILED = "the server rejected our request due to an error in our request"


class PatchError(Exception):
    """A patch that cannot be applied: code 400 (malformed), 422 (cannot apply) or 415 (media type).

    message is what the real server puts in the Status; detail, when set, is the underlying error
    the real server does not show (JSON patch failures), for logs."""

    def __init__(self, code: int, message: str, detail: str = "", *, generic: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail
        # built by NewGenericServerResponse (k8s.io/apimachinery pkg/api/errors/errors.go), whose
        # Status carries an empty `details: {}`
        self.generic = generic

    @property
    def reason(self) -> str:
        return {400: "BadRequest", 415: "UnsupportedMediaType", 422: "Invalid"}.get(
            self.code, "InternalError"
        )


def _unsupported(allowed: tuple[str, ...]) -> PatchError:
    return PatchError(
        415,
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(allowed),
    )


def apply_patch(
    obj: dict[str, Any], patch: bytes | str, content_type: str, *, kind: str, api_version: str
) -> dict[str, Any]:
    """Apply a PATCH request body of the given Content-Type to obj (not modified); return the result."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in SUPPORTED_PATCH_TYPES:
        # go-restful refuses a Content-Type the PATCH route does not consume before the patch
        # handler runs; the apiserver's serviceErrorHandler (k8s.io/apiserver pkg/server/handler.go)
        # turns that into NewGenericServerResponse(415, ..., "415: Unsupported Media Type")
        raise PatchError(415, "415: Unsupported Media Type", generic=True)
    if media_type == STRATEGIC_MERGE_PATCH and definition_name(api_version, kind) is None:
        raise _unsupported((JSON_PATCH, MERGE_PATCH))
    try:
        doc = json.loads(patch)
        if too_deep(doc):
            raise ValueError(f"exceeded max depth of {MAX_DEPTH}")
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise PatchError(400, f"error decoding patch: {e}") from None
    if media_type == JSON_PATCH:
        try:
            return json_patch(obj, doc)
        except PatchError as e:
            if e.code != 422:
                raise
            # The apiserver answers a failed operation with NewGenericServerResponse(422), whose
            # message hides the json-patch error (staging/.../endpoints/handlers/patch.go).
            raise PatchError(422, JSON_PATCH_FAILED, detail=e.message, generic=True) from None
    if media_type == MERGE_PATCH:
        merged = merge_patch(obj, doc)
        if not isinstance(merged, dict):
            raise PatchError(
                400, "json: cannot unmarshal non-object into Go value of type map[string]interface {}"
            )
        return merged
    if not isinstance(doc, dict):
        raise PatchError(400, "json: cannot unmarshal array into Go value of type map[string]interface {}")
    return strategic_merge(obj, doc, kind=kind, api_version=api_version)


# ---------------------------------------------------------------------------------------------
# RFC 7386


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = copy_json(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------------------------------------
# RFC 6902


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(400, f"invalid JSON pointer: {path!r}")
    if not path:
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _is_index(token: str) -> bool:
    """ASCII digits only, as Go's strconv.Atoi reads them (str.isdigit also takes "²")."""
    return token.isascii() and token.isdigit()


def _index(token: str, size: int, *, allow_end: bool, path: str, op: str) -> int:
    if allow_end and token == "-":
        return size
    if not _is_index(token) or (len(token) > 1 and token.startswith("0")):
        raise PatchError(422, f"{op} operation does not apply: doc is missing path: {path}: missing value")
    i = int(token)
    if i > size or (i == size and not allow_end):
        raise PatchError(422, f"Unable to access invalid index: {i}: invalid index referenced")
    return i


def _parent(doc: Any, tokens: list[str], path: str, op: str) -> Any:
    cur = doc
    for t in tokens[:-1]:
        if isinstance(cur, dict) and t in cur:
            cur = cur[t]
        elif isinstance(cur, list) and _is_index(t) and int(t) < len(cur):
            cur = cur[int(t)]
        else:
            raise PatchError(
                422, f'{op} operation does not apply: doc is missing path: "{path}": missing value'
            )
    if not isinstance(cur, dict | list):
        raise PatchError(422, f'{op} operation does not apply: doc is missing path: "{path}": missing value')
    return cur


def _get_path(doc: Any, path: str, op: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path, op)
    key = tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise PatchError(422, f"{op} operation does not apply: doc is missing key: {path}: missing value")
        return parent[key]
    return parent[_index(key, len(parent), allow_end=False, path=path, op=op)]


def _add(doc: Any, path: str, value: Any, op: str = "add") -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path, op)
    key = tokens[-1]
    if isinstance(parent, dict):
        parent[key] = value
    else:
        parent.insert(_index(key, len(parent), allow_end=True, path=path, op=op), value)
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError(422, "unable to remove the whole document")
    parent = _parent(doc, tokens, path, op)
    key = tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise PatchError(422, f"Unable to remove nonexistent key: {key}: missing value")
        return parent.pop(key)
    return parent.pop(_index(key, len(parent), allow_end=False, path=path, op=op))


def json_patch(obj: dict[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902 JSON patch; a body that is not a list of operations is 400, an operation that does
    not apply is 422 with evanphx/json-patch's error text (apply_patch replaces it as the server does)."""
    if not isinstance(operations, list):
        raise PatchError(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc: Any = copy_json(obj)
    for operation in operations:
        if not isinstance(operation, dict):
            raise PatchError(
                400, "json: cannot unmarshal non-object into Go value of type jsonpatch.Operation"
            )
        op = operation.get("op")
        path = operation.get("path")
        if op not in ("add", "remove", "replace", "move", "copy", "test"):
            raise PatchError(422, f"Unexpected kind: {op}")
        if not isinstance(path, str):
            raise PatchError(422, f"{op} operation missing path")
        if op in ("add", "replace", "test") and "value" not in operation:
            raise PatchError(422, f"{op} operation missing value")
        value = copy_json(operation.get("value"))
        if op == "add":
            doc = _add(doc, path, value)
        elif op == "remove":
            _remove(doc, path)
        elif op == "replace":
            tokens = _pointer(path)
            if not tokens:
                doc = value
            else:
                parent = _parent(doc, tokens, path, "replace")
                key = tokens[-1]
                if isinstance(parent, dict):
                    # gopkg.in/evanphx/json-patch.v4 (the apiserver's, patch.go replace): a missing
                    # member is no error (partialDoc.get finds nil), it is set like an add.
                    parent[key] = value
                else:
                    parent[_index(key, len(parent), allow_end=False, path=path, op=op)] = value
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise PatchError(422, f"{op} operation missing from")
            if op == "move":
                if path.startswith(source + "/"):
                    raise PatchError(422, "move operation cannot move a value into its own child")
                moved = _remove(doc, source, "move")
            else:
                moved = copy_json(_get_path(doc, source, "copy"))
            doc = _add(doc, path, moved, op)
        else:
            try:
                current = _get_path(doc, path, "test")
            except PatchError:
                current = None
            if current != value or (type(current) is not type(value) and not _both_numbers(current, value)):
                raise PatchError(422, f"testing value {path} failed: test failed")
    if not isinstance(doc, dict):
        raise PatchError(422, "json patch result is not an object")
    return doc


def _both_numbers(a: Any, b: Any) -> bool:
    return all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))


# ---------------------------------------------------------------------------------------------
# Strategic merge patch

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


class _Meta:
    """Patch metadata of one field: its schema (resolved through $ref), strategy and merge key."""

    __slots__ = ("merge_key", "schema", "strategy")

    def __init__(self, schema: dict[str, Any] | None, field_schema: dict[str, Any] | None) -> None:
        self.schema = schema
        field_schema = field_schema or {}
        strategies = str(field_schema.get("x-kubernetes-patch-strategy", "")).split(",")
        self.strategy = "merge" if "merge" in strategies else ("replace" if "replace" in strategies else "")
        self.merge_key: str = field_schema.get("x-kubernetes-patch-merge-key", "")


def _field_meta(schema: dict[str, Any] | None, key: str) -> _Meta:
    if schema is None:
        return _Meta(None, None)
    props = schema.get("properties")
    if props is not None:
        prop = props.get(key)
    else:
        extra = schema.get("additionalProperties")
        prop = extra if isinstance(extra, dict) else None
    if prop is None:
        return _Meta(None, None)
    target = resolve(prop)
    if "items" in target:
        target = resolve(target["items"])
    return _Meta(target, prop)


def strategic_merge(
    original: dict[str, Any], patch: dict[str, Any], *, kind: str, api_version: str
) -> dict[str, Any]:
    """Apply a strategic merge patch to original (not modified) using the schema of apiVersion/kind."""
    name = definition_name(api_version, kind)
    schema = definitions()[name] if name else None
    merged = _merge_map(copy_json(original), copy_json(patch), schema)  # JSON values: no memo needed
    return merged


def _bad_patch_type(directive: Any, patch: Any) -> PatchError:
    return PatchError(422, f"unknown patch type: {directive} in map: {patch}")


def _merge_map(current_map: Any, patch: dict[str, Any], schema: dict[str, Any] | None) -> dict[str, Any]:
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if directive == "replace":
            del patch[_DIRECTIVE]
            replaced: dict[str, Any] = _discard_nulls(patch)
            return replaced
        if directive == "delete":
            return {}
        raise _bad_patch_type(directive, patch)
    original: dict[str, Any] = current_map if isinstance(current_map, dict) else {}
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, schema)
    for key, patch_value in patch.items():
        is_delete_list = key.startswith(_DELETE_PRIMITIVE)
        if is_delete_list:
            key = key[len(_DELETE_PRIMITIVE) :]
        elif key.startswith(_SET_ORDER) or key.startswith("$"):
            continue
        if patch_value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not is_delete_list:
                original[key] = _discard_nulls(patch_value)
            continue
        current = original[key]
        if type(current) is not type(patch_value) and not (
            isinstance(current, dict) and isinstance(patch_value, dict)
        ):
            if not is_delete_list:
                original[key] = _discard_nulls(patch_value)
            continue
        meta = _field_meta(schema, key)
        if isinstance(current, dict):
            if meta.strategy == "replace":
                original[key] = _discard_nulls(patch_value)
            else:
                original[key] = _merge_map(current, patch_value, meta.schema)
        elif isinstance(current, list):
            original[key] = _merge_list_field(current, patch_value, meta, is_delete_list)
        else:
            original[key] = patch_value
    return original


def _discard_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _discard_nulls(v) for k, v in value.items() if v is not None and k != _DIRECTIVE}
    if isinstance(value, list):
        return [_discard_nulls(v) for v in value if not (isinstance(v, dict) and _DIRECTIVE in v)]
    return value


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if _RETAIN_KEYS not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS)
    if not isinstance(retain, list):
        raise PatchError(400, "invalid patch: the value of $retainKeys must be a list")
    keep = {_hashable(k) for k in retain}
    for k, v in patch.items():
        if v is None or k.startswith((_DELETE_PRIMITIVE, _SET_ORDER)):
            continue
        if k not in keep:
            raise PatchError(
                400, "doesn't satisfy the retainKeys directive: all fields in the patch must be in it"
            )
    for k in list(original):
        if k not in keep:
            del original[k]


def _merge_list_field(original: list[Any], patch: list[Any], meta: _Meta, is_delete_list: bool) -> list[Any]:
    if meta.strategy != "merge":
        return _discard_nulls(patch)  # type: ignore[no-any-return]
    return _merge_list(original, patch, meta, is_delete_list)


def _key_of(item: Any, merge_key: str) -> Any:
    return item.get(merge_key) if isinstance(item, dict) else item


def _merge_list(original: list[Any], patch: list[Any], meta: _Meta, is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    is_maps = any(isinstance(x, dict) for x in (*original, *patch))
    merge_key = meta.merge_key
    if not is_maps:
        if is_delete_list:
            drop = set(map(_hashable, patch))
            return [x for x in original if _hashable(x) not in drop]
        merged: list[Any] = []
        seen: set[Any] = set()
        for x in (*original, *patch):
            if _hashable(x) not in seen:
                seen.add(_hashable(x))
                merged.append(x)
        order_key = ""
    else:
        if not merge_key:
            raise PatchError(422, "cannot merge lists without merge key")
        original, patch = _special_elements(original, patch, merge_key)
        merged = list(original)
        for item in patch:
            if not isinstance(item, dict) or merge_key not in item:
                raise PatchError(422, f"map: {item} does not contain declared merge key: {merge_key}")
            for i, existing in enumerate(merged):
                if isinstance(existing, dict) and existing.get(merge_key) == item[merge_key]:
                    merged[i] = _merge_map(existing, item, meta.schema)
                    break
            else:
                merged.append(_discard_nulls(item))
        order_key = merge_key
    return _normalize_order(merged, patch, original, order_key)


def _hashable(x: Any) -> Any:
    return json.dumps(x, sort_keys=True) if isinstance(x, dict | list) else x


def _special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    rest: list[Any] = []
    deleted: set[Any] = set()
    replace = False
    for item in patch:
        if isinstance(item, dict) and _DIRECTIVE in item:
            directive = item[_DIRECTIVE]
            if directive == "delete":
                if merge_key not in item:
                    raise PatchError(422, "delete patch type with no merge key defined")
                deleted.add(_hashable(item[merge_key]))
            elif directive == "replace":
                replace = True
            elif directive == "merge":
                raise PatchError(422, "merging lists cannot yet be specified in the patch")
            else:
                raise _bad_patch_type(directive, item)
        else:
            rest.append(item)
    if replace:
        return [], rest
    kept = [x for x in original if not (isinstance(x, dict) and _hashable(x.get(merge_key)) in deleted)]
    return kept, rest


def _position(items: list[Any], item: Any, merge_key: str) -> int:
    key = _hashable(_key_of(item, merge_key))
    for i, x in enumerate(items):
        if _hashable(_key_of(x, merge_key)) == key:
            return i
    return -1


def _normalize_order(
    merged: list[Any], patch_order: list[Any], server_order: list[Any], merge_key: str
) -> list[Any]:
    """Order merged like upstream's normalizeElementOrder: patch items in patch order, server-only
    items in server order, the two interleaved by their positions in the server's list."""
    in_patch = [x for x in merged if _position(patch_order, x, merge_key) >= 0]
    server_only = [x for x in merged if _position(patch_order, x, merge_key) < 0]
    in_patch.sort(key=lambda x: _position(patch_order, x, merge_key))
    server_only.sort(key=lambda x: _position(server_order, x, merge_key))
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(in_patch):
        if i >= len(server_only):
            out.append(in_patch[j])
            j += 1
        elif j >= len(in_patch):
            out.append(server_only[i])
            i += 1
        else:
            li = _position(server_order, server_only[i], merge_key)
            ri = _position(server_order, in_patch[j], merge_key)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(server_only[i])
                i += 1
            else:
                out.append(in_patch[j])
                j += 1
    return out


def _merge_ordered_lists(
    original: dict[str, Any], patch: dict[str, Any], schema: dict[str, Any] | None
) -> None:
    """Handle `$setElementOrder/<field>` together with the patch list of the same field."""
    for directive in [k for k in patch if k.startswith(_SET_ORDER)]:
        order = patch.pop(directive)
        key = directive[len(_SET_ORDER) :]
        if not isinstance(order, list):
            raise PatchError(400, "invalid patch: $setElementOrder must be a list")
        meta = _field_meta(schema, key)
        merge_key = meta.merge_key
        patch_list = patch.pop(key, None)
        if patch_list is not None and not isinstance(patch_list, list):
            raise PatchError(400, f"invalid patch: {key} must be a list to be ordered by {directive}")
        original_list = original.get(key) or []
        patch_items = patch_list or []
        if merge_key:
            order_keys = {_hashable(_key_of(x, merge_key)) for x in order}
            for item in patch_items:
                if (
                    isinstance(item, dict)
                    and _DIRECTIVE not in item
                    and _hashable(item.get(merge_key)) not in order_keys
                ):
                    raise PatchError(
                        400, "invalid patch: the order list must contain all items of the patch list"
                    )
        if not original_list and not patch_items:
            continue
        if not original_list:
            merged = _discard_nulls(patch_items)
        elif not patch_items:
            merged = list(original_list)
        else:
            merged = _merge_list_field(original_list, patch_items, meta, False)
        original[key] = _normalize_order(merged, order, original_list, merge_key)
