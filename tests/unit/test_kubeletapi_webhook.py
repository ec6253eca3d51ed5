"""WebhookAuth: TokenReview/SubjectAccessReview bodies, caches, and the kubelet's request attributes."""

from __future__ import annotations

from typing import Any

from vk_provider.kubeletapi.auth import certificate_user
from vk_provider.kubeletapi.webhook import User, WebhookAuth, refusal, request_attributes


class Reviews:
    """An apiserver stand-in that answers reviews from a table and records what was asked."""

    def __init__(self, users: dict[str, dict[str, Any]], allowed: bool) -> None:
        self.users, self.allowed, self.asked = users, allowed, []  # type: ignore[var-annotated]

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.asked.append((path, body))
        if path.endswith("/tokenreviews"):
            user = self.users.get(body["spec"]["token"])
            return {"status": {"authenticated": user is not None, "user": user or {}}}
        return {"status": {"allowed": self.allowed, "reason": "by the table"}}


def test_request_attributes_follow_the_kubelet() -> None:
    assert request_attributes("GET", "/stats/summary") == ("get", "stats")
    assert request_attributes("GET", "/metrics/resource") == ("get", "metrics")
    assert request_attributes("GET", "/logs/syslog") == ("get", "log")
    assert request_attributes("POST", "/exec/ns/p/c") == ("create", "proxy")
    assert request_attributes("GET", "/containerLogs/ns/p/c") == ("get", "proxy")
    assert request_attributes("GET", "/statsfoo") == ("get", "proxy")


def test_certificate_user_takes_cn_and_organizations() -> None:
    peer = {"subject": ((("organizationName", "system:masters"),), (("commonName", "kube-apiserver"),))}
    assert certificate_user(peer) == User("kube-apiserver", groups=("system:masters",))
    assert certificate_user({}) is None and certificate_user(None) is None


async def test_token_review_and_access_review_are_cached() -> None:
    now = [0.0]
    alice = {"username": "alice", "uid": "u1", "groups": ["dev"], "extra": {"k": ["v"]}}
    reviews = Reviews({"t1": alice}, allowed=False)
    auth = WebhookAuth(reviews, "node-a", clock=lambda: now[0])
    user = await auth.authenticate_token("t1")
    assert user == User("alice", "u1", ("dev",), {"k": ("v",)})
    assert await auth.authenticate_token("t1") == user and len(reviews.asked) == 1  # cached
    assert await auth.authenticate_token("nope") is None
    assert reviews.asked[0][1]["spec"] == {"token": "t1"}

    assert await auth.authorize(user, "create", "proxy") == (False, "by the table")
    path, sar = reviews.asked[-1]
    assert path == "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    assert sar["spec"] == {
        "user": "alice",
        "uid": "u1",
        "groups": ["dev"],
        "extra": {"k": ["v"]},
        "resourceAttributes": {
            "verb": "create",
            "resource": "nodes",
            "subresource": "proxy",
            "name": "node-a",
        },
    }
    reviews.allowed = True
    now[0] = 29.0
    assert (await auth.authorize(user, "create", "proxy"))[0] is False  # a denial is kept 30 s
    now[0] = 31.0
    assert (await auth.authorize(user, "create", "proxy"))[0] is True
    asked = len(reviews.asked)
    now[0] = 31.0 + 299.0
    assert (await auth.authorize(user, "create", "proxy"))[0] is True and len(reviews.asked) == asked  # 5 min
    assert refusal("Forbidden", user, "get", "stats") == (
        "Forbidden (user=alice, verb=get, resource=nodes, subresource=stats)"
    )
