"""The OpenAPI documents kubectl reads: `/openapi/v3` (index), `/openapi/v3/<gv path>`, `/openapi/v2`.

Lives here: conversion of kubernetes-validate's JSON-schema definitions (validation/schema.SCHEMA_VERSION)
into OpenAPI schemas (`#/components/schemas/...` for v3, `#/definitions/...` for v2;
`x-kubernetes-group-version-kind` and the patch extensions kept), and paths for the resources of
the sandbox's registry with operations shaped like upstream's: PATCH carries
`x-kubernetes-group-version-kind`, the `fieldValidation` query parameter (kubectl's
server-side-validation check, `staging/src/k8s.io/cli-runtime/pkg/resource/query_param_verifier_v3.go`)
and a requestBody offering strategic merge patch (kubectl's `gvkSupportsPatchOpenAPIV3` then
computes apply patches from these schemas). Every document is built once per process.
Must not: serve HTTP (handlers do; v2 must go out as protobuf for kubectl, which this module does
not produce) or depend on anything but the packaged schemas and the resource registry.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from typing import Any

from vk_common.kube_version import KUBE_MINOR_VERSION
from vk_sandbox.api.resources import RESOURCES, ResourceInfo
from vk_sandbox.api.validation.schema import definition_name, definitions

Obj = dict[str, Any]

_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
_DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
_PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
_WATCH_EVENT = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


# ---------------------------------------------------------------------------------------------
# Schemas


def _convert(schema: Any, ref_prefix: str, *, wrap_refs: bool) -> Any:
    """JSON schema (2020-12, nullable type lists) to an OpenAPI schema object."""
    if not isinstance(schema, dict):
        return schema
    out: Obj = {}
    for key, value in schema.items():
        if key in ("$schema", "$id", "enum") or (key == "additionalProperties" and value is False):
            # kubernetes-validate adds apiVersion/kind enums and strictness the upstream spec lacks.
            continue
        if key == "$ref":
            out[key] = ref_prefix + value.rsplit("/", 1)[-1]
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "properties":
            out[key] = {name: _convert(prop, ref_prefix, wrap_refs=wrap_refs) for name, prop in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _convert(value, ref_prefix, wrap_refs=False)
        elif key == "oneOf":
            out[key] = [_convert(v, ref_prefix, wrap_refs=False) for v in value]
        else:
            out[key] = value
    if wrap_refs and "$ref" in out and len(out) > 1:
        # v3 upstream wraps a described reference in allOf (siblings of $ref are ignored in 3.0).
        ref = out.pop("$ref")
        out = {"allOf": [{"$ref": ref}], **out}
    return out


def _convert_definition(name: str, ref_prefix: str, *, v3: bool) -> Obj:
    converted: Obj = _convert(definitions()[name], ref_prefix, wrap_refs=v3)
    # Upstream spells the two scalar unions differently per version: v3 keeps oneOf without a
    # type (so `kubectl explain` shows <Quantity>/<IntOrString>), v2 declares them strings.
    if name == _INT_OR_STRING:
        converted["format"] = "int-or-string"
    if name in (_INT_OR_STRING, _QUANTITY) and not v3:
        converted.pop("oneOf", None)
        converted["type"] = "string"
    return converted


def _refs(schema: Any, found: set[str]) -> None:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.rsplit("/", 1)[-1])
            else:
                _refs(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _refs(value, found)


def _closure(roots: list[str]) -> list[str]:
    defs = definitions()
    seen: set[str] = set()
    todo = [r for r in roots if r in defs]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found: set[str] = set()
        _refs(defs[name], found)
        todo.extend(found - seen)
    return sorted(seen)


def _roots(resources: list[ResourceInfo]) -> list[str]:
    roots = [_STATUS, _DELETE_OPTIONS, _PATCH, _WATCH_EVENT]
    for info in resources:
        for kind in (info.kind, info.kind + "List"):
            name = definition_name(info.api_version, kind)
            if name:
                roots.append(name)
        for sub in info.subresources:
            api_version = f"{sub.group}/{sub.version}" if sub.group else sub.version
            name = definition_name(api_version, sub.kind)
            if name:
                roots.append(name)
    return roots


# ---------------------------------------------------------------------------------------------
# Paths


def _gvk(info: ResourceInfo, kind: str | None = None) -> Obj:
    return {"group": info.group, "version": info.version, "kind": kind or info.kind}


def _query(name: str, description: str, *, v3: bool, type_: str = "string") -> Obj:
    param: Obj = {"name": name, "in": "query", "description": description}
    if v3:
        param["schema"] = {"type": type_, "uniqueItems": True}
    else:
        param["type"] = type_
        param["uniqueItems"] = True
    return param


def _path_param(name: str, description: str, *, v3: bool) -> Obj:
    param: Obj = {"name": name, "in": "path", "description": description, "required": True}
    if v3:
        param["schema"] = {"type": "string", "uniqueItems": True}
    else:
        param["type"] = "string"
        param["uniqueItems"] = True
    return param


def _write_params(v3: bool, *, field_validation: bool = True) -> list[Obj]:
    params = [
        _query("dryRun", "When present, indicates that modifications should not be persisted.", v3=v3),
        _query(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
            v3=v3,
        ),
    ]
    if field_validation:
        params.append(
            _query(
                "fieldValidation",
                "fieldValidation instructs the server on how to handle objects in the request "
                "(POST/PUT/PATCH) containing unknown or duplicate fields. "
                "Valid values are: Ignore, Warn, Strict.",
                v3=v3,
            )
        )
    return params


def _response(schema_ref: str, *, v3: bool) -> Obj:
    if v3:
        return {
            "description": "OK",
            "content": {
                media: {"schema": {"$ref": schema_ref}}
                for media in ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
            },
        }
    return {"description": "OK", "schema": {"$ref": schema_ref}}


def _op_id(verb: str, info: ResourceInfo, suffix: str = "") -> str:
    group = "".join(p.capitalize() for p in info.group.split(".")[0:1]) if info.group else "Core"
    scope = "Namespaced" if info.namespaced and verb not in ("listForAllNamespaces",) else ""
    return f"{verb}{group}{info.version.capitalize()}{scope}{info.kind}{suffix}"


def _operation(
    verb: str,
    action: str,
    info: ResourceInfo,
    schema_ref: str,
    *,
    v3: bool,
    suffix: str = "",
    params: list[Obj] | None = None,
) -> Obj:
    op: Obj = {
        "tags": [f"{(info.group.split('.')[0] if info.group else 'core')}_{info.version}"],
        "description": f"{action} {info.kind}",
        "operationId": _op_id(verb, info, suffix),
        "responses": {"200": _response(schema_ref, v3=v3), "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(info),
    }
    if params:
        op["parameters"] = params
    return op


def _body(schema_ref: str, media_types: tuple[str, ...], *, v3: bool) -> Obj:
    if v3:
        return {
            "requestBody": {
                "content": {m: {"schema": {"$ref": schema_ref}} for m in media_types},
                "required": True,
            }
        }
    return {
        "parameters": [{"name": "body", "in": "body", "required": True, "schema": {"$ref": schema_ref}}],
        "consumes": list(media_types),
    }


def _with_body(op: Obj, body: Obj) -> Obj:
    op = dict(op)
    if "requestBody" in body:
        op["requestBody"] = body["requestBody"]
    else:
        op["parameters"] = [*op.get("parameters", []), *body["parameters"]]
        op["consumes"] = body["consumes"]
    return op


def _resource_paths(info: ResourceInfo, ref_prefix: str, *, v3: bool) -> dict[str, Obj]:
    name = definition_name(info.api_version, info.kind)
    list_name = definition_name(info.api_version, info.kind + "List")
    if name is None:
        return {}
    ref, list_ref = ref_prefix + name, ref_prefix + (list_name or name)
    status_ref, patch_ref = ref_prefix + _STATUS, ref_prefix + _PATCH
    base = f"/api/{info.version}" if not info.group else f"/apis/{info.group}/{info.version}"
    ns_params = [
        _path_param("namespace", "object name and auth scope, such as for teams and projects", v3=v3)
    ]
    collection = f"{base}/namespaces/{{namespace}}/{info.name}" if info.namespaced else f"{base}/{info.name}"
    common = {"parameters": ns_params} if info.namespaced else {}
    json_types = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
    paths: dict[str, Obj] = {}
    coll: Obj = dict(common)
    if "list" in info.verbs:
        coll["get"] = _operation("list", "list", info, list_ref, v3=v3)
    if "create" in info.verbs:
        coll["post"] = _with_body(
            _operation("create", "post", info, ref, v3=v3, params=_write_params(v3)),
            _body(ref, json_types, v3=v3),
        )
    if "deletecollection" in info.verbs:
        coll["delete"] = _operation("deleteCollection", "deletecollection", info, status_ref, v3=v3)
    paths[collection] = coll
    item_params = [_path_param("name", f"name of the {info.kind}", v3=v3), *ns_params]
    item: Obj = {"parameters": item_params}
    item["get"] = _operation("read", "get", info, ref, v3=v3)
    item["put"] = _with_body(
        _operation("replace", "put", info, ref, v3=v3, params=_write_params(v3)),
        _body(ref, json_types, v3=v3),
    )
    patch_params = [
        *_write_params(v3),
        _query("force", 'Force is going to "force" Apply requests.', v3=v3, type_="boolean"),
    ]
    item["patch"] = _with_body(
        _operation("patch", "patch", info, ref, v3=v3, params=patch_params),
        _body(patch_ref, _PATCH_TYPES, v3=v3),
    )
    item["delete"] = _with_body(
        _operation("delete", "delete", info, status_ref, v3=v3),
        _body(ref_prefix + _DELETE_OPTIONS, json_types, v3=v3),
    )
    paths[f"{collection}/{{name}}"] = item
    if info.has_status:
        status: Obj = {"parameters": item_params}
        status["get"] = _operation("read", "get", info, ref, v3=v3, suffix="Status")
        status["put"] = _with_body(
            _operation("replace", "put", info, ref, v3=v3, suffix="Status", params=_write_params(v3)),
            _body(ref, json_types, v3=v3),
        )
        status["patch"] = _with_body(
            _operation("patch", "patch", info, ref, v3=v3, suffix="Status", params=patch_params),
            _body(patch_ref, _PATCH_TYPES, v3=v3),
        )
        paths[f"{collection}/{{name}}/status"] = status
    return paths


# ---------------------------------------------------------------------------------------------
# Documents


def _gv_path(info: ResourceInfo) -> str:
    return f"api/{info.version}" if not info.group else f"apis/{info.group}/{info.version}"


def _group_versions() -> dict[str, list[ResourceInfo]]:
    gvs: dict[str, list[ResourceInfo]] = {}
    for info in RESOURCES.values():
        gvs.setdefault(_gv_path(info), []).append(info)
    return gvs


@functools.cache
def _v3_documents() -> dict[str, tuple[Obj, str]]:
    docs: dict[str, tuple[Obj, str]] = {}
    prefix = "#/components/schemas/"
    for gv_path, infos in _group_versions().items():
        paths: Obj = {}
        for info in infos:
            paths.update(_resource_paths(info, prefix, v3=True))
        schemas = {name: _convert_definition(name, prefix, v3=True) for name in _closure(_roots(infos))}
        doc: Obj = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": KUBE_MINOR_VERSION},
            "paths": paths,
            "components": {
                "schemas": schemas,
                "securitySchemes": {
                    "BearerToken": {
                        "type": "apiKey",
                        "description": "Bearer Token authentication",
                        "name": "authorization",
                        "in": "header",
                    }
                },
            },
        }
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()
        docs[gv_path] = (doc, digest)
    return docs


def openapi_v3_index() -> Obj:
    """GET /openapi/v3: one entry per group version, with a content hash in the URL as upstream."""
    return {
        "paths": {
            gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
            for gv, (_, digest) in _v3_documents().items()
        }
    }


def openapi_v3_document(group_version_path: str) -> Obj | None:
    """GET /openapi/v3/<path> for path `api/v1` or `apis/<group>/<version>`; None if not served.

    The returned dict is shared (built once): serialize it, do not modify it."""
    entry = _v3_documents().get(group_version_path.strip("/"))
    return None if entry is None else entry[0]


@functools.cache
def _v2_document() -> Obj:
    prefix = "#/definitions/"
    infos = list(RESOURCES.values())
    paths: Obj = {}
    for info in infos:
        paths.update(_resource_paths(info, prefix, v3=False))
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBE_MINOR_VERSION},
        "paths": paths,
        "definitions": {
            name: _convert_definition(name, prefix, v3=False) for name in _closure(_roots(infos))
        },
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
            }
        },
        "security": [{"BearerToken": []}],
    }


def openapi_v2() -> Obj:
    """GET /openapi/v2 as a JSON swagger 2.0 document (a deep copy; the cached one stays intact)."""
    return copy.deepcopy(_v2_document())
