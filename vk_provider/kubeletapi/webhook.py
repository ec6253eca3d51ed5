"""Delegated authentication and authorization of kubelet API requests (`kubeletServer.auth: webhook`).

What lives here: `WebhookAuth`, which checks bearer tokens with a TokenReview and asks a
SubjectAccessReview whether a user may do what a request does on `nodes/<node>`, with the
kubelet's caches, and `request_attributes`, the 1.37 kubelet's mapping of a request to a verb
and the `nodes` subresources to try in order (`pkg/kubelet/server/auth.go`
GetRequestAttributes with KubeletFineGrainedAuthz, GA: `/pods`, `/runningpods` pods,
`/healthz` healthz, `/configz` configz, each then proxy; `/stats*` stats, `/metrics*` metrics,
`/logs*` log, `/checkpoint*` checkpoint, `/statusz` statusz, `/flagz` configz; anything else
proxy). Must not: touch TLS or aiohttp (auth.py wires this in).

Bounds: both caches are `ExpiringLRU`s of `CACHE_SIZE` (8192, the webhook authorizer's
`NewLRUExpireCache(8192)`) entries; expired entries are dropped when looked up and from the
least recently used end whenever one is added. TTLs are the kubelet's defaults
(`pkg/kubelet/apis/config/v1beta1/defaults.go`): a TokenReview answer 2 min, authenticated
or not (`authenticatorfactory.DelegatingAuthenticatorConfig` passes `CacheTTL` as both the
success and the failure TTL; API errors are not cached); allowed 5 min, denied 30 s. Tokens
are cached under an HMAC-SHA256 with a random key, as `token/cache.keyFunc`, so the cache
holds no token. TokenReviews that do not authenticate are rate-limited by a `ReviewBudget`,
a token bucket of `FAILED_REVIEWS_BURST` (20) refilled at `FAILED_REVIEWS_PER_SECOND` (10):
a review takes one before it is sent and gives it back when the token authenticated, so a
flood of junk tokens costs at most 20 reviews + 10 a second; over the limit an uncached
token is unauthenticated without a review (a WARNING with the count at most once a minute;
cached users keep working; a new good token competes with the flood for those reviews). The
Go kubelet bounds such a flood only by its apiserver client's rate limit (kubeAPIQPS 50,
kubeAPIBurst 100, shared with everything).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from vk_common.logging import get_logger

log = get_logger("kubeletapi.webhook")

TOKEN_TTL = 120.0  # authentication.webhook.cacheTTL
UNAUTHENTICATED_TTL = TOKEN_TTL  # the same CacheTTL (delegating.go: cache.New(..., CacheTTL, CacheTTL))
ALLOWED_TTL = 300.0  # authorization.webhook.cacheAuthorizedTTL
DENIED_TTL = 30.0  # authorization.webhook.cacheUnauthorizedTTL
CACHE_SIZE = 8192  # plugin/pkg/authorizer/webhook: cache.NewLRUExpireCache(8192)
FAILED_REVIEWS_BURST = 20
FAILED_REVIEWS_PER_SECOND = 10.0
REFUSALS_REPORTED_EVERY = 60.0  # seconds between warnings about refused tokens

K = TypeVar("K")
V = TypeVar("V")

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


# auth.go: the fine-grained subresource checked first (then the last list's, else proxy) ...
_FINE_GRAINED = (
    ("/allocatedPods", "pods"),
    ("/pods", "pods"),
    ("/healthz", "healthz"),
    ("/configz", "configz"),
    ("/runningpods", "pods"),
)
# ... and the one subresource of a path (proxy when none matches).
_SUBRESOURCES = (
    ("/stats", "stats"),
    ("/metrics", "metrics"),
    ("/logs", "log"),
    ("/checkpoint", "checkpoint"),
    ("/statusz", "statusz"),
    ("/flagz", "configz"),
)


def _is_subpath(path: str, prefix: str) -> bool:
    """auth.go isSubpath: the path itself or below it."""
    return path == prefix or path.startswith(prefix + "/")


def request_attributes(method: str, path: str) -> tuple[str, tuple[str, ...]]:
    """(verb, subresources) of a request on `nodes/<node>`: allowed when one of them is."""
    verb = _VERBS.get(method.upper(), method.lower())
    first = next((s for prefix, s in _FINE_GRAINED if _is_subpath(path, prefix)), None)
    last = next((s for prefix, s in _SUBRESOURCES if _is_subpath(path, prefix)), "proxy")
    return verb, ((first, last) if first is not None else (last,))


def refusal(user: User, verb: str, subresources: tuple[str, ...]) -> str:
    """The kubelet's 403 text (server.go InstallAuthFilter): `Forbidden (..., subresource(s)=[a b])`."""
    tried = " ".join(subresources)
    return f"Forbidden (user={user.name}, verb={verb}, resource=nodes, subresource(s)=[{tried}])"


