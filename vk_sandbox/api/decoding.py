"""Decoding request bodies as the real apiserver's serializers and handlers do.

What lives here: the body readers (`read_body`, `read_body_noting_duplicates`: JSON with Go's
number and surrogate rules and the paths of duplicated keys, YAML, or protobuf for the kinds
protobuf.py knows; the 415 for other media types; a body that does not parse, or nests deeper than
MAX_DEPTH, is a 400), reading a body as its kind's Go type (`decode_typed`, `read_typed_body`: a
wrong-typed field is the real server's 400), the write options of the query (`field_validation`
for `fieldValidation`, `dry_run` for `dryRun`), and `decode_fields`, which applies fieldValidation
(Strict -> 400 strict decoding error, Warn -> `Warning` headers, Ignore) to unknown and
duplicated fields.
Must not: default, admit or validate objects (the verb handlers do), or touch the store.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from vk_sandbox.api import errors, protobuf
from vk_sandbox.api.off_loop import run_sized
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.api.responses import JSON
from vk_sandbox.api.validation.field import go_quote
from vk_sandbox.api.validation.schema import (
    MAX_DEPTH,
    decode,
    definition_name,
    too_deep,
    unknown_field_message,
)

Obj = dict[str, Any]


# What the real server's create/update routes consume (negotiation.NewUnsupportedMediaTypeError)
_BODY_TYPES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


async def read_body(request: web.Request) -> Obj:
    """The decoded body (JSON, YAML or protobuf)."""
    return (await read_body_noting_duplicates(request))[0]


async def read_typed_body(request: web.Request, kind: str, api_version: str, *, prefixed: bool = True) -> Obj:
    """The decoded body read as the given kind's type: 400 for a field of the wrong type (see
    `decode_typed`), so handlers can rely on the types of the fields they read."""
    body = await read_body(request)
    decode_typed(body, kind, api_version, prefixed=prefixed)
    return body


def decode_typed(obj: Obj, kind: str, api_version: str, *, prefixed: bool = True) -> list[str]:
    """Read obj as the Go decoder reads it into kind's type (validation.decode: nulls in lists and
    maps become zero values); raise its first error as the real server does, a 400 `<Kind> in
    version "<v>" cannot be handled as a <Kind>: json: cannot unmarshal ...` (runtime.Decode in
    k8s.io/apiserver pkg/endpoints/handlers/create.go; DeleteOptions, decoded on its own in
    delete.go, without the prefix). Returns the undeclared fields' paths."""
    definition = definition_name(api_version, kind)
    if definition is None:
        return []
    problems, unknown = decode(obj, definition)
    if problems:
        version = api_version.rsplit("/", 1)[-1]
        prefix = f'{kind} in version "{version}" cannot be handled as a {kind}: ' if prefixed else ""
        raise errors.bad_request(prefix + problems[0])
    return unknown


def _json_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _json_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


async def read_body_noting_duplicates(request: web.Request) -> tuple[Obj, list[str]]:
    """The decoded body and, for fieldValidation, the paths of a JSON body's duplicated fields.

    A body that does not parse is a 400, as the real server's serializers answer (nesting deeper
    than MAX_DEPTH included: encoding/json stops at a depth of 10000)."""
    media_type = request.headers.get("Content-Type", JSON).split(";", 1)[0].strip().lower()
    raw = await request.read()
    return await run_sized(len(raw), _decode_body, media_type, raw)  # 3 MiB of YAML takes seconds


def _decode_body(media_type: str, raw: bytes) -> tuple[Obj, list[str]]:
    if media_type == protobuf.CONTENT_TYPE:
        try:
            return protobuf.decode(raw), []
        except protobuf.UnsupportedKindError as e:
            raise errors.unsupported_media_type(
                f"accepted media types include: {_BODY_TYPES} ({e})"
            ) from None
        except protobuf.ProtobufError as e:
            raise errors.bad_request(f"the object provided is unrecognized: proto: {e}") from None
    if media_type == "application/yaml":
        try:
            body = yaml.safe_load(raw) if raw else None
            raw = json.dumps(body).encode()
        except (yaml.YAMLError, RecursionError, ValueError, TypeError) as e:
            raise errors.bad_request(f"couldn't get version/kind; yaml parse error: {e}") from None
    elif media_type not in (JSON, "", "*/*"):
        raise errors.unsupported_media_type(f"accepted media types include: {_BODY_TYPES}")
    try:
        body, duplicates = _loads_noting_duplicates(raw) if raw else (None, [])
        if too_deep(body):
            raise ValueError(f"exceeded max depth of {MAX_DEPTH}")
    except (ValueError, RecursionError) as e:
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {e}") from None
    if not isinstance(body, dict):
        raise errors.bad_request("Object 'Kind' is missing in '" + raw.decode(errors="replace")[:200] + "'")
    return body, duplicates


