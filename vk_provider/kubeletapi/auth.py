"""Authentication of kubelet API requests, as an aiohttp middleware.

What lives here: `auth_middleware(mode, x509_enabled)`. `none` lets everything through;
`x509` needs a client certificate verified by the TLS layer against `clientCAFile`;
`webhook` is x509 first, and a bearer token (which the real kubelet checks with a
TokenReview and SubjectAccessReview) is refused with a 401 saying so. Authenticated x509
users are allowed everything (the real kubelet asks a SubjectAccessReview; see
docs/kubelet-api.md). Must not: load certificates (tls.py) or know about routes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from vk_provider.logging import get_logger

log = get_logger("kubeletapi.auth")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
USER_KEY = web.RequestKey("kubelet_user", str)  # the authenticated x509 common name


def client_common_name(peercert: Any) -> str | None:
    """The CN of a verified peer certificate (`ssl` dict form), or None without one."""
    if not peercert:
        return None
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""


def _unauthorized(message: str = "Unauthorized") -> web.Response:
    # The kubelet's authentication filter answers with http.Error(w, "Unauthorized", 401).
    return web.Response(status=401, text=message + "\n")


def auth_middleware(mode: str, x509_enabled: bool) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if mode == "none" or not x509_enabled:
            return await handler(request)
        transport = request.transport
        user = client_common_name(transport.get_extra_info("peercert") if transport is not None else None)
        if user is not None:
            request[USER_KEY] = user
            return await handler(request)
        if mode == "webhook" and request.headers.get("Authorization", "").lower().startswith("bearer "):
            log.info("refused a bearer token for %s: TokenReview is not implemented", request.path)
            return _unauthorized(
                "Unauthorized: bearer tokens (TokenReview) are not supported by this kubelet"
            )
        return _unauthorized()

    return middleware