def authorization_error(user: User, verb: str, subresource: str) -> str:
    """The kubelet's 500 text when a SubjectAccessReview fails (server.go InstallAuthFilter)."""
    return f"Authorization error (user={user.name}, verb={verb}, resource=nodes, subresource={subresource})"


class ExpiringLRU(Generic[K, V]):
    """At most `size` entries, each until its expiry time on `clock` (apimachinery's LRUExpireCache)."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self.size = size
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()  # least recently used first

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def set(self, key: K, value: V, ttl: float) -> None:
        now = self._clock()
        self._drop_expired(now)
        self._entries[key] = (now + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def _drop_expired(self, now: float) -> None:
        while self._entries:
            oldest = next(iter(self._entries.values()))
            if oldest[0] > now:
                return
            self._entries.popitem(last=False)


class ReviewBudget:
    """A token bucket that refuses instead of waiting (unlike kube.client's): `burst` tokens,
    refilled at `rate` per second of `clock`."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self.rate, self.burst = rate, burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def take(self) -> bool:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def give_back(self) -> None:
        self._tokens = min(float(self.burst), self._tokens + 1.0)


@dataclass(frozen=True)
class _Answer:
    user: User | None  # None: the apiserver did not vouch for the token


class WebhookAuth:
    def __init__(
        self,
        client: ReviewClient,
        node_name: str,
        clock: Callable[[], float] = time.monotonic,
        *,
        cache_size: int = CACHE_SIZE,
        failed_reviews: ReviewBudget | None = None,
    ) -> None:
        self.client = client
        self.node_name = node_name
        self._key = secrets.token_bytes(32)
        self.tokens: ExpiringLRU[bytes, _Answer] = ExpiringLRU(cache_size, clock)
        self.decisions: ExpiringLRU[tuple[Any, ...], tuple[bool, str]] = ExpiringLRU(cache_size, clock)
        self.failed_reviews = failed_reviews or ReviewBudget(
            FAILED_REVIEWS_PER_SECOND, FAILED_REVIEWS_BURST, clock
        )
        self._clock = clock
        self._refused = 0  # tokens refused unreviewed since the last warning
        self._reported_at = -REFUSALS_REPORTED_EVERY

    def _token_key(self, token: str) -> bytes:
        return hmac.new(self._key, token.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()

    async def authenticate_token(self, token: str) -> User | None:
        """The token's user, or None when the apiserver does not vouch for it (or, over the
        rate limit of failing reviews, without asking). Raises on API errors."""
        key = self._token_key(token)
        cached = self.tokens.get(key)
        if cached is not None:
            return cached.user
        if not self._may_review():
            return None
        user = await self._review(token)
        if user is not None:
            self.failed_reviews.give_back()
        self.tokens.set(key, _Answer(user), TOKEN_TTL if user is not None else UNAUTHENTICATED_TTL)
        return user

    def _may_review(self) -> bool:
        if self.failed_reviews.take():
            return True
        self._refused += 1
        now = self._clock()
        if now - self._reported_at >= REFUSALS_REPORTED_EVERY:
            log.warning(
                "bearer tokens refused without a TokenReview: over the limit of failing reviews",
                extra={
                    "count": self._refused,
                    "burst": self.failed_reviews.burst,
                    "perSecond": self.failed_reviews.rate,
                },
            )
            self._refused, self._reported_at = 0, now
        return False

    async def _review(self, token: str) -> User | None:
        review = await self.client.create(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        )
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return None
        info = status.get("user") or {}
        return User(
            name=str(info.get("username", "")),
            uid=str(info.get("uid", "")),
            groups=tuple(info.get("groups") or ()),
            extra={k: tuple(v) for k, v in (info.get("extra") or {}).items()},
        )

    async def authorize(self, user: User, verb: str, subresource: str) -> tuple[bool, str]:
        """(allowed, reason) from a SubjectAccessReview on nodes/<node>. Raises on API errors."""
        key = (*user.key(), verb, subresource)
        cached = self.decisions.get(key)
        if cached is not None:
            return cached
        review = await self.client.create(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": self._access_spec(user, verb, subresource),
            },
        )
        status = review.get("status") or {}
        allowed, reason = bool(status.get("allowed")), str(status.get("reason", ""))
        self.decisions.set(key, (allowed, reason), ALLOWED_TTL if allowed else DENIED_TTL)
        return allowed, reason

    def _access_spec(self, user: User, verb: str, subresource: str) -> dict[str, Any]:
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
        return spec
