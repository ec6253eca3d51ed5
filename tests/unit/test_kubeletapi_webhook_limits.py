"""WebhookAuth under a flood (issue 13, item 5): bounded caches, expiry, and a budget for failing reviews.

The clock is injected (a ManualClock the test advances); nothing sleeps.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.support.clocks import ManualClock
from vk_provider.kubeletapi import webhook
from vk_provider.kubeletapi.webhook import User, WebhookAuth

ALICE = {"username": "alice", "uid": "u1", "groups": ["dev"]}


class Reviews:
    """An apiserver stand-in: tokens in `users` authenticate, everything is allowed; counts reviews."""

    def __init__(self, users: dict[str, dict[str, Any]] | None = None) -> None:
        self.users = users or {}
        self.token_reviews = 0
        self.access_reviews = 0
        self.fail = False

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.fail:
            raise ConnectionError("apiserver down")
        if path.endswith("/tokenreviews"):
            self.token_reviews += 1
            user = self.users.get(body["spec"]["token"])
            return {"status": {"authenticated": user is not None, "user": user or {}}}
        self.access_reviews += 1
        return {"status": {"allowed": True}}


def test_the_bounds_are_the_upstream_values() -> None:
    assert webhook.CACHE_SIZE == 8192  # plugin/pkg/authorizer/webhook: NewLRUExpireCache(8192)
    assert (webhook.TOKEN_TTL, webhook.UNAUTHENTICATED_TTL) == (120.0, 120.0)  # kubelet cacheTTL 2m
    assert (webhook.ALLOWED_TTL, webhook.DENIED_TTL) == (300.0, 30.0)  # 5m / 30s
    assert (webhook.FAILED_REVIEWS_BURST, webhook.FAILED_REVIEWS_PER_SECOND) == (20, 10.0)


async def test_3000_junk_tokens_cost_a_bounded_number_of_reviews_and_entries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="vk_provider.kubeletapi.webhook")
    clock, reviews = ManualClock(), Reviews()
    auth = WebhookAuth(reviews, "node-a", clock=clock)
    for i in range(3000):
        assert await auth.authenticate_token(f"junk-{i}") is None
        clock.now += 0.001  # 3000 requests in 3 s
    elapsed = 3.0
    budget = webhook.FAILED_REVIEWS_BURST + webhook.FAILED_REVIEWS_PER_SECOND * elapsed
    assert reviews.token_reviews <= budget  # today's code: 3000
    assert len(auth.tokens) <= reviews.token_reviews  # unreviewed refusals are not cached
    [warning] = [r.getMessage() for r in caplog.records]  # one in 3 s, not one per refusal
    assert "refused without a TokenReview" in warning
    refused_since = 3000 - reviews.token_reviews - 1  # after the first warning's own refusal
    clock.now += webhook.REFUSALS_REPORTED_EVERY
    for i in range(100):
        await auth.authenticate_token(f"more-junk-{i}")
    assert len(caplog.records) == 2  # the next minute's, counting the refusals in between
    assert caplog.records[1].count == refused_since + 1


async def test_the_caches_never_hold_more_than_their_size() -> None:
    clock, reviews = ManualClock(), Reviews()
    unlimited = webhook.ReviewBudget(rate=1e9, burst=10**9, clock=clock)
    auth = WebhookAuth(reviews, "node-a", clock=clock, cache_size=100, failed_reviews=unlimited)
    for i in range(3000):
        assert await auth.authenticate_token(f"junk-{i}") is None
        assert await auth.authorize(User(f"user-{i}"), "get", "proxy") == (True, "")
    assert reviews.token_reviews == 3000 and reviews.access_reviews == 3000
    assert len(auth.tokens) == 100 and len(auth.decisions) == 100
    # the most recent are kept: the last token is answered from the cache
    assert await auth.authenticate_token("junk-2999") is None and reviews.token_reviews == 3000


async def test_expired_entries_are_dropped() -> None:
    clock, reviews = ManualClock(), Reviews({"good": ALICE})
    auth = WebhookAuth(reviews, "node-a", clock=clock)
    alice = await auth.authenticate_token("good")
    for i in range(10):
        assert await auth.authenticate_token(f"junk-{i}") is None
    assert alice is not None and len(auth.tokens) == 11
    await auth.authorize(alice, "get", "stats")
    await auth.authorize(User("bob"), "get", "stats")

    clock.now += webhook.TOKEN_TTL + 1  # every token answer has expired
    assert await auth.authenticate_token("junk-new") is None
    assert len(auth.tokens) == 1  # the eleven old entries went when the new one came
    assert await auth.authenticate_token("good") == alice and reviews.token_reviews == 13  # asked again
    assert len(auth.tokens) == 2

    clock.now += webhook.ALLOWED_TTL
    asked = reviews.access_reviews
    await auth.authorize(alice, "get", "log")
    assert len(auth.decisions) == 1 and reviews.access_reviews == asked + 1


async def test_a_good_token_keeps_working_while_junk_floods() -> None:
    clock, reviews = ManualClock(), Reviews({"good": ALICE, "late": {"username": "late"}})
    auth = WebhookAuth(reviews, "node-a", clock=clock)
    alice = await auth.authenticate_token("good")
    assert alice is not None
    for i in range(3000):
        assert await auth.authenticate_token(f"junk-{i}") is None
        if i % 100 == 0:
            assert await auth.authenticate_token("good") == alice  # from the cache
    assert reviews.token_reviews == 1 + webhook.FAILED_REVIEWS_BURST  # frozen clock: the burst only
    assert await auth.authenticate_token("late") is None  # over the limit: no review
    assert reviews.token_reviews == 1 + webhook.FAILED_REVIEWS_BURST
    clock.now += 1 / webhook.FAILED_REVIEWS_PER_SECOND  # one review's worth of refill
    late = await auth.authenticate_token("late")
    assert late is not None and late.name == "late"


async def test_good_tokens_do_not_spend_the_failure_budget() -> None:
    clock = ManualClock()
    users = {f"sa-{i}": {"username": f"sa-{i}"} for i in range(500)}
    reviews = Reviews(users)
    auth = WebhookAuth(reviews, "node-a", clock=clock)
    for name in users:
        user = await auth.authenticate_token(name)
        assert user is not None and user.name == name
    assert reviews.token_reviews == 500  # frozen clock, far over the burst: each was given back


async def test_api_errors_are_not_cached_and_spend_the_budget() -> None:
    clock, reviews = ManualClock(), Reviews({"good": ALICE})
    auth = WebhookAuth(reviews, "node-a", clock=clock)
    reviews.fail = True
    for _ in range(webhook.FAILED_REVIEWS_BURST):
        with pytest.raises(ConnectionError):
            await auth.authenticate_token("good")
    assert len(auth.tokens) == 0
    reviews.fail = False
    assert await auth.authenticate_token("good") is None  # the budget is spent: refused unreviewed
    clock.now += 1.0
    assert await auth.authenticate_token("good") is not None


def test_the_token_cache_holds_no_token() -> None:
    auth = WebhookAuth(Reviews(), "node-a")
    key = auth._token_key("secret-token")
    assert b"secret-token" not in key and len(key) == 32
    assert auth._token_key("secret-token") == key != WebhookAuth(Reviews(), "n")._token_key("secret-token")


def test_expiring_lru_evicts_the_least_recently_used() -> None:
    clock = ManualClock()
    cache: webhook.ExpiringLRU[str, int] = webhook.ExpiringLRU(2, clock)
    cache.set("a", 1, 10)
    cache.set("b", 2, 10)
    assert cache.get("a") == 1  # a is now the most recent
    cache.set("c", 3, 10)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    clock.now += 10
    assert cache.get("a") is None and len(cache) == 1  # expired on lookup
