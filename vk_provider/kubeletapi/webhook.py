"""Delegated authentication and authorization of kubelet API requests (`kubeletServer.auth: webhook`).

What lives here: `WebhookAuth`, which checks bearer tokens with a TokenReview and asks a
SubjectAccessReview whether a user may do what a request does on `nodes/<node>`, with the
kubelet's caches (authenticated tokens 2 min, allowed answers 5 min, denied 30 s), and
`request_attributes`, the kubelet's mapping of a request to a verb and a `nodes` subresource
(`pkg/kubelet/server/auth.go`: `/stats*` stats, `/metrics*` metrics, `/logs*` log, anything
else proxy). Must not: touch TLS or aiohttp (auth.py wires this in).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

TOKEN_TTL = 120.0
ALLOWED_TTL = 300.0
DENIED_TTL = 30.0

_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


class ReviewClient(Protocol):
    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def key(self) -> tuple[Any, ...]:
        return (self.name, self.uid, self.groups, tuple(sorted(self.extra.items())))


def request_attributes(method: str, path: str) -> tuple[str, str]:
    """(verb, subresource) of a request on `nodes/<node>`."""
    verb = _VERBS.get(method.upper(), method.lower())
    for prefix, subresource in (("/stats", "stats"), ("/metrics", "metrics"), ("/logs", "log")):
        if path == prefix or path.startswith(prefix + "/"):
            return verb, subresource
    return verb, "proxy"


def refusal(kind: str, user: User, verb: str, subresource: str) -> str:
    """`Forbidden (...)` or `Authorization error (...)`: the kubelet's texts (server.go InstallAuthFilter)."""
    return f"{kind} (user={user.name}, verb={verb}, resource=nodes, subresource={subresource})"


class WebhookAuth:
    def __init__(
        self, client: ReviewClient, node_name: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.node_name = node_name
        self._clock = clock
        self._tokens: dict[str, tuple[float, User | None]] = {}
        self._decisions: dict[tuple[Any, ...], tuple[float, bool, str]] = {}

    async def authenticate_token(self, token: str) -> User | None:
        """The token's user, or None when the apiserver does not vouch for it. Raises on API errors."""
        now = self._clock()
        cached = self._tokens.get(token)
        if cached is not None and cached[0] > now:
            return cached[1]
        review = await self.client.create(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        )
        status = review.get("status") or {}
        user: User | None = None
        if status.get("authenticated"):
            info = status.get("user") or {}
            user = User(
                name=str(info.get("username", "")),
                uid=str(info.get("uid", "")),
                groups=tuple(info.get("groups") or ()),
                extra={k: tuple(v) for k, v in (info.get("extra") or {}).items()},
            )
        self._tokens[token] = (now + TOKEN_TTL, user)
        return user

    async def authorize(self, user: User, verb: str, subresource: str) -> tuple[bool, str]:
        """(allowed, reason) from a SubjectAccessReview on nodes/<node>. Raises on API errors."""
        now = self._clock()
        key = (*user.key(), verb, subresource)
        cached = self._decisions.get(key)
        if cached is not None and cached[0] > now:
            return cached[1], cached[2]
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "resourceAttributes": {
                "verb": verb,
                "resource": "nodes",
                "subresource": subresource,
                "name": self.node_name,
            },
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        review = await self.client.create(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        status = review.get("status") or {}
        allowed, reason = bool(status.get("allowed")), str(status.get("reason", ""))
        self._decisions[key] = (now + (ALLOWED_TTL if allowed else DENIED_TTL), allowed, reason)
        return allowed, reason
