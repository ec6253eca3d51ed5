"""The checks every request to the sandbox API passes before any handler sees it.

What lives here: `RequestGuard`, whose `middleware` (the first of the aiohttp application after
the listener's, vk_common/guarded_listener.py) in
this order refuses
- a `Host` that is neither a loopback name nor the server's own address (DNS rebinding), and an
  `Origin` that is present and not a loopback origin or the server's own address: 403 Forbidden;
- a request without `Authorization: Bearer <admin token>` or a valid service account token of
  the sandbox: 401 Unauthorized, as the apiserver's `filters.Unauthorized`
  (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go`). GET/HEAD of
  /healthz, /livez, /readyz, /version and /version/ stay open, as the real server's
  `system:public-info-viewer` role grants them to `system:unauthenticated`
  (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`);
- a body above `max_body` bytes: 413 RequestEntityTooLarge, as `limitedReadBody`
  (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go`), from its Content-Length
  before anything is read, or when a handler's read goes past the limit;
- a body whose Content-Type is not one the API decodes: 415 UnsupportedMediaType. A POST or
  PUT body without Content-Type is read as JSON, as the real server reads it
  (`NegotiateInputSerializerForMediaType` in k8s.io/apiserver pkg/endpoints/handlers/negotiation:
  the official `kubernetes` Python client sends its creates so), unless the request carries an
  `Origin` (a browser's, which sends one with every cross-site POST): then a missing one is
  refused too, so that a "simple" cross-site request never reaches a handler (the bearer token
  is what protects the API; this is a second fence). A PATCH needs its Content-Type, as on the
  real server. The `proxy` subresources pass any body through, as the real server's do.
It never sends CORS headers, so a browser's preflight never grants a cross-site request.
`authenticated(request)` says whether a request carried a valid token (or no token is required;
the open paths do not count): the listener then stops counting its connection as unauthenticated.
Must not: answer API requests, parse bodies, or look anything up in the store (service account
tokens are checked by the callable it is given).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from vk_sandbox.api import errors
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.requestinfo import parse_request
from vk_sandbox.api.responses import error_response

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
TokenCheck = Callable[[str], Awaitable[bool]]

OPEN_PATHS = frozenset(("/healthz", "/livez", "/readyz", "/version", "/version/"))
BODY_MEDIA_TYPES = frozenset(
    (
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    )
)
_WILDCARDS = ("", "0.0.0.0", "::")
_AUTHENTICATED = web.RequestKey("sandbox_authenticated", bool)
# What a create or update answers for a body it cannot decode (negotiation.NewUnsupportedMediaTypeError).
_DECODED = (
    "accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def _forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message, {})


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def _unsupported(method: str) -> ApiError:
    if method == "PATCH":
        # go-restful refuses a Content-Type the PATCH route does not consume, a missing one too
        # (route.go matchesContentType assumes application/octet-stream); the apiserver's
        # serviceErrorHandler (k8s.io/apiserver pkg/server/handler.go) renders it generically.
        return ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})
    return errors.unsupported_media_type(_DECODED)


def _hostname(authority: str) -> str | None:
    """The host of `host[:port]` (brackets of an IPv6 literal removed), lowercased; None if unparsable."""
    try:
        return urlsplit("//" + authority).hostname
    except ValueError:
        return None


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


class RequestGuard:
    def __init__(
        self,
        *,
        listen_host: str,
        admin_token: str,
        service_account_token: TokenCheck,
        require_token: bool = True,
        max_body: int,
    ) -> None:
        """listen_host: the address the server listens on; service_account_token: True for a
        valid service account token of the sandbox."""
        self._listen_host = listen_host.strip("[]").lower()
        self._admin_token = admin_token.encode()
        self._service_account_token = service_account_token
        self._require_token = require_token
        self._max_body = max_body

    def _local(self, name: str | None) -> bool:
        """A loopback name or address, or the address the server listens on."""
        if name is None:
            return False
        address = _ip(name)
        if name == "localhost" or (address is not None and address.is_loopback):
            return True
        if self._listen_host in _WILDCARDS:
            return address is not None  # any address of this machine; a rebinding needs a name
        return name == self._listen_host

    def _origin_allowed(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and self._local(parts.hostname)

    async def _authenticated(self, request: web.Request) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return False
        if hmac.compare_digest(token.encode(), self._admin_token):
            return True
        return await self._service_account_token(token)

    def _check_body(self, request: web.Request) -> None:
        length = request.content_length
        if length is not None and length > self._max_body:
            raise _too_large(self._max_body)
        if not request.body_exists:
            return
        if parse_request(request.method, request.path, request.query).subresource == "proxy":
            return
        media_type = request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        read_as_json = (
            not media_type and request.method in ("POST", "PUT") and "Origin" not in request.headers
        )
        if media_type not in BODY_MEDIA_TYPES and not read_as_json:
            raise _unsupported(request.method)

    async def _check(self, request: web.Request) -> None:
        host = request.headers.get("Host")
        if host is not None and not self._local(_hostname(host)):
            raise _forbidden(f"host {host!r} is not allowed: the sandbox API answers only to its own address")
        origin = request.headers.get("Origin")
        if origin is not None and not self._origin_allowed(origin):
            raise _forbidden(f"origin {origin!r} is not allowed: the sandbox API accepts only local origins")
        is_open = request.method in ("GET", "HEAD") and request.path in OPEN_PATHS
        if not self._require_token or await self._authenticated(request):
            request[_AUTHENTICATED] = True
        elif not is_open:
            raise unauthorized()
        self._check_body(request)

    @staticmethod
    def authenticated(request: web.Request) -> bool:
        return _AUTHENTICATED in request

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            await self._check(request)
        except ApiError as e:
            return error_response(e)
        try:
            return await handler(request)
        except web.HTTPRequestEntityTooLarge:  # a body without Content-Length, read past the limit
            return error_response(_too_large(self._max_body))
