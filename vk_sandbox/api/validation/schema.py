"""The official schemas of KUBE_VERSION and one walk of an object against them.

What lives here: kubernetes-validate's `v<minor>.0-local-strict` definitions (`definitions`,
`definition_name`, `resolve`; read once per process), the schema walk turning mismatches into
metav1 StatusCause dicts (`schema_pass`), unknown-field detection for `fieldValidation=Strict|Warn`
(`unknown_fields`, `unknown_field_message`), `decode` (a body read as the Go decoder reads it: type
mismatches and out-of-range integers worded like it, nulls in lists and maps as zero values),
`decode_errors`, `zero_value` and the nesting limit (`MAX_DEPTH`, `too_deep`).
Must not: apply kind rules (kinds.py), touch the store, build HTTP responses or raise ApiError.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from importlib import resources
from typing import Any

from vk_common.kube_version import KUBE_MINOR_VERSION
from vk_sandbox.api.quantity import parse_quantity
from vk_sandbox.api.validation.field import child_path, go_quote, invalid, not_supported, required

# kubernetes-validate names its schema directories by minor: v1.37.0-local-strict for 1.37.x.
SCHEMA_VERSION = f"v{KUBE_MINOR_VERSION}.0-local-strict"
QUANTITY_REGEX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"

# ---------------------------------------------------------------------------------------------
# The packaged official schemas (read once per process)


@functools.cache
def definitions() -> dict[str, Any]:
    """`$defs` of kubernetes-validate's SCHEMA_VERSION `_definitions.json` (x-kubernetes extensions kept)."""
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


# ---------------------------------------------------------------------------------------------
# Schema walk (the files only use type/properties/additionalProperties/items/required/enum/oneOf/
# format/$ref, so a direct walk is both simpler and faster than a generic JSON Schema engine)

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


# The schema's `required` lists come from Go fields without `omitempty`; the real server
# decodes a missing one as its zero value and only refuses it where its hand-written
# validation (pkg/apis/core/validation/validation.go, apimachinery's ValidateOwnerReferences)
# says so. A node status without nodeInfo.kubeProxyVersion, say, is accepted. These are the
# structs whose required fields that validation does check.
_REQUIRED_ENFORCED = frozenset(
    {
        "OwnerReference",
        "Container",
        "EphemeralContainer",
        "ContainerPort",
        "EnvVar",
        "VolumeMount",
        "VolumeDevice",
        "Volume",
        "Taint",
        "KeyToPath",
        "ConfigMapKeySelector",
        "SecretKeySelector",
        "ObjectFieldSelector",
        "ResourceFieldSelector",
        "HTTPGetAction",
        "TCPSocketAction",
        "NodeSelectorRequirement",
        "LabelSelectorRequirement",
        "ServicePort",
    }
)


