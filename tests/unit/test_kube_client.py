"""Pure parts of the apiserver client: token bucket, line framing, Status errors, query encoding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import (
    PATCH_CONTENT_TYPES,
    ApiStatusError,
    LineDecoder,
    TokenBucket,
    decode_event,
    encode_params,
    kubeconfig_path,
    status_error,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_allows_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)  # waiters queue up in order
    clock.now += 10  # refills, but never above burst
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() > 0


def test_token_bucket_unlimited_when_qps_is_zero() -> None:
    bucket = TokenBucket(qps=0, burst=1, clock=FakeClock())
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
