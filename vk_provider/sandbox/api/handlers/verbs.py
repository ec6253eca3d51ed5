"""HTTP handlers for the sandbox's resource endpoints: CRUD, status subresources and watch.

What lives here: `ApiContext`, the verb handlers get/list/create/update/patch/delete/
deletecollection (watch is in watch.py; dispatch.py routes requests), the body
decoding (JSON, YAML, or protobuf for the kinds api/protobuf.py knows; then read as the kind's Go type,
a wrong-typed field being the real server's 400, `read_typed_body` for the subresources' and
reviews' bodies) with `fieldValidation` (Strict -> 400 strict decoding error, Warn -> `Warning`
headers, Ignore), defaulting, admission and validation (422 with causes), dryRun, the
resourceVersion rules for GET/LIST, and the JSON / Status / Table response helpers.
Must not: implement storage semantics (storage/store.py) or discovery (api/discovery.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml
from aiohttp import web
from multidict import CIMultiDict

from vk_provider.sandbox.api import errors, protobuf, tables
from vk_provider.sandbox.api.defaults import (
    admit_update,
    apply_defaults,
    mirror_pod_refusal,
    prepare_for_create,
)
from vk_provider.sandbox.api.errors import ApiError
from vk_provider.sandbox.api.patch import PatchError, apply_patch
from vk_provider.sandbox.api.requestinfo import RequestInfo
from vk_provider.sandbox.api.resources import ResourceInfo
from vk_provider.sandbox.api.validation.field import go_quote
from vk_provider.sandbox.api.validation.kinds import (
    validate_config_update,
    validate_mirror_pod,
    validate_object,
    validate_pod_update,
)
from vk_provider.sandbox.api.validation.schema import (
    MAX_DEPTH,
    decode,
    definition_name,
    too_deep,
    unknown_field_message,
)
from vk_provider.sandbox.pki.authority import SandboxPKI
from vk_provider.sandbox.storage.store import GENERATED_SUFFIX_LENGTH, MAX_GENERATED_PREFIX, Store, clone

Obj = dict[str, Any]
JSON = "application/json"
TOO_LARGE_RV_WAIT = 3.0


@dataclass
class ApiContext:
    store: Store
    pki: SandboxPKI
    token_key: bytes


# ------------------------------------------------------------------ responses


def _is_control(c: str) -> bool:
    return c < "\x20" or "\x7f" <= c <= "\x9f"  # Go's unicode.IsControl


def json_response(obj: Any, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    headers: CIMultiDict[str] = CIMultiDict()
    for w in warnings or []:
        if any(map(_is_control, w)):
            continue  # NewWarningHeader refuses it, so the apiserver drops it (apimachinery util/net/http.go)
        headers.add("Warning", '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"')
    body = json.dumps(obj, separators=(",", ":")).encode()
    return web.Response(body=body, status=status, content_type=JSON, headers=headers)


def error_response(err: ApiError) -> web.Response:
    response = json_response(err.status(), err.code)
    retry = (err.details or {}).get("retryAfterSeconds")
    if retry and err.code in (429, 503, 504):
        response.headers["Retry-After"] = str(retry)
    return response


def success_status(code: int) -> Obj:
    """The Status of a write that returns no object (binding, eviction)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def not_found_resource() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return any("as=Table" in part and "g=meta.k8s.io" in part for part in accept.split(","))


def table_of(
    request: web.Request, info: ResourceInfo, objs: list[Obj], rv: str | Obj, with_columns: bool = True
) -> Obj:
    """rv: the resourceVersion, or the whole list metadata (with `continue`, which kubectl follows)."""
    include = request.query.get("includeObject", "Metadata")
    return tables.to_table(
        info.name,
        objs,
        list_meta=rv if isinstance(rv, dict) else {"resourceVersion": rv},
        include_object=include,
        now=datetime.now(UTC),
        column_definitions=with_columns,
    )