class _Node:
    """What a walk needs of one field schema, worked out once per process: the schemas are the
    packaged definitions (`definitions()`), read once and never changed, and a pod's pass visits
    about eighty of them, twice a write."""

    __slots__ = (
        "_children",
        "bool_ok",
        "byte",
        "container",
        "enum",
        "extra",
        "field",
        "integer",
        "items",
        "map_or_list",
        "null_ok",
        "one_of",
        "plain_string",
        "props",
        "python_types",
        "quantity",
        "reports_unknown",
        "required",
        "required_set",
        "struct",
        "types",
    )

    def __init__(self, field: dict[str, Any]) -> None:
        schema = resolve(field)
        self.field = field
        self.one_of: list[str] | None = None
        self.quantity = False
        if "oneOf" in schema:
            self.one_of = [t for option in schema["oneOf"] for t in _as_list(option.get("type"))]
            self.quantity = str(field.get("$ref", "")).endswith(_QUANTITY_DEF)
        self.types = _as_list(schema.get("type"))
        checked = self.types if self.one_of is None else self.one_of  # what `type_ok` accepts
        self.python_types = tuple(c for t in checked for c in _JSON_TYPES.get(t, ()))
        self.null_ok = "null" in checked
        self.bool_ok = "boolean" in checked
        self.integer = "integer" in checked
        self.enum = schema.get("enum")
        self.props: dict[str, Any] | None = schema.get("properties")
        self.extra = schema.get("additionalProperties")
        self.reports_unknown = self.props is not None and self.extra is False  # a closed struct
        self.struct = _struct_name(field)
        self.required = schema.get("required") or ()
        self.required_set = frozenset(self.required)
        self.items = schema.get("items")
        self.byte = schema.get("format") == "byte"
        # A string with nothing more to check than its type: most of an object's leaves.
        self.plain_string = (
            self.one_of is None and self.types == ["string"] and self.enum is None and not self.byte
        )
        self.container = _is_container(field)
        self.map_or_list = _map_or_list(field)
        self._children: tuple[dict[str, _Node], _Node | None, _Node | None] | None = None

    def children(self) -> tuple[dict[str, _Node], _Node | None, _Node | None]:
        """The nodes of its properties, of its `additionalProperties` and of its `items`, made
        at the first walk through it (not here: the schemas refer to themselves)."""
        if self._children is None:
            props = {key: _node(field) for key, field in (self.props or {}).items()}
            extra = _node(self.extra) if isinstance(self.extra, dict) else None
            items = _node(self.items) if self.items is not None else None
            self._children = (props, extra, items)
        return self._children

    def type_ok(self, value: Any) -> bool:
        """Whether value is of one of its JSON types (of its `oneOf` options' for a `oneOf`): a
        float with no fraction passes as an integer, a bool only as a boolean."""
        if value is None:
            return self.null_ok
        if isinstance(value, bool):
            return self.bool_ok
        if self.integer and isinstance(value, float) and value.is_integer():
            return True
        return isinstance(value, self.python_types)


_NODES: dict[int, _Node] = {}


def _node(field: dict[str, Any]) -> _Node:
    node = _NODES.get(id(field))
    if node is None or node.field is not field:
        node = _NODES[id(field)] = _Node(field)
    return node


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


