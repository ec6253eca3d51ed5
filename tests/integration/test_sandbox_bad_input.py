"""Wrong-typed and malformed input to the sandbox API: a 400 or 422 Status as the real server
answers (issue 13 item 12), never a 500, and a malformed stored object never stops a controller.

Each case once answered 500 InternalError (or stored an object the real server refuses); the
expected codes and messages are the real kube-apiserver's, checked against it (the Go decoder's
`json: cannot unmarshal ...` 400s, validation's 422s).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.polling import eventually
from tests.support.sandbox import RunningSandbox, admin_session, running_sandbox

NS = "/api/v1/namespaces/default"
JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    body: bytes
    code: int
    message: str  # a part of the Status message
    content_type: str = JSON


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _ld(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field (lengths below 128)."""
    return bytes([number << 3 | 2, len(data)]) + data


def _configmap_protobuf(meta: bytes) -> bytes:
    type_meta = _ld(1, b"v1") + _ld(2, b"ConfigMap")
    return b"k8s\x00" + _ld(1, type_meta) + _ld(2, _ld(1, meta))


_TIME_2_62 = b"\x08" + b"\x80" * 8 + b"\x40"  # Time{seconds: 2**62}

CASES = {
    "binding-target-list": Case(
        "POST",
        f"{NS}/pods/p0/binding",
        _json({"target": [1]}),
        400,
        'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal array into Go '
        "struct field Binding.target of type v1.ObjectReference",
    ),
    "tokenreview-spec-list": Case(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        _json({"spec": [1]}),
        400,
        "json: cannot unmarshal array into Go struct field TokenReview.spec of type v1.TokenReviewSpec",
    ),
    "subjectaccessreview-spec-list": Case(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        _json({"spec": [1]}),
        400,
        "Go struct field SubjectAccessReview.spec of type v1.SubjectAccessReviewSpec",
    ),
    "delete-preconditions-number": Case(
        "DELETE",
        f"{NS}/configmaps/cm0",
        _json({"preconditions": 5}),
        400,
        "json: cannot unmarshal number into Go struct field DeleteOptions.preconditions of type "
        "v1.Preconditions",
    ),
    "eviction-preconditions-list": Case(
        "POST",
        f"{NS}/pods/p0/eviction",
        _json({"deleteOptions": {"preconditions": []}}),
        400,
        'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal array into Go '
        "struct field DeleteOptions.deleteOptions.preconditions of type v1.Preconditions",
    ),
    "tokenrequest-expiration-string": Case(
        "POST",
        f"{NS}/serviceaccounts/sa0/token",
        _json({"spec": {"expirationSeconds": "x"}}),
        400,
        "Go struct field TokenRequestSpec.spec.expirationSeconds of type int64",
    ),
    "pod-spec-list": Case(
        "POST",
        f"{NS}/pods",
        _json({"metadata": {"name": "p1"}, "spec": []}),
        400,
        "json: cannot unmarshal array into Go struct field Pod.spec of type v1.PodSpec",
    ),
    "int32-out-of-range": Case(
        "POST",
        f"{NS}/pods",
        _json({"metadata": {"name": "p2"}, "spec": {"priority": 2**40, "containers": []}}),
        400,
        "json: cannot unmarshal number 1099511627776 into Go struct field PodSpec.spec.priority of "
        "type int32",
    ),
    "json-patch-unicode-digit-index": Case(
        "PATCH",
        f"{NS}/configmaps/cm0",
        _json([{"op": "replace", "path": "/metadata/finalizers/²", "value": "x.io/b"}]),
        422,
        "the server rejected our request due to an error in our request",
        "application/json-patch+json",
    ),
    "merge-patch-spec-list": Case(
        "PATCH",
        f"{NS}/pods/p0",
        _json({"spec": []}),
        422,
        "Go struct field Pod.spec of type v1.PodSpec",
        "application/merge-patch+json",
    ),
    "nested-100000": Case("POST", f"{NS}/configmaps", b"[" * 100_000, 400, "json parse error"),
    "patch-nested-400-deep": Case(
        "PATCH",
        f"{NS}/pods/p0",
        b'{"spec":{"tolerations":[{"key":"z","operator":' + b"[" * 400 + b"]" * 400 + b"}]}}",
        400,
        "error decoding patch: exceeded max depth of 100",
        "application/strategic-merge-patch+json",
    ),
    "yaml-anchor-contains-itself": Case(
        "POST", f"{NS}/configmaps", b"a: &a [*a]", 400, "yaml parse error", "application/yaml"
    ),
    "protobuf-invalid-utf8-name": Case(
        "POST",
        f"{NS}/configmaps",
        _configmap_protobuf(_ld(1, b"pb-\xff\xfe")),
        422,
        "metadata.name: Invalid value",
        PROTOBUF,
    ),
    "protobuf-huge-timestamp": Case(
        "POST",
        f"{NS}/configmaps",
        _configmap_protobuf(_ld(1, b"pb-time") + _ld(8, _TIME_2_62)),
        400,
        "time out of range",
        PROTOBUF,
    ),
    "generate-name-invalid": Case(
        "POST",
        "/api/v1/nodes",
        _json({"metadata": {"generateName": "Bad\\Name,x="}}),
        422,
        'metadata.generateName: Invalid value: "Bad\\\\Name,x=": a lowercase RFC 1123 subdomain',
    ),
}


