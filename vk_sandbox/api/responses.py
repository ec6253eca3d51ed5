"""Responses of the sandbox API: JSON bodies with Warning headers, Status bodies, Tables.

What lives here: `JSON` (the media type), `json_response` (compact JSON with each warning as a
`Warning: 299 - "..."` header, control characters dropped as the apiserver's NewWarningHeader
does), `error_response` (an ApiError as its metav1.Status, with `Retry-After` for 429/503/504),
`success_status`, `not_found_resource` (the 404 of an unknown path), and the Table negotiation
(`wants_table` for `Accept: ...;as=Table;g=meta.k8s.io`, `table_of` via tables.py), as
`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters` writes them.
Must not: read request bodies (decoding.py) or the store.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from vk_sandbox.api import tables
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.resources import ResourceInfo

Obj = dict[str, Any]
JSON = "application/json"


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


_PLAIN_TYPES = (
    "",
    "*/*",
    "application/*",
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
)


def not_acceptable_unless_plain(request: web.Request) -> None:
    """For an endpoint with no Table or metadata-only form (the create-only reviews): 406 when
    every type the client accepts asks for a conversion, as NegotiateOutputMediaType answers
    when RequestScope.AllowsMediaTypeTransform refuses (k8s.io/apiserver pkg/endpoints/handlers)."""
    parts = [p.strip() for p in request.headers.get("Accept", "").split(",")] or [""]
    if any(p.split(";", 1)[0].strip().lower() in _PLAIN_TYPES and "as=" not in p for p in parts):
        return
    raise ApiError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )


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