def _list_item(obj: Obj) -> Obj:
    """Items of a typed list carry no kind/apiVersion on the wire."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def _name_of(ri: RequestInfo, info: ResourceInfo) -> tuple[str | None, str]:
    return (ri.namespace if info.namespaced else None), ri.name


# ------------------------------------------------------------------ resourceVersion rules


async def _wait_for_rv(store: Store, rv: str | None, *, listing: bool = False) -> None:
    """GET/LIST with a resourceVersion newer than the store's: wait ~3 s, then 504 (cacher)."""
    if not rv or rv == "0":
        return
    try:
        wanted = errors.parse_resource_version(rv)
    except ApiError as e:
        if not listing:
            raise
        # storage.ValidateListOptions (k8s.io/apiserver pkg/storage/util.go) wraps it in a 400
        raise errors.bad_request(f"invalid resource version: {e.message}") from None
    deadline = asyncio.get_running_loop().time() + TOO_LARGE_RV_WAIT
    while int(store.resource_version) < wanted:
        if asyncio.get_running_loop().time() > deadline:
            raise errors.timeout(
                f"Timeout: Too large resource version: {wanted}, current: {store.resource_version}",
                [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            )
        await asyncio.sleep(0.05)


def list_options_invalid(field: str, message: str) -> ApiError:
    return errors.invalid(
        "ListOptions",
        "",
        [{"reason": "FieldValueForbidden", "message": f"Forbidden: {message}", "field": field}],
        "meta.k8s.io",
    )


# ------------------------------------------------------------------ reads


async def get_object(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    await _wait_for_rv(ctx.store, request.query.get("resourceVersion"))
    namespace, name = _name_of(ri, info)
    obj = await ctx.store.get(info.key, namespace, name)
    if wants_table(request):
        return json_response(table_of(request, info, [obj], obj["metadata"]["resourceVersion"]))
    return json_response(obj)


async def list_objects(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    q = request.query
    rv, match = q.get("resourceVersion", ""), q.get("resourceVersionMatch", "")
    if match and not rv:
        raise list_options_invalid(
            "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"
        )
    if match not in ("", "Exact", "NotOlderThan"):
        raise errors.invalid(
            "ListOptions",
            "",
            [
                {
                    "reason": "FieldValueNotSupported",
                    "message": f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"',
                    "field": "resourceVersionMatch",
                }
            ],
            "meta.k8s.io",
        )
    if q.get("continue") and rv:
        raise errors.bad_request("specifying resource version is not allowed when using continue")
    exact = match == "Exact" or (
        not match and q.get("limit") and rv not in ("", "0") and not q.get("continue")
    )
    await _wait_for_rv(ctx.store, rv, listing=True)
    namespace = ri.namespace if info.namespaced else None
    # An Exact list (and a continued one) is served at that RV, as etcd serves old revisions
    at_rv, after = (int(rv) if exact else None), ""
    if q.get("continue"):
        at_rv, after = _decode_continue(q["continue"], namespace)
    selectors = q.get("labelSelector", ""), q.get("fieldSelector", "")
    try:
        page = await ctx.store.list_page(
            info.key,
            namespace,
            label_selector=selectors[0],
            field_selector=selectors[1],
            at_rv=at_rv,
            limit=_limit(q.get("limit", "")),
            after=after,
        )
    except ApiError as e:
        if e.code == 410 and q.get("continue"):
            raise errors.expired(CONTINUE_EXPIRED) from None
        raise
    list_meta: Obj = {"resourceVersion": page.resource_version}
    if page.last_key:
        list_meta["continue"] = _encode_continue(page.resource_version, page.last_key, namespace)
        if not any(selectors):  # only an unfiltered list knows how many are left
            list_meta["remainingItemCount"] = page.remaining
    if wants_table(request):
        return json_response(table_of(request, info, page.items, list_meta))
    return json_response(
        {
            "kind": f"{info.kind}List",
            "apiVersion": info.api_version,
            "metadata": list_meta,
            "items": [_list_item(i) for i in page.items],
        }
    )


# The etcd3 store's answer to a continue token older than its history (k8s.io/apiserver
# pkg/storage/etcd3/store.go, via errors.NewResourceExpired).
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


def _limit(value: str) -> int:
    try:
        return max(0, int(value)) if value else 0
    except ValueError:
        raise errors.bad_request(f"invalid limit: {value}") from None


def _encode_continue(rv: str, last_key: str, namespace: str | None) -> str:
    """The real continue token (k8s.io/apiserver pkg/storage/continue.go EncodeContinue): base64url
    (unpadded) JSON of the list RV and the key to start after, relative to the listed prefix."""
    relative = last_key.split("/", 1)[1] if namespace is not None and "/" in last_key else last_key
    token = {"v": "meta.k8s.io/v1", "rv": int(rv), "start": "/" + relative + "\x00"}
    return base64.urlsafe_b64encode(json.dumps(token, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode_continue(token: str, namespace: str | None) -> tuple[int, str]:
    """(list RV, key to start after) of a continue token; 400 for one that is not valid."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = json.loads(raw)
        rv, start = int(decoded["rv"]), str(decoded["start"])
        if decoded.get("v") != "meta.k8s.io/v1" or rv <= 0 or not start.startswith("/"):
            raise ValueError
    except (ValueError, TypeError, KeyError):
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from None
    relative = start[1:].rstrip("\x00")
    return rv, (f"{namespace}/{relative}" if namespace is not None else relative)


# ------------------------------------------------------------------ writes


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
    return await asyncio.to_thread(_decode_body, media_type, raw)  # 3 MiB of YAML takes seconds


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


def _field_validation(request: web.Request) -> str:
    mode = request.query.get("fieldValidation", "")
    if mode not in ("", "Strict", "Warn", "Ignore"):
        raise errors.options_invalid(
            _OPTIONS_KIND.get(request.method, "CreateOptions"),
            "fieldValidation",
            f'Unsupported value: "{mode}": supported values: "", "Ignore", "Strict", "Warn"',
        )
    return mode or "Warn"


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


def validate(info: ResourceInfo, obj: Obj, old: Obj | None, subresource: str | None) -> None:
    name = (obj.get("metadata") or {}).get("name") or ""
    causes = validate_object(obj, strict=False)
    if info.key in ("configmaps", "secrets") and old is not None:
        causes = validate_config_update(old, obj) + causes  # the update rules come first
    if info.key == "pods":
        causes += validate_mirror_pod(obj, old)
        if old is not None and subresource is None:
            causes += validate_pod_update(old, obj)
    if old is not None and old["metadata"].get("deletionTimestamp"):
        # ValidateObjectMetaUpdate: a deleting object keeps or loses finalizers, never gains any
        kept = set(old["metadata"].get("finalizers") or [])
        added = [f for f in (obj.get("metadata") or {}).get("finalizers") or [] if f not in kept]
        if added:
            found = "[]string{" + ", ".join(json.dumps(f) for f in added) + "}"
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "message": f"Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {found}",
                    "field": "metadata.finalizers",
                }
            )
    if causes:
        raise errors.invalid(info.kind, name, causes, info.group)


def _check_identity(ri: RequestInfo, info: ResourceInfo, obj: Obj) -> None:
    """Name and namespace from the URL into a decoded object (a null metadata is an empty one)."""
    meta = obj["metadata"] = obj.get("metadata") or {}
    if info.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and body_ns != ri.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = ri.namespace
    if ri.name and meta.get("name") and meta["name"] != ri.name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({ri.name})"
        )
    if ri.name:
        meta["name"] = ri.name


async def create_object(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    mode = _field_validation(request)  # the options are validated before the body is decoded
    dry = dry_run(request)
    obj, duplicates = await read_body_noting_duplicates(request)
    # Decoding, defaulting and validating a 3 MiB object takes seconds: off the event loop
    warnings = await asyncio.to_thread(_admit_create, ri, info, obj, mode, duplicates)
    created = await ctx.store.create(info.key, obj, dry_run=dry)
    return json_response(created, 201, warnings)


def _admit_create(
    ri: RequestInfo, info: ResourceInfo, obj: Obj, mode: str, duplicates: list[str]
) -> list[str]:
    """Decode, default, admit and validate a new object in place; its warnings."""
    warnings: list[str] = []
    decode_fields(info, obj, mode, warnings, duplicates=duplicates)
    _check_identity(ri, info, obj)
    if obj["metadata"].get("resourceVersion"):
        # storage.ErrResourceVersionSetOnCreate from etcd3's Create: a plain error, so 500
        raise errors.storage_error("resourceVersion should not be set on objects to be created")
    apply_defaults(info, obj)
    refusal = mirror_pod_refusal(obj) if info.key == "pods" else None
    if refusal:
        raise errors.forbidden(info.name, obj["metadata"].get("name", ""), refusal)
    prepare_for_create(info, obj)
    prefix = obj["metadata"].get("generateName")
    if not obj["metadata"].get("name") and prefix:
        # rest.BeforeCreate generates the name before validation, which checks it like any name;
        # the store generates the real one: the prefix (cut to 58) and five lowercase letters
        obj["metadata"]["name"] = prefix[:MAX_GENERATED_PREFIX] + "x" * GENERATED_SUFFIX_LENGTH
        validate(info, obj, None, None)
        del obj["metadata"]["name"]
    else:
        validate(info, obj, None, None)
    return warnings


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


async def write_update(
    ctx: ApiContext,
    info: ResourceInfo,
    obj: Obj,
    subresource: str | None,
    warnings: list[str],
    dry: bool = False,
) -> web.Response:
    """Default, validate and store an update of an existing (or, where allowed, new) object."""
    meta = obj["metadata"]
    namespace = meta.get("namespace") if info.namespaced else None
    try:
        old: Obj | None = await ctx.store.get(info.key, namespace, meta.get("name") or "")
    except ApiError as e:
        if e.code != 404 or not info.allow_create_on_update or subresource:
            raise
        old = None
    await asyncio.to_thread(_admit_update, info, obj, old, subresource)
    if old is None:
        return json_response(await ctx.store.create(info.key, obj, dry_run=dry), 201, warnings)
    updated = await ctx.store.update(info.key, obj, subresource=subresource, dry_run=dry)
    return json_response(updated, 200, warnings)


def _admit_update(info: ResourceInfo, obj: Obj, old: Obj | None, subresource: str | None) -> None:
    """Default, admit and validate an update in place (a create where old is None)."""
    apply_defaults(info, obj)
    if old is None:
        prepare_for_create(info, obj)
        validate(info, obj, None, None)
        return
    if subresource is None:
        admit_update(info, obj, old)
    validate(info, _effective(info, old, obj, subresource), old, subresource)


def _effective(info: ResourceInfo, old: Obj, new: Obj, subresource: str | None) -> Obj:
    """What the update would store, for validation (status from old on the main resource, etc.)."""
    candidate = clone(new)
    meta = candidate["metadata"]
    for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if key in old["metadata"]:
            meta[key] = old["metadata"][key]
    if subresource in ("status", "approval"):
        candidate["spec"] = clone(old.get("spec") or {})
    elif info.has_status and "status" in old:
        candidate["status"] = clone(old["status"])
    return candidate


async def update_object(
    ctx: ApiContext,
    request: web.Request,
    ri: RequestInfo,
    info: ResourceInfo,
    *,
    subresource: str | None = None,
) -> web.Response:
    mode = _field_validation(request)
    dry = dry_run(request)
    obj, duplicates = await read_body_noting_duplicates(request)
    warnings: list[str] = []
    await asyncio.to_thread(decode_fields, info, obj, mode, warnings, duplicates=duplicates)
    _check_identity(ri, info, obj)
    return await write_update(ctx, info, obj, subresource or None, warnings, dry)


async def patch_object(
    ctx: ApiContext,
    request: web.Request,
    ri: RequestInfo,
    info: ResourceInfo,
    *,
    subresource: str | None = None,
) -> web.Response:
    mode = _field_validation(request)
    dry = dry_run(request)
    raw = await request.read()
    warnings: list[str] = []
    namespace, name = _name_of(ri, info)
    current = await ctx.store.get(info.key, namespace, name)
    content_type = request.headers.get("Content-Type", "")
    patched = await asyncio.to_thread(_patched, info, current, raw, content_type, mode, warnings)
    _check_identity(ri, info, patched)
    return await write_update(ctx, info, patched, subresource or None, warnings, dry)


def _patched(
    info: ResourceInfo, current: Obj, raw: bytes, content_type: str, mode: str, warnings: list[str]
) -> Obj:
    """The object a patch makes of current, decoded as its kind."""
    try:
        patched = apply_patch(current, raw, content_type, kind=info.kind, api_version=info.api_version)
    except PatchError as e:
        raise ApiError(e.code, e.reason, e.message, {} if e.generic else None) from None
    decode_fields(info, patched, mode, warnings, patched=True)
    return patched


async def read_delete_options(request: web.Request) -> Obj | None:
    """A DELETE's DeleteOptions body, if it has one, decoded as its type."""
    if not request.can_read_body or not await request.read():
        return None
    return await read_typed_body(request, "DeleteOptions", "v1", prefixed=False)


def _delete_options(body: Obj | None, request: web.Request) -> tuple[int | None, Obj]:
    body = body or {}
    grace = body.get("gracePeriodSeconds")
    if request.query.get("gracePeriodSeconds"):
        try:
            grace = int(request.query["gracePeriodSeconds"])
        except ValueError:
            raise errors.bad_request(
                f"invalid gracePeriodSeconds: {request.query['gracePeriodSeconds']}"
            ) from None
    return grace, body.get("preconditions") or {}


async def delete_object(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    body = await read_delete_options(request)
    grace, preconditions = _delete_options(body, request)
    namespace, name = _name_of(ri, info)
    if dry_run(request, body):
        # Store.Delete with dryRun (k8s.io/apiserver pkg/registry/generic/registry/store.go): what
        # the deletion would answer, the graceful update (deletionTimestamp) included
        obj = await ctx.store.delete(
            info.key, namespace, name, grace_period_seconds=grace, preconditions=preconditions, dry_run=True
        )
        kept = info.graceful_delete or bool(obj["metadata"].get("finalizers"))
        return json_response(obj if kept or info.return_deleted_object else _deleted_status(info, name, obj))
    result = await perform_delete(ctx, info, namespace, name, grace, preconditions)
    return json_response(result)


async def perform_delete(
    ctx: ApiContext,
    info: ResourceInfo,
    namespace: str | None,
    name: str,
    grace: int | None,
    preconditions: Obj,
) -> Obj:
    """Delete and answer as the real server: the object while it still exists or for types that
    return it, else a Success Status."""
    obj = await ctx.store.delete(
        info.key, namespace, name, grace_period_seconds=grace, preconditions=preconditions
    )
    still_there = True
    try:
        await ctx.store.get(info.key, namespace, name)
    except ApiError:
        still_there = False
    if still_there or info.return_deleted_object:
        return obj
    return _deleted_status(info, name, obj)


def _deleted_status(info: ResourceInfo, name: str, obj: Obj) -> Obj:
    details: Obj = {"name": name}
    if info.group:
        details["group"] = info.group
    details["kind"] = info.name
    details["uid"] = obj["metadata"]["uid"]
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


async def delete_collection(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    body = await read_delete_options(request)
    grace, _ = _delete_options(body, request)
    namespace = ri.namespace if info.namespaced else None
    items, list_rv = await ctx.store.list(
        info.key,
        namespace,
        label_selector=request.query.get("labelSelector", ""),
        field_selector=request.query.get("fieldSelector", ""),
    )
    dry = dry_run(request, body)
    for item in items:
        meta = item["metadata"]
        try:
            await ctx.store.delete(
                info.key, meta.get("namespace"), meta["name"], grace_period_seconds=grace, dry_run=dry
            )
        except ApiError as e:
            if e.code != 404:
                raise
    # Store.DeleteCollection (k8s.io/apiserver pkg/registry/generic/registry/store.go) answers
    # the list it deleted from: the items as listed, before their deletion, at the list's RV
    return json_response(
        {
            "kind": f"{info.kind}List",
            "apiVersion": info.api_version,
            "metadata": {"resourceVersion": list_rv},
            "items": [_list_item(item) for item in items],
        }
    )
