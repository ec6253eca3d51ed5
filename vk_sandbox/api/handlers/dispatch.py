"""Routing a parsed resource request to its handler.

What lives here: `dispatch(ctx, request, ri)`: looks the resource up in the registry (404 for
unknown ones, 405 for verbs it does not serve), sends action subresources to subresources.py,
reviews to auth.py, status-like subresources and plain verbs to verbs.py.
Must not: implement any verb itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from vk_sandbox.api import errors
from vk_sandbox.api.handlers.auth import REVIEW_HANDLERS
from vk_sandbox.api.handlers.context import ApiContext
from vk_sandbox.api.handlers.reads import get_object, list_objects
from vk_sandbox.api.handlers.subresources import SUBRESOURCE_HANDLERS
from vk_sandbox.api.handlers.verbs import (
    create_object,
    delete_collection,
    delete_object,
    patch_object,
    update_object,
)
from vk_sandbox.api.handlers.watch import watch_objects
from vk_sandbox.api.requestinfo import RequestInfo
from vk_sandbox.api.resources import ResourceInfo, lookup
from vk_sandbox.api.responses import not_acceptable_unless_plain, not_found_resource

VerbHandler = Callable[[ApiContext, web.Request, RequestInfo, ResourceInfo], Awaitable[web.StreamResponse]]
VERB_HANDLERS: dict[str, VerbHandler] = {
    "get": get_object,
    "list": list_objects,
    "watch": watch_objects,
    "create": create_object,
    "update": update_object,
    "patch": patch_object,
    "delete": delete_object,
    "deletecollection": delete_collection,
}
_PATH_SUBRESOURCES = ("proxy",)  # may be followed by a path of their own


async def dispatch(ctx: ApiContext, request: web.Request, ri: RequestInfo) -> web.StreamResponse:
    info = lookup(ri.group, ri.version, ri.resource)
    if info is None or (ri.namespace is not None and not info.namespaced and ri.resource != "namespaces"):
        raise not_found_resource()
    if ri.subresource:
        if info.subresource(ri.subresource) is None or (
            len(ri.parts) > 3 and ri.subresource not in _PATH_SUBRESOURCES
        ):
            raise not_found_resource()
        handler = SUBRESOURCE_HANDLERS.get((info.key, ri.subresource))
        if handler is not None:
            return await handler(ctx, request, ri, info)
        if ri.verb == "get":
            return await get_object(ctx, request, ri, info)
        if ri.verb in ("update", "patch"):
            write = update_object if ri.verb == "update" else patch_object
            return await write(ctx, request, ri, info, subresource=ri.subresource)
        raise errors.method_not_allowed(request.method, f"{info.name}/{ri.subresource}")
    verb_handler = VERB_HANDLERS.get(ri.verb)
    if ri.verb not in info.verbs or verb_handler is None:
        raise errors.method_not_allowed(request.method, info.name)
    if info.namespaced and ri.verb == "create" and not ri.namespace:
        raise not_found_resource()
    review = REVIEW_HANDLERS.get(info.key)
    if review is not None:
        not_acceptable_unless_plain(request)
        return await review(ctx, request, ri, info)
    return await verb_handler(ctx, request, ri, info)