async def _seed(server: RunningSandbox) -> None:
    pod = {"metadata": {"name": "p0", "finalizers": ["x.io/a"]}, "spec": {"schedulerName": "none"}}
    pod["spec"]["containers"] = [{"name": "c", "image": "busybox"}]
    seeds = [
        (f"{NS}/pods", pod),
        (f"{NS}/configmaps", {"metadata": {"name": "cm0", "finalizers": ["x.io/a"]}}),
        (f"{NS}/serviceaccounts", {"metadata": {"name": "sa0"}}),
    ]
    async with admin_session(server) as http:
        for path, body in seeds:
            async with http.post(server.url + path, json=body) as response:
                assert response.status == 201, await response.text()


@pytest.mark.parametrize("name", CASES)
async def test_bad_input_is_a_client_error(sandbox: RunningSandbox, name: str) -> None:
    case = CASES[name]
    await _seed(sandbox)
    async with (
        admin_session(sandbox) as http,
        http.request(
            case.method, sandbox.url + case.path, data=case.body, headers={"Content-Type": case.content_type}
        ) as response,
    ):
        body = await response.json()
    assert response.status == case.code, body
    assert body["kind"] == "Status" and body["code"] == case.code
    assert body["reason"] == {400: "BadRequest", 422: "Invalid"}[case.code]
    assert case.message in body["message"]


async def test_null_list_items_are_stored_as_zero_values(sandbox: RunningSandbox) -> None:
    """`conditions: [null]` decodes as one empty condition, as the real server stores it, and a
    lone surrogate escape as U+FFFD, so no malformed object is stored."""
    node = {"metadata": {"name": "n-null"}, "status": {"conditions": [None]}}
    secret = {"metadata": {"name": "s"}, "stringData": {"a": "\ud800"}}
    async with admin_session(sandbox) as http:
        async with http.post(sandbox.url + "/api/v1/nodes", json=node) as response:
            created = await response.json()
        assert response.status == 201, created
        async with http.post(sandbox.url + f"{NS}/secrets", json=secret) as response:
            assert response.status == 201, await response.text()
    empty = {"type": "", "status": "", "lastHeartbeatTime": None, "lastTransitionTime": None}
    assert created["status"]["conditions"] == [empty]  # what the real server answers


async def test_a_malformed_stored_node_stops_no_controller(tmp_path: Path) -> None:
    """A node stored with `conditions: [null, 5]` (as before the typed decoding) is skipped: the
    scheduler still binds pods to the other node, and the node lifecycle pass still marks that
    silent node Unknown."""
    async with running_sandbox(tmp_path, node_monitor_grace_seconds=1) as server:
        await server.store.create("nodes", {"metadata": {"name": "bad"}, "status": {"conditions": [None, 5]}})
        ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": "2020-01-01T00:00:00Z"}
        await server.store.create("nodes", {"metadata": {"name": "good"}, "status": {"conditions": [ready]}})
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        async with admin_session(server) as http, http.post(server.url + f"{NS}/pods", json=pod) as response:
            assert response.status == 201, await response.text()

        async def bound_to() -> str:
            return str((await server.store.get("pods", "default", "p"))["spec"].get("nodeName") or "")

        async def good_ready() -> str:
            return _ready_status(await server.store.get("nodes", None, "good"))

        assert await eventually(bound_to, what="the pod bound") == "good"
        await eventually(lambda: _is(good_ready(), "Unknown"), what="the silent node Unknown")


async def _is(value: Awaitable[str], wanted: str) -> bool:
    return await value == wanted


def _ready_status(node: dict[str, Any]) -> str:
    return next(c["status"] for c in node["status"]["conditions"] if c.get("type") == "Ready")


async def test_a_node_address_that_is_no_host_name_is_skipped_by_metrics(sandbox: RunningSandbox) -> None:
    """The metrics API scrapes every Ready node: one whose address cannot be a URL's host is
    skipped, as one that does not answer is, instead of failing the whole list with a 500."""
    node = {
        "metadata": {"name": "odd"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "a/b/c"}],
        },
    }
    async with admin_session(sandbox) as http:
        async with http.post(sandbox.url + "/api/v1/nodes", json=node) as response:
            assert response.status == 201, await response.text()
        async with http.get(sandbox.url + "/apis/metrics.k8s.io/v1beta1/nodes") as response:
            body = await response.json()
    assert response.status == 200, body
    assert body["kind"] == "NodeMetricsList" and body["items"] == []


async def test_an_unknown_field_with_control_characters_is_warned_about_quoted(
    sandbox: RunningSandbox,
) -> None:
    """Once answered by a dropped connection: the raw name went into the Warning header."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ctl"}, "a\u0001b\nc": 1}
    async with (
        admin_session(sandbox) as http,
        http.post(sandbox.url + f"{NS}/configmaps?fieldValidation=Warn", json=body) as response,
    ):
        assert response.status == 201
        # sigs.k8s.io/json's strictError: "unknown field " + strconv.Quote(path)
        assert response.headers.getall("Warning") == ['299 - "unknown field \\"a\\\\x01b\\\\nc\\""']


async def test_a_generate_name_of_62_characters_is_accepted(sandbox: RunningSandbox) -> None:
    """The real server cuts the base to 58 characters before adding the suffix (it was a 422)."""
    body = {"metadata": {"generateName": "n" * 61 + "-"}}
    async with (
        admin_session(sandbox) as http,
        http.post(sandbox.url + "/api/v1/namespaces", json=body) as response,
    ):
        created = await response.json()
    assert response.status == 201, created
    assert len(created["metadata"]["name"]) == 63 and created["metadata"]["name"].startswith("n" * 58)