# The ranges of the Go integer types a schema `format` names (encoding/json refuses a number
# outside its field's type, or with a fraction, as an UnmarshalTypeError).
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class _Walk:
    """One schema pass: causes, undeclared field paths, and the decode errors (type mismatches as
    the Go JSON decoder words them) of one object. With `decoding`, the object is changed in place
    as decoding it into its Go type changes it: a null list item or map value becomes its type's
    zero value (`conditions: [null]` is stored as one empty condition), a null struct, map or list
    field is left out, and undeclared fields are dropped."""

    def __init__(self, *, decoding: bool = False) -> None:
        self.causes: list[dict[str, str]] = []
        self.unknown: list[str] = []
        self.decode: list[str] = []
        self.decoding = decoding

    def walk(self, value: Any, node: _Node, path: str, owner: str, dotted: str) -> None:
        schema = node.field
        if node.plain_string and value.__class__ is str:
            return
        if node.one_of is not None:
            types = node.one_of
            if not node.type_ok(value):
                expected = " or ".join(t for t in types if t != "null")
                self._type_error(path, value, expected, owner, dotted, schema)
            elif isinstance(value, str) and node.quantity:
                self._quantity(path, value)
            return
        types = node.types
        if types and not node.type_ok(value):
            expected = next((t for t in types if t != "null"), types[0])
            self._type_error(path, value, expected, owner, dotted, schema)
            return
        if value is None:
            return
        if node.integer and not self._integer_fits(value, schema, path, owner, dotted):
            return
        enum = node.enum
        if enum is not None and value not in enum:
            self.causes.append(not_supported(path, value, enum))
            return
        if isinstance(value, dict):
            self._walk_object(value, node, path, owner, dotted)
        elif isinstance(value, list):
            items = node.children()[2]
            if items is not None:
                for i, item in enumerate(value):
                    if item is None and self.decoding:
                        item = value[i] = zero_value(items.field)
                    self.walk(item, items, f"{path}[{i}]", owner, dotted)
        elif isinstance(value, str) and node.byte:
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                self.causes.append(invalid(path, "<omitted>", "illegal base64 data"))

    def _walk_object(self, value: dict[str, Any], node: _Node, path: str, owner: str, dotted: str) -> None:
        props, extra_node, _ = node.children()
        struct = node.struct or owner
        if struct in _REQUIRED_ENFORCED:
            for req in node.required:
                if value.get(req) is None:
                    self.causes.append(required(child_path(path, req)))
        decoding = self.decoding
        for key, sub in list(value.items()):
            child = props.get(key)
            if child is not None:
                if child.plain_string and sub.__class__ is str:
                    continue
                if sub is None and decoding and child.container:
                    del value[key]  # a nil struct pointer, map or slice: omitted
                    continue
                if sub in ({}, []) and decoding and key not in node.required_set and child.map_or_list:
                    # An empty map or slice of an `omitempty` field (openapi-gen makes every field
                    # without omitempty `required`): encoding/json leaves it out when the server
                    # writes the object, so a ConfigMap created with `data: {}` has no data and a
                    # JSON patch `add /data/k` of it is a 422 (k8s.io/api core/v1 types.go
                    # `Data map[string]string json:"data,omitempty"`; ObjectMeta's labels,
                    # annotations and finalizers are the same).
                    del value[key]
                    continue
                self.walk(sub, child, child_path(path, key), struct, child_path(dotted, key))
            elif extra_node is not None:
                if extra_node.plain_string and sub.__class__ is str:
                    continue
                if sub is None and decoding:
                    sub = value[key] = zero_value(extra_node.field)
                self.walk(sub, extra_node, f"{path}[{key}]", owner, dotted)
            elif node.reports_unknown:
                self.unknown.append(child_path(path, key))
                if decoding:
                    del value[key]  # the Go decoder has nowhere to put it

    def _integer_fits(self, value: Any, field: dict[str, Any], path: str, owner: str, dotted: str) -> bool:
        low, high = _INT_RANGES.get(str(resolve(field).get("format")), _INT_RANGES["int64"])
        number = value
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            number = int(value)
        if isinstance(number, int) and low <= number <= high:
            return True
        go_type = _go_type(field)
        target = f"Go struct field {owner}.{dotted} of type {go_type}"
        self.decode.append(f"json: cannot unmarshal number {value!r} into {target}")
        self.causes.append(invalid(path, _short(value), f"must be a number of type {go_type}"))
        return False

    def _quantity(self, path: str, value: str) -> None:
        try:
            parse_quantity(value)
        except ValueError:
            message = f"quantities must match the regular expression '{QUANTITY_REGEX}'"
            self.decode.append(message)
            self.causes.append(invalid(path, value, message))

    def _type_error(
        self, path: str, value: Any, expected: str, owner: str, dotted: str, field: dict[str, Any]
    ) -> None:
        detail = f"{path} in body must be of type {expected}: {go_quote(_json_type(value))}"
        self.causes.append(invalid(path, _short(value), detail))
        go_json = {"integer": "number", "boolean": "bool"}.get(_json_type(value), _json_type(value))
        if go_json == "number" and expected == "integer":  # a fraction: Go names the literal
            go_json = f"number {value!r}"
        target = f"Go struct field {owner}.{dotted} of type {_go_type(field)}"
        self.decode.append(f"json: cannot unmarshal {go_json} into {target}")


def _struct_name(field: dict[str, Any]) -> str:
    ref = field.get("$ref")
    return ref.rsplit(".", 1)[-1] if isinstance(ref, str) else ""


def _go_type(field: dict[str, Any]) -> str:
    """The Go type of a schema as upstream spells it (v1.PodSpec, []v1.Container, int32)."""
    ref = field.get("$ref")
    if isinstance(ref, str):
        parts = ref.rsplit("/", 1)[-1].split(".")
        return f"{parts[-2]}.{parts[-1]}"
    types = [t for t in _as_list(field.get("type")) if t != "null"]
    kind = types[0] if types else ""
    fmt = field.get("format")
    if kind == "integer":
        return str(fmt) if fmt in ("int32", "int64") else "int"
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "string":
        return "[]uint8" if fmt == "byte" else "string"
    if kind == "array":
        return "[]" + _go_type(field.get("items") or {})
    if kind == "object":
        extra = field.get("additionalProperties")
        return "map[string]" + (_go_type(extra) if isinstance(extra, dict) else "interface {}")
    return "interface {}"


