"""HTTP handlers for the review APIs a kubelet calls to authenticate and authorize its clients.

What lives here: `REVIEW_HANDLERS` for `authentication.k8s.io/v1 tokenreviews` (verifies the
sandbox's own service account tokens, their audiences, expiry and bound pod, as
`pkg/serviceaccount/jwt.go` and `claims.go`), `selfsubjectreviews` (`kubectl auth whoami`: the
admin), and `authorization.k8s.io/v1 subjectaccessreviews` / `selfsubjectaccessreviews` (the
sandbox authorizes like `--authorization-mode=AlwaysAllow`).
Reviews are answered, never stored; their metadata is empty (apimachinery omits a zero
creationTimestamp), but a SelfSubjectReview's carries the time of the request, as upstream's
`pkg/registry/authentication/selfsubjectreview/rest.go`. `authenticate` is also what the
request guard (api/request_guard.py, through server.py) uses to accept a service account token as
an API credential. Must not: decide which requests need credentials (the request guard does).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from vk_sandbox.api.decoding import read_typed_body
from vk_sandbox.api.defaults import ADMIN_GROUPS, ADMIN_USER
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.handlers.context import ApiContext
from vk_sandbox.api.requestinfo import RequestInfo
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.api.responses import json_response
from vk_sandbox.pki.tokens import ISSUER, TokenError, verify_token
from vk_sandbox.storage.objects import now_rfc3339

Obj = dict[str, Any]
Handler = Callable[[ApiContext, web.Request, RequestInfo, ResourceInfo], Awaitable[web.StreamResponse]]


async def authenticate(ctx: ApiContext, token: str, wanted: list[str]) -> Obj:
    claims = verify_token(ctx.token_key, token, time.time())
    audiences = claims.get("aud") or []
    matched = [a for a in (wanted or [ISSUER]) if a in audiences]
    if not matched:
        raise TokenError("invalid bearer token, token audiences is invalid")
    k8s = claims.get("kubernetes.io") or {}
    namespace = k8s.get("namespace", "")
    sa = k8s.get("serviceaccount") or {}
    try:
        current = await ctx.store.get("serviceaccounts", namespace, sa.get("name", ""))
    except ApiError:
        raise TokenError(f'serviceaccounts "{sa.get("name", "")}" not found') from None
    if current["metadata"]["uid"] != sa.get("uid"):
        raise TokenError("invalid bearer token, service account UID does not match")
    extra: dict[str, list[str]] = {
        "authentication.kubernetes.io/credential-id": [f"JTI={claims.get('jti', '')}"]
    }
    pod = k8s.get("pod")
    if pod:
        try:
            bound = await ctx.store.get("pods", namespace, pod.get("name", ""))
        except ApiError:
            raise TokenError(f'pods "{pod.get("name", "")}" not found') from None
        if bound["metadata"]["uid"] != pod.get("uid"):
            raise TokenError("invalid bearer token, pod UID does not match")
        extra["authentication.kubernetes.io/pod-name"] = [pod["name"]]
        extra["authentication.kubernetes.io/pod-uid"] = [pod["uid"]]
    user = {
        "username": claims.get("sub", ""),
        "uid": sa.get("uid", ""),
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"],
        "extra": extra,
    }
    return {"authenticated": True, "user": user, "audiences": matched}


async def token_review(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    body = await read_typed_body(request, info.kind, info.api_version)
    spec = body.get("spec") or {}
    try:
        status = await authenticate(ctx, str(spec.get("token") or ""), list(spec.get("audiences") or []))
    except TokenError as e:
        status = {"user": {}, "error": f"[{e}]"}
    review = {
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {},
        "spec": spec,
        "status": status,
    }
    return json_response(review, 201)


async def access_review(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    """SubjectAccessReview and SelfSubjectAccessReview (`kubectl auth can-i`): always allowed."""
    body = await read_typed_body(request, info.kind, info.api_version)
    review = {
        "kind": info.kind,
        "apiVersion": info.api_version,
        "metadata": {},
        "spec": body.get("spec") or {},
        "status": {
            "allowed": True,
            "reason": "the vk-provider sandbox authorizes every request (AlwaysAllow)",
        },
    }
    return json_response(review, 201)


async def self_subject_review(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    """`kubectl auth whoami`: the sandbox's kubeconfig carries no credentials; everyone is the admin."""
    await read_typed_body(request, info.kind, info.api_version)
    review = {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": now_rfc3339()},
        "status": {"userInfo": {"username": ADMIN_USER, "groups": list(ADMIN_GROUPS)}},
    }
    return json_response(review, 201)


REVIEW_HANDLERS: dict[str, Handler] = {
    "tokenreviews.authentication.k8s.io": token_review,
    "selfsubjectreviews.authentication.k8s.io": self_subject_review,
    "subjectaccessreviews.authorization.k8s.io": access_review,
    "selfsubjectaccessreviews.authorization.k8s.io": access_review,
}
