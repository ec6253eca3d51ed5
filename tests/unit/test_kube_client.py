"""The apiserver client: token bucket, line framing, Status errors, query encoding (pure), and the
Retry-After retries and the views with a bucket of their own over a stand-in transport (no
network)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any, cast

import pytest

from tests.support.clocks import ManualClock
from tests.support.metrics import sample
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import (
    MAX_RETRIES,
    PATCH_CONTENT_TYPES,
    ApiStatusError,
    KubeClient,
    LineDecoder,
    TokenBucket,
    decode_event,
    encode_params,
    kubeconfig_path,
    retry_after,
    status_error,
)
from vk_provider.kube.transport import ApiTransport
from vk_provider.wire import Reply


def test_token_bucket_allows_burst_then_paces_at_qps() -> None:
    clock = ManualClock(100.0)
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)  # waiters queue up in order
    clock.now += 10  # refills, but never above burst
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() > 0


def test_token_bucket_unlimited_when_qps_is_zero() -> None:
    bucket = TokenBucket(qps=0, burst=1, clock=ManualClock(100.0))
    assert all(bucket.reserve() == 0 for _ in range(1000))


def test_line_decoder_handles_events_split_and_joined_across_chunks() -> None:
    first = json.dumps({"type": "ADDED", "object": {"metadata": {"name": "a"}}}).encode()
    second = json.dumps({"type": "DELETED", "object": {"metadata": {"name": "b"}}}).encode()
    stream = first + b"\n" + second + b"\n"
    decoder = LineDecoder()
    lines: list[bytes] = []
    for i in range(0, len(stream), 7):  # arbitrary chunk boundaries
        lines.extend(decoder.feed(stream[i : i + 7]))
    assert lines == [first, second]
    assert decoder.flush() == []


def test_line_decoder_flushes_last_event_without_newline() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b'{"type":"ADDED","object":{}}\n\n{"type":"BOOKMARK"') == [
        b'{"type":"ADDED","object":{}}'
    ]
    assert decoder.feed(b',"object":{}}') == []
    assert decode_event(decoder.flush()[0])["type"] == "BOOKMARK"


def test_decode_event_rejects_non_events() -> None:
    with pytest.raises(ValueError):
        decode_event(b'{"kind":"Status"}')


def test_status_error_from_status_body() -> None:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": 'pods "x" not found',
        "reason": "NotFound",
        "details": {"name": "x", "kind": "pods"},
        "code": 404,
    }
    err = status_error(404, json.dumps(body).encode())
    assert isinstance(err, ApiStatusError)
    assert (err.status, err.reason, err.message) == (404, "NotFound", 'pods "x" not found')
    assert err.body["details"]["name"] == "x"


def test_status_error_without_status_body_uses_http_status() -> None:
    err = status_error(503, b"upstream connect error")
    assert (err.status, err.reason, err.message) == (503, "ServiceUnavailable", "upstream connect error")
    assert err.body == {}


def test_encode_params_lowercases_booleans_and_drops_none() -> None:
    params = {"watch": True, "allowWatchBookmarks": False, "resourceVersion": None, "limit": 5}
    assert encode_params(params) == [("watch", "true"), ("allowWatchBookmarks", "false"), ("limit", "5")]


def test_patch_content_types() -> None:
    assert PATCH_CONTENT_TYPES == {
        "strategic": "application/strategic-merge-patch+json",
        "merge": "application/merge-patch+json",
        "json": "application/json-patch+json",
    }


def test_kubeconfig_source_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", "/env/kubeconfig")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert kubeconfig_path(KubernetesConfig(kubeconfig="/cfg/kubeconfig")) == "/cfg/kubeconfig"
    assert kubeconfig_path(KubernetesConfig()) == "/env/kubeconfig"
    monkeypatch.delenv("KUBECONFIG")
    assert kubeconfig_path(KubernetesConfig()) is None  # in-cluster
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert kubeconfig_path(KubernetesConfig()) is None  # nothing at all: in-cluster loading reports it
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("{}")
    assert kubeconfig_path(KubernetesConfig()) == str(tmp_path / ".kube" / "config")


def test_retry_after_only_for_429_and_5xx_with_an_integer_header() -> None:
    assert retry_after(429, "1") == 1
    assert retry_after(503, "3") == 3
    assert retry_after(500, "0") == 0
    assert retry_after(429, "-2") == 0
    assert retry_after(429, None) is None  # no header: the caller decides
    assert retry_after(429, "Wed, 21 Oct 2026 07:28:00 GMT") is None  # client-go reads seconds only
    assert retry_after(409, "1") is None
    assert retry_after(200, "1") is None


def reply(status: int, headers: dict[str, str] | None = None, body: bytes = b"{}") -> Reply:
    """What `ApiTransport.exchange` returns (header names lower-case)."""
    return Reply(status, "", headers or {}, body)


class Answers:
    """A transport that answers each request with the next of `answers` (the last one repeats)."""

    user_agent = ""

    def __init__(self, *answers: Reply) -> None:
        self.answers = list(answers)
        self.sent = 0

    async def exchange(self, *args: Any, **kwargs: Any) -> Reply:
        self.sent += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def too_many(seconds: str = "0") -> Reply:
    body = {"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "try again later"}
    return reply(429, {"retry-after": seconds}, json.dumps(body).encode())


async def test_an_answer_with_retry_after_is_sent_again_after_its_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="vk_provider.kube.client")
    first, second = too_many(), reply(503, {"retry-after": "0"})
    transport = Answers(first, second, reply(200, body=b'{"kind": "Pod"}'))
    client = KubeClient(cast(ApiTransport, transport), qps=0)
    assert await client.patch("/api/v1/namespaces/d/pods/p/status", {"status": {}}) == {"kind": "Pod"}
    assert transport.sent == 3
    path = "/api/v1/namespaces/d/pods/p/status"
    assert {r.getMessage() for r in caplog.records} == {
        "apiserver answered with Retry-After; sending the request again"
    }
    keys = ("verb", "path", "code", "retryAfterSeconds", "retry", "maxRetries")
    assert [tuple(getattr(r, k) for k in keys) for r in caplog.records] == [
        ("PATCH", path, 429, 0, 1, 10),
        ("PATCH", path, 503, 0, 2, 10),
    ]


async def test_retries_end_after_ten_and_the_last_answer_is_raised() -> None:
    transport = Answers(too_many())
    client = KubeClient(cast(ApiTransport, transport), qps=0)
    with pytest.raises(ApiStatusError) as caught:
        await client.get("/api/v1/nodes/n")
    assert caught.value.status == 429
    assert transport.sent == 1 + MAX_RETRIES == 11


@pytest.mark.parametrize("answer", [reply(500), reply(409, {"retry-after": "0"}), reply(404)])
async def test_answers_without_retry_after_go_to_the_caller_at_once(answer: Reply) -> None:
    transport = Answers(answer)
    client = KubeClient(cast(ApiTransport, transport), qps=0)
    with pytest.raises(ApiStatusError) as caught:
        await client.get("/api/v1/nodes/n")
    assert caught.value.status == answer.status
    assert transport.sent == 1


async def test_every_request_sent_is_counted_by_method_and_code() -> None:
    transport = Answers(too_many(), reply(200, body=b'{"kind": "Pod"}'))
    client = KubeClient(cast(ApiTransport, transport), qps=0)
    await client.patch("/api/v1/namespaces/d/pods/p/status", {"status": {}})
    with pytest.raises(ApiStatusError):
        await KubeClient(cast(ApiTransport, Answers(reply(404))), qps=0, metrics=client.metrics).get("/x")
    assert sample(client.metrics, "rest_client_requests_total", method="PATCH", code="429") == 1
    assert sample(client.metrics, "rest_client_requests_total", method="PATCH", code="200") == 1
    assert sample(client.metrics, "rest_client_requests_total", method="GET", code="404") == 1
    assert sample(client.metrics, "rest_client_request_duration_seconds_count", verb="PATCH") == 2


async def test_a_view_with_its_own_limit_is_not_held_up_by_the_clients_bucket() -> None:
    """The kubelet's EventClient and HeartbeatClient: their requests never wait for the pods'
    bucket, nor the pods' for theirs; everything else (transport, metrics) is shared."""
    transport = Answers(reply(200))
    client = KubeClient(cast(ApiTransport, transport), qps=1, burst=1)
    events = client.with_own_limit(1, 1)
    heartbeats = client.with_own_limit(0, 1)
    await client.get("/api/v1/pods")  # the client's only token: its next is a second away
    held = asyncio.ensure_future(client.get("/api/v1/pods"))
    others = [asyncio.ensure_future(events.create("/api/v1/namespaces/d/events", {}))]
    others += [asyncio.ensure_future(heartbeats.get("/apis/coordination.k8s.io/v1/leases")) for _ in range(5)]
    done, _ = await asyncio.wait([held, *others], timeout=0.5)
    assert set(others) <= done and held not in done  # with one bucket for all, only one goes
    assert transport.sent == 7
    assert sample(client.metrics, "rest_client_requests_total", method="GET", code="200") == 6
    await held
    assert transport.sent == 8


async def test_a_view_follows_the_clients_new_credentials_and_403_hook() -> None:
    old, new = Answers(reply(200)), Answers(reply(403, body=b'{"kind": "Status", "code": 403}'))
    client = KubeClient(cast(ApiTransport, old), qps=0)
    events = client.with_own_limit(0, 1)
    forbidden: list[str] = []
    client.on_forbidden = lambda method, path, params, message: forbidden.append(path)
    assert client.swap_api_client(cast(ApiTransport, new)) is cast(ApiTransport, old)
    with pytest.raises(ApiStatusError):
        await events.create("/api/v1/namespaces/d/events", {})
    assert (old.sent, new.sent) == (0, 1)
    assert forbidden == ["/api/v1/namespaces/d/events"]