def _as_list(t: Any) -> list[str]:
    if t is None:
        return []
    return [t] if isinstance(t, str) else list(t)


def _short(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) or value is None else _json_type(value)


def zero_value(schema: dict[str, Any]) -> Any:
    """The JSON form of a Go zero value of schema's type: "", 0, false, [], {} (a struct with its
    non-omitempty, i.e. `required`, scalar fields set to their zero values)."""
    target = resolve(schema)
    if "oneOf" in target:  # Quantity and IntOrString
        return "0" if str(schema.get("$ref", "")).endswith(_QUANTITY_DEF) else 0
    kind = next((t for t in _as_list(target.get("type")) if t != "null"), "object")
    if kind != "object":
        return {"string": "", "integer": 0, "number": 0, "boolean": False}.get(kind, [])
    props = target.get("properties") or {}
    zero: dict[str, Any] = {}
    for name in target.get("required") or ():
        field = resolve(props.get(name) or {})
        scalar = next((t for t in _as_list(field.get("type")) if t != "null"), "")
        if scalar in ("string", "integer", "number", "boolean") and "oneOf" not in field:
            zero[name] = zero_value(field)
    return zero


def _map_or_list(schema: dict[str, Any]) -> bool:
    """A Go map or slice (not a struct, whose zero value omitempty never leaves out)."""
    target = resolve(schema)
    if "oneOf" in target or "properties" in target:
        return False
    types = set(_as_list(target.get("type")))
    return "array" in types or ("object" in types and isinstance(target.get("additionalProperties"), dict))


def _is_container(schema: dict[str, Any]) -> bool:
    target = resolve(schema)
    return "oneOf" not in target and bool({"object", "array"} & set(_as_list(target.get("type"))))


def schema_pass(obj: dict[str, Any], definition: str | None = None, *, decoding: bool = False) -> _Walk:
    """definition: the `$defs` name to read obj as (default: the one of its own apiVersion/kind)."""
    name = definition or definition_name(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    result = _Walk(decoding=decoding)
    if name is not None:
        result.walk(obj, _node(definitions()[name]), "", name.rsplit(".", 1)[-1], "")
    return result


# The deepest nesting of objects and lists a body may have. encoding/json allows 10000; no
# Kubernetes object comes near 100, and Python's own recursion (copying, comparing) does not
# reach 10000.
MAX_DEPTH = 100


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether objects and lists nest more than `limit` deep in value (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def decode(obj: dict[str, Any], definition: str | None = None) -> tuple[list[str], list[str]]:
    """Read obj as the real server's Go decoder reads a body into its type, changing it in place
    (nulls and undeclared fields, see `_Walk`); returns (decode errors, the undeclared fields'
    paths). The server answers the first decode error with a 400, before any unknown-field
    handling."""
    result = schema_pass(obj, definition, decoding=True)
    return result.decode, result.unknown


def unknown_fields(obj: dict[str, Any]) -> list[str]:
    """Paths (`spec.containers[0].foo`) of fields the official schema does not declare."""
    return schema_pass(obj).unknown


def decode_errors(obj: dict[str, Any]) -> list[str]:
    """Type mismatches worded as the real server's decoder reports them (it answers the first with
    400 `<Kind> in version "v1" cannot be handled as a <Kind>: <error>`), e.g.
    `json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort
    of type int32`. validate_object also reports each as a FieldValueInvalid cause."""
    return schema_pass(obj).decode


def unknown_field_message(path: str) -> str:
    return f"unknown field {go_quote(path)}"  # sigs.k8s.io/json strictError: strconv.Quote(path)