def _loads_noting_duplicates(raw: bytes) -> tuple[Any, list[str]]:
    """json.loads (the last of duplicated keys wins, as in Go), and the paths of duplicated keys."""
    repeated: dict[int, list[str]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in items:
            if key in obj:
                repeated.setdefault(id(obj), []).append(key)
            obj[key] = value
        return obj

    body = json.loads(raw, object_pairs_hook=pairs, parse_constant=_json_constant, parse_float=_json_float)
    found: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            found.extend(f"{path}.{k}" if path else k for k in repeated.get(id(value), []))
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    if repeated:
        walk(body, "")
    if b"\\ud" in raw.lower():  # an escaped surrogate: maybe a lone one
        body = _without_lone_surrogates(body)
    return body, found


def _without_lone_surrogates(value: Any) -> Any:
    """Strings with each unpaired surrogate escape (`"\\ud800"`) replaced by U+FFFD, as Go's
    decoder does (encoding/json unquote); Python keeps them, and they cannot be encoded."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    return value


# The options kind a verb's query parameters are validated as (ValidateCreateOptions etc.).
_OPTIONS_KIND = {
    "POST": "CreateOptions",
    "PUT": "UpdateOptions",
    "PATCH": "PatchOptions",
    "DELETE": "DeleteOptions",
}


def field_validation(request: web.Request) -> str:
    mode = request.query.get("fieldValidation", "")
    if mode not in ("", "Strict", "Warn", "Ignore"):
        raise errors.options_invalid(
            _OPTIONS_KIND.get(request.method, "CreateOptions"),
            "fieldValidation",
            f'Unsupported value: "{mode}": supported values: "", "Ignore", "Strict", "Warn"',
        )
    return mode or "Warn"


def dry_run(request: web.Request, options: Obj | None = None) -> bool:
    """dryRun=All in the query (or in a DeleteOptions body); other values are 422 (ValidateDryRun)."""
    values = [*request.query.getall("dryRun", []), *((options or {}).get("dryRun") or [])]
    if any(value != "All" for value in values):
        raise errors.options_invalid(
            _OPTIONS_KIND.get(request.method, "CreateOptions"),
            "dryRun",
            f'Unsupported value: {json.dumps(values, separators=(",", ":"))}: supported values: "All"',
        )
    return bool(values)


def decode_fields(
    info: ResourceInfo,
    obj: Obj,
    mode: str,
    warnings: list[str],
    duplicates: list[str] | None = None,
    *,
    patched: bool = False,
) -> None:
    """Decode obj as its kind (`decode_typed`: a wrong-typed field is a 400, or for a patched
    object the 422 `patch: Invalid value` of k8s.io/apiserver pkg/endpoints/handlers/patch.go),
    which drops unknown fields, then apply fieldValidation to them (and to duplicated ones):
    Strict raises 400, Warn collects warnings."""
    obj["apiVersion"] = info.api_version
    obj["kind"] = info.kind
    if not patched:
        unknown = decode_typed(obj, info.kind, info.api_version)
    else:
        problems, unknown = decode(obj, definition_name(info.api_version, info.kind))
        if problems:
            text = go_quote(json.dumps(obj, separators=(",", ":")))
            cause = {"reason": "FieldValueInvalid", "message": f"Invalid value: {text}: {problems[0]}"}
            raise errors.invalid("", "", [{**cause, "field": "patch"}])
    if not unknown and not duplicates:
        return
    # sigs.k8s.io/json strict decoding: `duplicate field "metadata.name"`, `unknown field "spec.x"`
    messages = [f"duplicate field {go_quote(p)}" for p in duplicates or []]
    messages += [unknown_field_message(p) for p in unknown]
    if mode == "Strict":
        raise errors.bad_request(
            f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
            f"strict decoding error: {', '.join(messages)}"
        )
    if mode == "Warn":
        warnings.extend(messages)
