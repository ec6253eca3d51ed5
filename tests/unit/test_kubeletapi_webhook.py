"""WebhookAuth: TokenReview/SubjectAccessReview bodies, caches, and the kubelet's request attributes."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from vk_provider.kubeletapi.auth import auth_middleware, certificate_user
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
    assert request_attributes("GET", "/stats/summary") == ("get", ("stats",))
    assert request_attributes("GET", "/metrics/resource") == ("get", ("metrics",))
    assert request_attributes("GET", "/metrics/cadvisor") == ("get", ("metrics",))
    assert request_attributes("GET", "/logs/syslog") == ("get", ("log",))
    assert request_attributes("POST", "/exec/ns/p/c") == ("create", ("proxy",))
    assert request_attributes("GET", "/containerLogs/ns/p/c") == ("get", ("proxy",))
    assert request_attributes("GET", "/statsfoo") == ("get", ("proxy",))


def test_fine_grained_subresources_come_first_then_proxy_as_the_137_kubelet() -> None:
    """pkg/kubelet/server/auth.go GetRequestAttributes with KubeletFineGrainedAuthz (GA)."""
    assert request_attributes("GET", "/pods") == ("get", ("pods", "proxy"))
    assert request_attributes("GET", "/pods/") == ("get", ("pods", "proxy"))
    assert request_attributes("GET", "/runningpods/") == ("get", ("pods", "proxy"))
    assert request_attributes("GET", "/healthz") == ("get", ("healthz", "proxy"))
    assert request_attributes("GET", "/healthz/ping") == ("get", ("healthz", "proxy"))
    assert request_attributes("GET", "/configz") == ("get", ("configz", "proxy"))
    assert request_attributes("GET", "/flagz") == ("get", ("configz",))
    assert request_attributes("GET", "/statusz") == ("get", ("statusz",))
    assert request_attributes("POST", "/checkpoint/ns/p/c") == ("create", ("checkpoint",))
    assert request_attributes("GET", "/podsfoo") == ("get", ("proxy",))


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
    assert refusal(user, "get", ("pods", "proxy")) == (
        "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])"
    )


class SubresourceReviews(Reviews):
    """Allows the token's user only the subresources in `allowed_subresources`."""

    def __init__(self, allowed_subresources: set[str]) -> None:
        super().__init__({"t": {"username": "bob"}}, allowed=False)
        self.allowed_subresources = allowed_subresources

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("/subjectaccessreviews"):
            self.asked.append((path, body))
            subresource = body["spec"]["resourceAttributes"]["subresource"]
            return {"status": {"allowed": subresource in self.allowed_subresources}}
        return await super().create(path, body)


async def answers(reviews: SubresourceReviews, path: str) -> tuple[int, str]:
    async def ok(_: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    app = web.Application(middlewares=[auth_middleware("webhook", False, WebhookAuth(reviews, "node-a"))])
    app.router.add_get("/{tail:.*}", ok)
    async with TestClient(TestServer(app)) as client:
        resp = await client.get(path, headers={"Authorization": "Bearer t"})
        return resp.status, await resp.text()


async def test_a_user_allowed_only_nodes_pods_reads_pods_and_nothing_else() -> None:
    reviews = SubresourceReviews({"pods"})
    assert await answers(reviews, "/pods") == (200, "ok")
    assert await answers(reviews, "/runningpods/") == (200, "ok")
    assert await answers(reviews, "/healthz") == (
        403,
        "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n",
    )
    assert (await answers(reviews, "/containerLogs/ns/p/c"))[0] == 403
    assert (await answers(reviews, "/stats/summary"))[0] == 403
    asked = [b["spec"]["resourceAttributes"]["subresource"] for p, b in reviews.asked if "access" in p]
    assert asked[:1] == ["pods"]  # /pods: the fine-grained subresource first, allowed: no proxy review


async def test_a_user_allowed_nodes_proxy_still_reads_everything_proxy_covers() -> None:
    reviews = SubresourceReviews({"proxy"})
    for path in ("/pods", "/runningpods/", "/healthz", "/configz", "/containerLogs/ns/p/c"):
        assert await answers(reviews, path) == (200, "ok"), path
    assert (await answers(reviews, "/metrics"))[0] == 403  # nodes/metrics, as the kubelet
