"""Object validation for the sandbox apiserver: the official schemas of KUBE_VERSION plus the kind rules.

Lives here: the apimachinery name/label format checks (with upstream's messages, from
`staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go`), schema validation against
kubernetes-validate's `v<minor>.0-local-strict` definitions turned into metav1 StatusCause dicts,
unknown-field detection for `fieldValidation=Strict|Warn`, `decode` (a body read as the Go decoder
reads it: type mismatches and out-of-range integers worded like it, nulls in lists and maps as zero
values), and the kind rules of `pkg/apis/core/validation/` that matter here: pods (names, images,
resources, probes, tolerations, update immutability, mirror-pod annotation), node taints and
core/v1 events (legacyValidateEvent). The schema files are read once per process.
Must not: touch the store, build HTTP responses or raise ApiError (callers turn causes into 422s).
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
import re
from importlib import resources
from typing import Any

from vk_provider.kube_version import KUBE_MINOR_VERSION
from vk_provider.sandbox.quantity import parse_quantity

# kubernetes-validate names its schema directories by minor: v1.37.0-local-strict for 1.37.x.
SCHEMA_VERSION = f"v{KUBE_MINOR_VERSION}.0-local-strict"
QUANTITY_REGEX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"

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
# Causes


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


def _type_ok(value: Any, types: list[str]) -> bool:
    if value is None:
        return "null" in types
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, float) and value.is_integer() and "integer" in types:
        return True
    return any(isinstance(value, _JSON_TYPES.get(t, ())) for t in types)


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


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


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

    def walk(self, value: Any, schema: dict[str, Any], path: str, owner: str, dotted: str) -> None:
        field_schema = schema
        schema = resolve(schema)
        if "oneOf" in schema:
            types = [t for option in schema["oneOf"] for t in _as_list(option.get("type"))]
            if not _type_ok(value, types):
                expected = " or ".join(t for t in types if t != "null")
                self._type_error(path, value, expected, owner, dotted, field_schema)
            elif isinstance(value, str) and str(field_schema.get("$ref", "")).endswith(_QUANTITY_DEF):
                self._quantity(path, value)
            return
        types = _as_list(schema.get("type"))
        if types and not _type_ok(value, types):
            expected = next((t for t in types if t != "null"), types[0])
            self._type_error(path, value, expected, owner, dotted, field_schema)
            return
        if value is None:
            return
        if "integer" in types and not self._integer_fits(value, field_schema, path, owner, dotted):
            return
        enum = schema.get("enum")
        if enum is not None and value not in enum:
            self.causes.append(not_supported(path, value, enum))
            return
        if isinstance(value, dict):
            self._walk_object(value, schema, path, owner, dotted, field_schema)
        elif isinstance(value, list):
            items = schema.get("items")
            if items is not None:
                for i, item in enumerate(value):
                    if item is None and self.decoding:
                        item = value[i] = zero_value(items)
                    self.walk(item, items, f"{path}[{i}]", owner, dotted)
        elif isinstance(value, str) and schema.get("format") == "byte":
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                self.causes.append(invalid(path, "<omitted>", "illegal base64 data"))

    def _walk_object(
        self,
        value: dict[str, Any],
        schema: dict[str, Any],
        path: str,
        owner: str,
        dotted: str,
        field: dict[str, Any],
    ) -> None:
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        struct = _struct_name(field) or owner
        if struct in _REQUIRED_ENFORCED:
            for req in schema.get("required") or ():
                if value.get(req) is None:
                    self.causes.append(required(_child(path, req)))
        for key, sub in list(value.items()):
            if props is not None and key in props:
                if sub is None and self.decoding and _is_container(props[key]):
                    del value[key]  # a nil struct pointer, map or slice: omitted
                    continue
                self.walk(sub, props[key], _child(path, key), struct, _child(dotted, key))
            elif isinstance(extra, dict):
                if sub is None and self.decoding:
                    sub = value[key] = zero_value(extra)
                self.walk(sub, extra, f"{path}[{key}]", owner, dotted)
            elif props is not None and extra is False:
                self.unknown.append(_child(path, key))
                if self.decoding:
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


def _is_container(schema: dict[str, Any]) -> bool:
    target = resolve(schema)
    return "oneOf" not in target and bool({"object", "array"} & set(_as_list(target.get("type"))))


def _schema_pass(obj: dict[str, Any], definition: str | None = None, *, decoding: bool = False) -> _Walk:
    """definition: the `$defs` name to read obj as (default: the one of its own apiVersion/kind)."""
    name = definition or definition_name(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    result = _Walk(decoding=decoding)
    if name is not None:
        result.walk(obj, definitions()[name], "", name.rsplit(".", 1)[-1], "")
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
    result = _schema_pass(obj, definition, decoding=True)
    return result.decode, result.unknown


def unknown_fields(obj: dict[str, Any]) -> list[str]:
    """Paths (`spec.containers[0].foo`) of fields the official schema does not declare."""
    return _schema_pass(obj).unknown


def decode_errors(obj: dict[str, Any]) -> list[str]:
    """Type mismatches worded as the real server's decoder reports them (it answers the first with
    400 `<Kind> in version "v1" cannot be handled as a <Kind>: <error>`), e.g.
    `json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort
    of type int32`. validate_object also reports each as a FieldValueInvalid cause."""
    return _schema_pass(obj).decode


def unknown_field_message(path: str) -> str:
    return f"unknown field {go_quote(path)}"  # sigs.k8s.io/json strictError: strconv.Quote(path)


# ---------------------------------------------------------------------------------------------
# Kind rules

_NAMESPACE_SCOPED_DNS_LABEL_KINDS = {"Namespace", "Service"}
_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def _validate_metadata(obj: dict[str, Any]) -> list[dict[str, str]]:
    meta = _dict(obj.get("metadata"))
    out: list[dict[str, str]] = []
    name = meta.get("name")
    label_named = obj.get("kind") in _NAMESPACE_SCOPED_DNS_LABEL_KINDS
    check = dns1123_label_errors if label_named else dns1123_subdomain_errors
    prefix = meta.get("generateName")
    if prefix:
        # ValidateObjectMeta: the prefix as a name whose trailing '-' is masked (maskTrailingDash)
        errs = check(str(prefix)[:-1] + "a" if str(prefix).endswith("-") else str(prefix))
        if errs:
            out.append(invalid("metadata.generateName", prefix, "; ".join(errs)))
    if not name:
        if not prefix:
            out.append(required("metadata.name", "name or generateName is required"))
    else:
        errs = check(str(name))
        if errs:
            out.append(invalid("metadata.name", name, "; ".join(errs)))
    for key, value in (meta.get("labels") or {}).items():
        errs = qualified_name_errors(str(key))
        if errs:
            out.append(invalid("metadata.labels", key, "; ".join(errs)))
        errs = label_value_errors(str(value))
        if errs:
            out.append(invalid("metadata.labels", value, "; ".join(errs)))
    for key in meta.get("annotations") or {}:
        errs = qualified_name_errors(str(key).lower())
        if errs:
            out.append(invalid("metadata.annotations", key, "; ".join(errs)))
    return out


def _enum(out: list[dict[str, str]], path: str, value: Any, allowed: list[str]) -> None:
    if value is not None and value not in allowed:
        out.append(not_supported(path, value, allowed))


def _validate_containers(
    containers: list[Any], path: str, seen: set[str], volumes: set[str], out: list[dict[str, str]]
) -> None:
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            continue
        p = f"{path}[{i}]"
        name = c.get("name")
        if name:
            errs = dns1123_label_errors(str(name))
            if errs:
                out.append(invalid(f"{p}.name", name, "; ".join(errs)))
            elif name in seen:
                out.append(duplicate(f"{p}.name", name))
            seen.add(str(name))
        elif "name" in c:
            out.append(required(f"{p}.name"))
        if not c.get("image"):
            out.append(required(f"{p}.image"))
        _enum(out, f"{p}.imagePullPolicy", c.get("imagePullPolicy"), _PULL_POLICIES)
        _enum(
            out,
            f"{p}.terminationMessagePolicy",
            c.get("terminationMessagePolicy"),
            _TERMINATION_MESSAGE_POLICIES,
        )
        for j, port in enumerate(c.get("ports") or []):
            if not isinstance(port, dict):
                continue
            cp = port.get("containerPort")
            if isinstance(cp, int) and not 1 <= cp <= 65535:
                out.append(
                    invalid(f"{p}.ports[{j}].containerPort", cp, "must be between 1 and 65535, inclusive")
                )
            hp = port.get("hostPort")
            if isinstance(hp, int) and hp != 0 and not 1 <= hp <= 65535:
                out.append(invalid(f"{p}.ports[{j}].hostPort", hp, "must be between 1 and 65535, inclusive"))
            _enum(out, f"{p}.ports[{j}].protocol", port.get("protocol"), _PROTOCOLS)
        for j, env in enumerate(c.get("env") or []):
            if isinstance(env, dict) and not env.get("name"):
                out.append(required(f"{p}.env[{j}].name"))
            if isinstance(env, dict) and env.get("value") and env.get("valueFrom") is not None:
                out.append(
                    invalid(f"{p}.env[{j}].valueFrom", "", "may not be specified when `value` is not empty")
                )
        _validate_resources(c.get("resources") or {}, f"{p}.resources", out)
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            _validate_handler(c.get(probe), f"{p}.{probe}", ("exec", "httpGet", "tcpSocket", "grpc"), out)
        for j, mount in enumerate(c.get("volumeMounts") or []):
            if not isinstance(mount, dict):
                continue
            if mount.get("name") and mount["name"] not in volumes:
                out.append(not_found(f"{p}.volumeMounts[{j}].name", mount["name"]))
            if not mount.get("mountPath"):
                out.append(required(f"{p}.volumeMounts[{j}].mountPath"))


def _validate_resources(resources: dict[str, Any], path: str, out: list[dict[str, str]]) -> None:
    """ValidateResourceRequirements: non-negative quantities, requests no larger than limits."""
    limits: dict[str, Any] = {}
    for kind in ("limits", "requests"):
        for name, quantity in (resources.get(kind) or {}).items():
            try:
                value = parse_quantity(quantity)
            except (ValueError, TypeError):
                continue  # reported by the schema pass as a decode error
            if value < 0:
                out.append(
                    invalid(f"{path}.{kind}[{name}]", str(quantity), "must be greater than or equal to 0")
                )
            if kind == "limits":
                limits[name] = (value, quantity)
            elif name in limits and value > limits[name][0]:
                detail = f"must be less than or equal to {name} limit of {limits[name][1]}"
                out.append(invalid(f"{path}.requests", str(quantity), detail))


def _validate_handler(probe: Any, path: str, handlers: tuple[str, ...], out: list[dict[str, str]]) -> None:
    """validateHandler: a probe names exactly one handler type."""
    if not isinstance(probe, dict):
        return
    given = [h for h in handlers if probe.get(h) is not None]
    if not given:
        out.append(required(path, "must specify a handler type"))
    elif len(given) > 1:
        out.append(forbidden(f"{path}.{given[1]}", "may not specify more than 1 handler type"))


_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _validate_taints(taints: list[Any], path: str) -> list[dict[str, str]]:
    """validateNodeTaints: qualified keys, label values, a known effect, unique (key, effect)."""
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        if not isinstance(taint, dict):
            continue
        p = f"{path}[{i}]"
        key, value, effect = (
            str(taint.get("key") or ""),
            str(taint.get("value") or ""),
            taint.get("effect") or "",
        )
        out.extend(invalid(f"{p}.key", key, msg) for msg in qualified_name_errors(key))
        errs = label_value_errors(value)
        if errs:
            out.append(invalid(f"{p}.value", value, ";".join(errs)))
        if not effect:
            out.append(required(f"{p}.effect"))
        else:
            _enum(out, f"{p}.effect", effect, _TAINT_EFFECTS)
        if (key, effect) in seen:
            shown = f'core.Taint{{Key:"{key}", Value:"{value}", Effect:"{effect}", TimeAdded:<nil>}}'
            out.append(
                cause(
                    "FieldValueDuplicate",
                    p,
                    f"Duplicate value: {shown}: taints must be unique by key and effect pair",
                )
            )
        seen.add((key, effect))
    return out


def _validate_tolerations(tolerations: list[Any], path: str) -> list[dict[str, str]]:
    """ValidateTolerations (pkg/apis/core/validation/validation.go)."""
    out: list[dict[str, str]] = []
    for i, tol in enumerate(tolerations):
        if not isinstance(tol, dict):
            continue
        p = f"{path}[{i}]"
        key, op, value, effect = (str(tol.get(k) or "") for k in ("key", "operator", "value", "effect"))
        if key:
            out.extend(invalid(f"{p}.key", key, msg) for msg in qualified_name_errors(key))
        if not key and op != "Exists":
            detail = (
                'operator must be Exists when `key` is empty, which means "match all values and all keys"'
            )
            out.append(invalid(f"{p}.operator", op, detail))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            out.append(
                invalid(f"{p}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
            )
        if op in ("Equal", ""):
            errs = label_value_errors(value)
            if errs:
                out.append(invalid(f"{p}.operator", value, ";".join(errs)))
        elif op == "Exists":
            if value:
                out.append(invalid(f"{p}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            out.append(not_supported(f"{p}.operator", op, ["Equal", "Exists"]))
        if effect:
            _enum(out, f"{p}.effect", effect, _TAINT_EFFECTS)
    return out


def _validate_event(ev: dict[str, Any]) -> list[dict[str, str]]:
    """legacyValidateEvent (pkg/apis/core/validation/events.go) as applied to core/v1 requests."""
    out: list[dict[str, str]] = []
    namespace = str(_dict(ev.get("metadata")).get("namespace") or "")
    involved_ns = str(_dict(ev.get("involvedObject")).get("namespace") or "")
    mismatch = invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    if not ev.get("eventTime"):
        if (not involved_ns and namespace not in ("", "default")) or (
            involved_ns and namespace != involved_ns
        ):
            out.append(mismatch)
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            out.append(mismatch)
        component = str(ev.get("reportingComponent") or "")
        if not component:
            out.append(required("reportingComponent"))
        out.extend(invalid("reportingComponent", component, msg) for msg in qualified_name_errors(component))
        for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            value = str(ev.get(key) or "")
            if not value:
                out.append(required(key))
            if len(value) > limit:
                out.append(invalid(key, "", f"can have at most {limit} characters"))
        if len(str(ev.get("message") or "")) > 1024:
            out.append(invalid("message", "", "can have at most 1024 characters"))
    out.extend(invalid("namespace", namespace, msg) for msg in dns1123_subdomain_errors(namespace))
    return out


_CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")
# The keys each Secret type requires (ValidateSecret, pkg/apis/core/validation/validation.go).
_SECRET_TYPE_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


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


def _validate_config_data(obj: dict[str, Any]) -> list[dict[str, str]]:
    """ValidateConfigMap / ValidateSecret beyond metadata: the keys, a key in both of a
    ConfigMap's bags, and the keys a Secret's type requires."""
    out: list[dict[str, str]] = []
    data, binary = _dict(obj.get("data")), _dict(obj.get("binaryData"))
    for key in data:
        out.extend(invalid(f"data[{key}]", key, msg) for msg in config_key_errors(key))
        if obj.get("kind") == "ConfigMap" and key in binary:
            out.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
    if obj.get("kind") == "ConfigMap":
        for key in binary:
            out.extend(invalid(f"binaryData[{key}]", key, msg) for msg in config_key_errors(key))
        return out
    secret_type = str(obj.get("type") or "")
    if secret_type == "kubernetes.io/service-account-token":
        if not _dict(_dict(obj.get("metadata")).get("annotations")).get("kubernetes.io/service-account.name"):
            out.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif secret_type == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            out.extend([required("data[username]"), required("data[password]")])
    elif secret_type == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            out.append(required("data[ssh-privatekey]"))
    else:
        out.extend(
            required(f"data[{key}]") for key in _SECRET_TYPE_KEYS.get(secret_type, ()) if key not in data
        )
    return out


def validate_config_update(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    """ValidateConfigMapUpdate / ValidateSecretUpdate before the create rules: a Secret's type is
    immutable, and so is everything of an `immutable: true` one."""
    out: list[dict[str, str]] = []
    if new.get("kind") == "Secret" and (new.get("type") or "") != (old.get("type") or ""):
        out.append(invalid("type", new.get("type") or "", "field is immutable"))
    if old.get("immutable") is True:
        locked = "field is immutable when `immutable` is set"
        if new.get("immutable") is not True:
            out.append(forbidden("immutable", locked))
        bags = ("data", "binaryData") if new.get("kind") == "ConfigMap" else ("data",)
        out.extend(forbidden(bag, locked) for bag in bags if _dict(new.get(bag)) != _dict(old.get(bag)))
    return out


def _validate_lease(lease: dict[str, Any]) -> list[dict[str, str]]:
    """ValidateLeaseSpec (pkg/apis/coordination/validation/validation.go)."""
    spec = _dict(lease.get("spec"))
    out: list[dict[str, str]] = []
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if isinstance(duration, int) and duration <= 0:
        out.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    if isinstance(transitions, int) and transitions < 0:
        out.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return out


def _validate_pod(pod: dict[str, Any]) -> list[dict[str, str]]:
    spec = pod.get("spec")
    out: list[dict[str, str]] = []
    if not isinstance(spec, dict):
        return out
    volumes: set[str] = set()
    for i, v in enumerate(spec.get("volumes") or []):
        if not isinstance(v, dict):
            continue
        name = v.get("name")
        if not name:
            out.append(required(f"spec.volumes[{i}].name"))
            continue
        errs = dns1123_label_errors(str(name))
        if errs:
            out.append(invalid(f"spec.volumes[{i}].name", name, "; ".join(errs)))
        elif name in volumes:
            out.append(duplicate(f"spec.volumes[{i}].name", name))
        volumes.add(str(name))
    containers = spec.get("containers") or []
    if not containers:
        out.append(required("spec.containers"))
    seen: set[str] = set()
    _validate_containers(containers, "spec.containers", seen, volumes, out)
    _validate_containers(spec.get("initContainers") or [], "spec.initContainers", seen, volumes, out)
    _enum(out, "spec.restartPolicy", spec.get("restartPolicy"), _RESTART_POLICIES)
    out.extend(_validate_tolerations(spec.get("tolerations") or [], "spec.tolerations"))
    _enum(out, "spec.dnsPolicy", spec.get("dnsPolicy"), _DNS_POLICIES)
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        out.append(invalid("spec.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0"))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= 0:
        out.append(
            invalid("spec.activeDeadlineSeconds", deadline, "must be between 1 and 2147483647, inclusive")
        )
    node_name = spec.get("nodeName")
    if node_name:
        errs = dns1123_subdomain_errors(str(node_name))
        if errs:
            out.append(invalid("spec.nodeName", node_name, "; ".join(errs)))
    return out


def validate_object(obj: dict[str, Any], *, strict: bool = True) -> list[dict[str, str]]:
    """Causes for obj against its official schema and kind rules; [] when valid. The mirror-pod
    annotation rules are not included: run validate_mirror_pod(new, old) on every pod write.

    strict=True also reports each undeclared field as FieldValueInvalid `unknown field "<path>"`.
    (The real server answers unknown fields under fieldValidation=Strict with a 400
    `strict decoding error: unknown field "<path>"`; use unknown_fields() to build that instead.)
    """
    result = _schema_pass(obj)
    causes = list(result.causes)
    if strict:
        causes.extend(
            cause("FieldValueInvalid", path, unknown_field_message(path)) for path in result.unknown
        )
    if result.decode:
        return _dedupe(causes)  # the real server stops at decoding; kind rules need well-typed input
    if obj.get("apiVersion") == "v1" and obj.get("kind") == "Event":
        # core/v1 events get only legacyValidateEvent, no metadata checks (backwards compatibility)
        causes.extend(_validate_event(obj))
        return _dedupe(causes)
    causes.extend(_validate_metadata(obj))
    if obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        causes.extend(_validate_pod(obj))
    if obj.get("kind") == "Node" and obj.get("apiVersion") == "v1":
        causes.extend(_validate_taints(_dict(obj.get("spec")).get("taints") or [], "spec.taints"))
    if obj.get("kind") in ("ConfigMap", "Secret") and obj.get("apiVersion") == "v1":
        causes.extend(_validate_config_data(obj))
    if obj.get("kind") == "Lease" and obj.get("apiVersion") == "coordination.k8s.io/v1":
        causes.extend(_validate_lease(obj))
    return _dedupe(causes)


def _dedupe(causes: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for c in causes:
        key = (c["reason"], c["field"], c["message"])
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


# ---------------------------------------------------------------------------------------------
# Pod updates

UPDATABLE_POD_SPEC_FIELDS = ",".join(
    [
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    ]
)


def _spec_diff(old: Any, new: Any, path: str, lines: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            _spec_diff(old.get(key), new.get(key), _child(path, key), lines)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _spec_diff(a, b, f"{path}[{i}]", lines)
        return
    lines.append(f"- \t{path}: {json.dumps(old, sort_keys=True)},")
    lines.append(f"+ \t{path}: {json.dumps(new, sort_keys=True)},")


def _only_added_tolerations(old: list[Any], new: list[Any]) -> bool:
    """validateOnlyAddedTolerations (pkg/apis/core/validation/validation.go): every old toleration
    is still there, tolerationSeconds aside. The Go structs are compared, so an absent field equals
    its zero value (`value: ""` is no value); `operator` has no default, "" is not "Equal"."""

    def fields(t: Any) -> Any:
        return (
            tuple(t.get(k) or "" for k in ("key", "operator", "value", "effect"))
            if isinstance(t, dict)
            else t
        )

    remaining = [fields(t) for t in new]
    return all(fields(t) in remaining for t in old)


def validate_pod_update(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    """Causes for changing pod old into new through the main resource (pkg/apis/core/validation
    ValidatePodUpdate): immutable metadata and non-updatable spec fields. The mirror annotation
    rules are validate_mirror_pod's (callers run it for every pod write, status included)."""
    out: list[dict[str, str]] = []
    old_meta, new_meta = _dict(old.get("metadata")), _dict(new.get("metadata"))
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if new_meta.get(key) and new_meta.get(key) != old_meta.get(key):
            out.append(invalid(f"metadata.{key}", new_meta.get(key), "field is immutable"))
    old_spec, new_spec = _dict(old.get("spec")), _dict(new.get("spec"))
    munged = copy.deepcopy(new_spec)
    for kind in ("containers", "initContainers"):
        olds = old_spec.get(kind) or []
        news = munged.get(kind) or []
        if len(olds) == len(news):
            for o, n in zip(olds, news, strict=True):
                if isinstance(o, dict) and isinstance(n, dict) and "image" in o:
                    n["image"] = o["image"]
    new_deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if new_deadline is not None:
        if old_deadline is None or new_deadline <= old_deadline:
            _set_or_drop(munged, "activeDeadlineSeconds", old_deadline)
        else:
            out.append(
                invalid(
                    "spec.activeDeadlineSeconds", new_deadline, "must be less than or equal to previous value"
                )
            )
            _set_or_drop(munged, "activeDeadlineSeconds", old_deadline)
    elif old_deadline is not None:
        out.append(
            invalid(
                "spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil value"
            )
        )
        _set_or_drop(munged, "activeDeadlineSeconds", old_deadline)
    if not _only_added_tolerations(old_spec.get("tolerations") or [], new_spec.get("tolerations") or []):
        out.append(
            forbidden(
                "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
            )
        )
    _set_or_drop(munged, "tolerations", old_spec.get("tolerations"))
    old_grace, new_grace = (
        old_spec.get("terminationGracePeriodSeconds"),
        new_spec.get("terminationGracePeriodSeconds"),
    )
    if isinstance(old_grace, int) and old_grace < 0 and new_grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged != old_spec:
        lines = ["  core.PodSpec{"]
        _spec_diff(old_spec, munged, "spec", lines)
        lines.append("  }")
        diff = "\n".join(lines)
        out.append(
            forbidden(
                "spec", f"pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{diff}"
            )
        )
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _set_or_drop(spec: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        spec.pop(key, None)
    else:
        spec[key] = copy.deepcopy(value)


def validate_mirror_pod(new: dict[str, Any], old: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """The mirror-pod annotation rules (ValidatePodSpecificAnnotations/-Updates, reference §7.7):
    a pod with the annotation must name its node (every write); with old given (an update of the
    main resource or of pods/status) the annotation may not be added, removed or changed."""
    out: list[dict[str, str]] = []
    new_ann = _dict(_dict(new.get("metadata")).get("annotations"))
    field = f"metadata.annotations[{MIRROR_POD_ANNOTATION}]"
    if old is not None:
        old_ann = _dict(_dict(old.get("metadata")).get("annotations"))
        for key, value in old_ann.items():
            if key.startswith(MIRROR_POD_ANNOTATION) and new_ann.get(key) != value:
                out.append(
                    forbidden(
                        f"metadata.annotations[{key}]", "may not remove or update mirror pod annotation"
                    )
                )
        for key in new_ann:
            if key.startswith(MIRROR_POD_ANNOTATION) and key not in old_ann:
                out.append(forbidden(f"metadata.annotations[{key}]", "may not add mirror pod annotation"))
    if MIRROR_POD_ANNOTATION in new_ann and not _dict(new.get("spec")).get("nodeName"):
        out.append(
            invalid(
                field,
                new_ann[MIRROR_POD_ANNOTATION],
                "must set spec.nodeName if mirror pod annotation is set",
            )
        )
    return out
