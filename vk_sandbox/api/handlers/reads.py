"""HTTP handlers for the sandbox's reads: GET and LIST of a resource.

What lives here: `get_object`, `list_objects` and their rules: a resourceVersion newer than the
store's waits ~3 s, then 504 (the cacher's); `resourceVersionMatch`; Exact lists at an old
resourceVersion; `limit` and the real continue token (k8s.io/apiserver pkg/storage/continue.go);
Tables; `list_options_invalid` for watch.py too.
Must not: write (verbs.py) or watch (watch.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from aiohttp import web

from vk_sandbox.api import errors
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.handlers.context import ApiContext, name_of
from vk_sandbox.api.requestinfo import RequestInfo
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.api.responses import json_response, table_of, wants_table
from vk_sandbox.storage.store import Store

Obj = dict[str, Any]
TOO_LARGE_RV_WAIT = 3.0


# ------------------------------------------------------------------ helpers


def list_item(obj: Obj) -> Obj:
    """Items of a typed list carry no kind/apiVersion on the wire."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


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
    namespace, name = name_of(ri, info)
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
        if at_rv == -1:  # an inconsistent continuation: the rest as it is now
            at_rv = None
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
            # handleCompactedErrorForPaging (storage/etcd3/errors.go): a token with rv -1 goes on
            # from the same key at the latest resourceVersion
            expired = errors.expired(CONTINUE_EXPIRED)
            expired.list_meta["continue"] = _encode_continue("-1", after, namespace)
            raise expired from None
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
            "items": [list_item(i) for i in page.items],
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
    """(list RV, key to start after) of a continue token, RV -1 for an inconsistent one
    (storage.DecodeContinue); 400 for one that is not valid."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = json.loads(raw)
        rv, start = int(decoded["rv"]), str(decoded["start"])
        if decoded.get("v") != "meta.k8s.io/v1" or rv == 0 or rv < -1 or not start.startswith("/"):
            raise ValueError
    except (ValueError, TypeError, KeyError):
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from None
    relative = start[1:].rstrip("\x00")
    return rv, (f"{namespace}/{relative}" if namespace is not None else relative)
