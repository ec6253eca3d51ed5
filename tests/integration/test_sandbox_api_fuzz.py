"""Fuzzing the sandbox HTTP API: random mutations of valid requests against one running server.

What is fuzzed: requests built from a set of valid ones (creates, replaces, patches of the
three types, deletes with DeleteOptions, bindings, token and subject reviews, lists with
selectors and paging, discovery), each mutated: the method, the path (odd segments,
subresources, escapes), the query (mutated keys and values), the Content-Type and Accept
headers, and the JSON body (fields of the wrong type, nasty scalars, removed or wrapped
subtrees) or its raw bytes. The properties: every request gets an answer (the connection is
not dropped), no answer is a 5xx other than those the real apiserver gives as well
(`_REAL_5XX`: storage errors without a reason, a future resourceVersion), the server answers
/readyz after the campaign (no crash), and the process's memory stays within a generous margin
of what it was after start-up while state accumulates (one server serves every example).

Why here and not in tests/unit/fuzz: it needs no Docker, but it runs a whole server on a
loopback port with its state directory, as tests/integration/test_sandbox_api*.py do; the
unit tier is pure functions without network. It takes no `plane`, so it runs once, against the
emulator: the property is about our server; the real apiserver is not ours to fuzz.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from tests.support.fuzzing import budget, load_profile, mutated_bytes, mutated_json, mutated_text
from tests.support.sandbox import RunningSandbox, admin_session, running_sandbox

load_profile()

MIB = 1 << 20
MEMORY_MARGIN = 300 * MIB  # resident growth allowed over the whole campaign (start-up: ~100 MiB)

NS = "/api/v1/namespaces/default"
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["x/y"]},
    "spec": {
        "containers": [{"name": "c", "image": "vk-test/busybox:1", "resources": {"limits": {"cpu": "1"}}}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
    },
}
CONFIGMAP: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cm"},
    "data": {"a": "b"},
}
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"type": "virtual-kubelet"}},
    "status": {"conditions": [{"type": "Ready", "status": "True"}], "capacity": {"cpu": "4", "pods": "110"}},
}
LEASE: dict[str, Any] = {
    "apiVersion": "coordination.k8s.io/v1",
    "kind": "Lease",
    "metadata": {"name": "n1"},
    "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40},
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": POD["spec"]},
    },
}
DELETE_OPTIONS = {
    "kind": "DeleteOptions",
    "apiVersion": "v1",
    "gracePeriodSeconds": 0,
    "preconditions": {"uid": "u"},
}
JSON = "application/json"

# (method, path, query, content type, body) of valid requests
VALID: list[tuple[str, str, dict[str, str], str, Any]] = [
    ("POST", f"{NS}/pods", {}, JSON, POD),
    (
        "GET",
        f"{NS}/pods",
        {"labelSelector": "app=web", "fieldSelector": "spec.nodeName=n1", "limit": "1"},
        JSON,
        None,
    ),
    ("GET", f"{NS}/pods/web", {"resourceVersion": "0"}, JSON, None),
    ("PUT", f"{NS}/pods/web", {}, JSON, POD),
    ("PATCH", f"{NS}/pods/web", {}, "application/merge-patch+json", {"metadata": {"labels": {"a": "b"}}}),
    (
        "PATCH",
        f"{NS}/pods/web",
        {},
        "application/strategic-merge-patch+json",
        {"spec": {"containers": [{"name": "c", "image": "x:1"}]}},
    ),
    (
        "PATCH",
        f"{NS}/pods/web",
        {},
        "application/json-patch+json",
        [{"op": "remove", "path": "/metadata/finalizers/0"}],
    ),
    ("PATCH", f"{NS}/pods/web/status", {}, "application/merge-patch+json", {"status": {"phase": "Running"}}),
    (
        "POST",
        f"{NS}/pods/web/binding",
        {},
        JSON,
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "web"},
            "target": {"kind": "Node", "name": "n1"},
        },
    ),
    (
        "POST",
        f"{NS}/pods/web/eviction",
        {},
        JSON,
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web"}},
    ),
    ("DELETE", f"{NS}/pods/web", {"gracePeriodSeconds": "0"}, JSON, DELETE_OPTIONS),
    ("DELETE", f"{NS}/pods", {"labelSelector": "app"}, JSON, None),
    ("POST", f"{NS}/configmaps", {"dryRun": "All"}, JSON, CONFIGMAP),
    ("PUT", f"{NS}/configmaps/cm", {}, JSON, CONFIGMAP),
    ("POST", "/api/v1/nodes", {}, JSON, NODE),
    ("PUT", "/api/v1/nodes/n1/status", {}, JSON, NODE),
    (
        "POST",
        "/api/v1/namespaces",
        {},
        JSON,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "ns-"}},
    ),
    ("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {}, JSON, LEASE),
    ("POST", "/apis/apps/v1/namespaces/default/deployments", {}, JSON, DEPLOYMENT),
    (
        "POST",
        f"{NS}/serviceaccounts/default/token",
        {},
        JSON,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"audiences": ["x"], "expirationSeconds": 600},
        },
    ),
    (
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {},
        JSON,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "abc"}},
    ),
    (
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        {},
        JSON,
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": "u", "resourceAttributes": {"verb": "get", "resource": "pods"}},
        },
    ),
    (
        "GET",
        "/api/v1/events",
        {"fieldSelector": "involvedObject.name=web", "limit": "5", "continue": "x"},
        JSON,
        None,
    ),
    ("GET", "/apis/apps/v1", {}, JSON, None),
    ("GET", "/api", {}, JSON, None),
    ("GET", "/version", {}, JSON, None),
]
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
PATH_FRAGMENTS = (
    "/",
    "//",
    "..",
    "%2F",
    "%00",
    "~",
    "status",
    "binding",
    "eviction",
    "scale",
    "log",
    "exec",
    "proxy",
    "ephemeralcontainers",
    "namespaces",
    "kube-system",
    "nodes",
    "v2",
    "apps",
    "UPPER",
    "?",
)
CONTENT_TYPES = (
    JSON,
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "text/plain",
    "application/json; charset=latin1",
    "",
    "*/*",
    "application/json;;",
)
ACCEPTS = (
    JSON,
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/vnd.kubernetes.protobuf",
    "application/yaml",
    "text/html",
    "*/*",
    "",
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
)
STREAMING = ("watch", "follow")  # keys that hold a response open; not what this test is about


# The 5xx the real apiserver answers as well, measured against it by the fidelity suite
# (docs/fidelity.md): by (code, reason), the message. A storage error has no reason
# (ErrorToAPIStatus): an unparsable resourceVersion on GET/WATCH, a resourceVersion set on a
# create; a GET at a resourceVersion beyond the current one times out (`get-future-rv`).
_REAL_5XX = {
    (500, ""): re.compile(
        r'resourceVersion: Invalid value: ".*": strconv\.ParseUint: '
        r"|resourceVersion should not be set on objects to be created",
        re.S,
    ),
    (504, "Timeout"): re.compile(r"Timeout: Too large resource version: "),
}


def _the_real_servers_5xx(status: int, text: str) -> bool:
    try:
        body = json.loads(text)
    except ValueError:
        return False
    if not isinstance(body, dict) or body.get("kind") != "Status":
        return False
    message = _REAL_5XX.get((status, body.get("reason") or ""))
    return message is not None and bool(message.match(str(body.get("message", ""))))


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], dict[str, str], bytes | None]:
    method, path, query, content_type, body = draw(st.sampled_from(VALID))
    if draw(st.integers(0, 4)) == 0:
        method = draw(st.sampled_from(METHODS))
    if draw(st.integers(0, 3)) == 0:
        path = draw(mutated_text(path, PATH_FRAGMENTS, max_mutations=2))
        path = "/" + path.lstrip("/").replace("?", "%3F").replace("#", "%23")
    if draw(st.integers(0, 3)) == 0:
        mutated = draw(mutated_json(query or {"limit": "1"}))
        query = {str(k): str(v) for k, v in mutated.items()} if isinstance(mutated, dict) else {}
    query = {k: v for k, v in query.items() if k not in STREAMING}
    headers = {"Accept": draw(st.sampled_from(ACCEPTS))}
    if draw(st.integers(0, 4)) == 0:
        content_type = draw(st.sampled_from(CONTENT_TYPES))
    if content_type:
        headers["Content-Type"] = content_type
    raw: bytes | None = None
    if body is not None:
        shape = draw(st.sampled_from(("valid", "mutated", "mutated", "mutated", "bytes")))
        if shape == "valid":
            raw = json.dumps(body).encode()
        elif shape == "mutated":
            raw = json.dumps(draw(mutated_json(body, max_mutations=3))).encode("utf-8", "surrogatepass")
        else:
            raw = draw(mutated_bytes(json.dumps(body).encode()))
    return method, path, query, headers, raw


@pytest.fixture
async def fuzzed(tmp_path: Path) -> AsyncIterator[tuple[RunningSandbox, aiohttp.ClientSession, int]]:
    async with (
        running_sandbox(tmp_path, controllers=True) as server,
        admin_session(server, timeout=aiohttp.ClientTimeout(total=30)) as session,
    ):
        yield server, session, _rss()
        async with session.get(f"{server.url}/readyz") as ready:
            assert ready.status == 200, "the server must still answer after the campaign"


# One server for every example, on purpose: what earlier requests left in the store is part of
# what later ones meet, and the memory bound is over the whole campaign.
@budget(400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests())
async def test_mutated_requests_get_no_5xx_and_memory_stays_bounded(
    fuzzed: tuple[RunningSandbox, aiohttp.ClientSession, int],
    request: tuple[str, str, dict[str, str], dict[str, str], bytes | None],
) -> None:
    server, session, baseline = fuzzed
    method, path, query, headers, body = request
    async with session.request(
        method, f"{server.url}{path}", params=query, headers=headers, data=body, allow_redirects=False
    ) as response:
        text = await response.text(errors="replace")
    assert response.status < 500 or _the_real_servers_5xx(response.status, text), (
        f"{method} {path} {query} {headers} {body!r}: {response.status} {text[:500]}"
    )
    assert _rss() - baseline < MEMORY_MARGIN
