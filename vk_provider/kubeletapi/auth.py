"""Authentication and authorization of kubelet API requests, as an aiohttp middleware.

What lives here: `auth_middleware(mode, x509_enabled, webhook)`, `allows_anonymous` (whether it
lets every request through) and `authenticated(request)` (whether it authenticated a request's
user: the listener stops counting the connection as unauthenticated). `none` lets everything
through. `x509` needs a client certificate verified by the TLS layer against `clientCAFile`
(401 without one) and allows every authenticated user. `webhook` authenticates a client
certificate or, with an apiserver client, a bearer token by TokenReview, then asks a
SubjectAccessReview for each of the request's subresources in turn, the fine-grained one (e.g.
`nodes/pods` for /pods) before `nodes/proxy`, allowed when one is (403 `Forbidden (user=...,
subresource(s)=[pods proxy])` when none is), as the 1.37 kubelet does;
without an apiserver client bearer tokens get a 401 saying so and certificate users are
allowed. A certificate without a common name authenticates no one (the apiserver's
`x509.CommonNameUserConversion`: an empty CN is not a user), so the request needs another
credential or gets 401. The server runs this before routing, so even a StrictSlash redirect
or a 404 needs credentials. Must not: load certificates (tls.py) or talk to the apiserver
itself (webhook.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from vk_common.logging import get_logger
from vk_provider.kubeletapi.webhook import (
    User,
    WebhookAuth,
    authorization_error,
    refusal,
    request_attributes,
)

log = get_logger("kubeletapi.auth")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
USER_KEY = web.RequestKey("kubelet_user", User)  # who made the request, once authenticated


def certificate_user(peercert: Any) -> User | None:
    """The user of a verified peer certificate (`ssl` dict form): CN and O as groups.

    None without a certificate, and for one whose common name is empty or missing, as
    `CommonNameUserConversion` (k8s.io/apiserver/pkg/authentication/request/x509/x509.go).
    """
    if not peercert:
        return None
    name, groups = "", []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                name = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    return User(name=name, groups=tuple(groups)) if name else None


def _request_certificate_user(request: web.Request) -> User | None:
    transport = request.transport
    peercert = transport.get_extra_info("peercert") if transport is not None else None
    user = certificate_user(peercert)
    if peercert and user is None:
        log.info(
            "a client certificate without a common name authenticates no one", extra={"path": request.path}
        )
    return user


def _unauthorized(message: str = "Unauthorized") -> web.Response:
    # The kubelet's authentication filter answers with http.Error(w, "Unauthorized", 401).
    return web.Response(status=401, text=message + "\n")


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    return header[7:].strip() if header[:7].lower() == "bearer " else None


def allows_anonymous(mode: str, x509_enabled: bool, webhook: WebhookAuth | None) -> bool:
    """Whether every request passes unauthenticated: `none`, or neither certificates nor tokens."""
    return mode == "none" or (not x509_enabled and webhook is None)


def authenticated(request: web.Request) -> bool:
    """Whether the middleware authenticated `request` (its user is set)."""
    return USER_KEY in request


async def _authorize(webhook: WebhookAuth, user: User, request: web.Request) -> web.Response | None:
    """None when one of the request's subresources is allowed, in the kubelet's order (the
    fine-grained one, then `proxy`); else the kubelet's 403, or 500 when a review failed."""
    verb, subresources = request_attributes(request.method, request.path)
    reasons = []
    for subresource in subresources:
        try:
            allowed, reason = await webhook.authorize(user, verb, subresource)
        except Exception as exc:
            log.warning("SubjectAccessReview failed", extra={"err": str(exc)})
            text = authorization_error(user, verb, subresource)
            return web.Response(status=500, text=text + "\n")
        if allowed:
            return None
        reasons.append(reason)
    log.info(
        "kubelet API request denied",
        extra={"verb": request.method, "path": request.path, "user": user.name, "reason": "; ".join(reasons)},
    )
    return web.Response(status=403, text=refusal(user, verb, subresources) + "\n")


def auth_middleware(mode: str, x509_enabled: bool, webhook: WebhookAuth | None = None) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if allows_anonymous(mode, x509_enabled, webhook):
            return await handler(request)
        user = _request_certificate_user(request)
        token = _bearer(request) if mode == "webhook" else None
        if user is None and token is not None:
            if webhook is None:
                log.info(
                    "refused a bearer token: no apiserver client for TokenReview",
                    extra={"path": request.path},
                )
                return _unauthorized(
                    "Unauthorized: bearer tokens (TokenReview) are not supported by this kubelet"
                )
            try:
                user = await webhook.authenticate_token(token)
            except Exception as exc:  # the apiserver's error: not authenticated, as the kubelet
                log.warning("TokenReview failed", extra={"err": str(exc)})
                return _unauthorized()
        if user is None:
            return _unauthorized()
        if webhook is not None:
            denied = await _authorize(webhook, user, request)
            if denied is not None:
                return denied
        request[USER_KEY] = user
        return await handler(request)

    return middleware
