"""What a client, or a web page in a browser, gets from the sandbox API before any handler runs.

The admin bearer token of the kubeconfig (or a service account token of the sandbox) is needed
everywhere but GET of /healthz, /livez, /readyz and /version; an Origin or Host that is not
local is refused; a body needs a type the API decodes; more than 3 MiB is a 413 Status.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from multidict import CIMultiDictProxy

from tests.support.kubectl import run_kubectl
from tests.support.sandbox import RunningSandbox, admin_session, running_sandbox, tls_session

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}
LIMIT = 3 * 1024 * 1024
TOO_LARGE = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Request entity too large: limit is 3145728",
    "reason": "RequestEntityTooLarge",
    "code": 413,
}


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[RunningSandbox]:
    async with running_sandbox(tmp_path, controllers=False, debug=True) as server:
        yield server


async def _call(
    session: aiohttp.ClientSession, sandbox: RunningSandbox, method: str, path: str, **kwargs: Any
) -> tuple[int, Any, CIMultiDictProxy[str]]:
    async with session.request(method, sandbox.url + path, **kwargs) as response:
        text = await response.text()
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        return response.status, body, response.headers


async def _anonymous(sandbox: RunningSandbox, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    async with tls_session(sandbox) as session:
        code, body, _ = await _call(session, sandbox, method, path, **kwargs)
    return code, body


async def _admin(sandbox: RunningSandbox, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    async with admin_session(sandbox) as session:
        code, body, _ = await _call(session, sandbox, method, path, **kwargs)
    return code, body


def _configmap(name: str) -> bytes:
    return json.dumps({"metadata": {"name": name}, "data": {"a": "1"}}).encode()


# ------------------------------------------------------------------ the token


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api"),
        ("GET", "/apis"),
        ("GET", "/api/v1"),
        ("GET", "/api/v1/pods"),
        ("GET", "/openapi/v2"),
        ("GET", "/openapi/v3"),
        ("GET", "/apis/metrics.k8s.io/v1beta1/nodes"),
        ("GET", "/debug/sandbox/counters"),
        ("POST", "/debug/sandbox/close-watches"),
        ("GET", "/healthz/ping"),
        ("POST", "/version"),
        ("GET", "/no/such/path"),
        ("OPTIONS", "/api/v1/pods"),
    ],
)
async def test_requests_without_the_token_are_401(sandbox: RunningSandbox, method: str, path: str) -> None:
    assert await _anonymous(sandbox, method, path) == (401, UNAUTHORIZED)
    for header in (
        "Bearer not-a-token",
        f"Basic {sandbox.admin_token}",
        "Bearer",
        f"bearer {sandbox.admin_token}x",
    ):
        assert await _anonymous(sandbox, method, path, headers={"Authorization": header}) == (
            401,
            UNAUTHORIZED,
        )


async def test_a_create_without_the_token_changes_nothing(sandbox: RunningSandbox) -> None:
    headers = {"Content-Type": "application/json"}
    assert await _anonymous(sandbox, "POST", CONFIGMAPS, data=_configmap("csrf"), headers=headers) == (
        401,
        UNAUTHORIZED,
    )
    code, _ = await _admin(sandbox, "GET", f"{CONFIGMAPS}/csrf")
    assert code == 404


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/version", "/version/"])
async def test_health_and_version_stay_open(sandbox: RunningSandbox, path: str) -> None:
    code, _ = await _anonymous(sandbox, "GET", path)
    assert code == 200


async def test_the_kubeconfig_carries_the_token_kubectl_sends(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    user = yaml.safe_load(sandbox.kubeconfig.read_text())["users"][0]["user"]
    assert user == {"token": sandbox.admin_token}
    assert yaml.safe_load(sandbox.kubeconfig.read_text())["clusters"][0]["cluster"]["server"].startswith(
        "https://"
    )
    token_file = tmp_path / "sandbox" / "admin.token"
    assert token_file.read_text() == sandbox.admin_token
    assert token_file.stat().st_mode & 0o077 == 0
    env = {"HOME": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "cache")}
    code, out, err = await run_kubectl(sandbox.kubeconfig, "get", "namespaces", "-o", "name", env=env)
    assert code == 0, err
    assert "namespace/kube-system" in out.split()


async def test_the_token_survives_a_restart_on_the_same_state(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, controllers=False) as first:
        token = first.admin_token
    async with running_sandbox(tmp_path, controllers=False) as second:
        assert second.admin_token == token
        assert (await _admin(second, "GET", "/api/v1/namespaces"))[0] == 200
    async with running_sandbox(tmp_path / "other", controllers=False) as other:
        assert other.admin_token != token
        bearer = {"Authorization": f"Bearer {token}"}
        assert await _anonymous(other, "GET", "/api/v1/namespaces", headers=bearer) == (401, UNAUTHORIZED)


async def test_the_check_can_be_turned_off(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, controllers=False, require_token=False) as server:
        code, body = await _anonymous(server, "GET", "/api/v1/namespaces")
        assert code == 200 and body["kind"] == "NamespaceList"


async def _service_account_token(sandbox: RunningSandbox, spec: dict[str, Any]) -> str:
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    code, body = await _admin(
        sandbox, "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", json=request
    )
    assert code == 201, body
    return str(body["status"]["token"])


async def test_service_account_tokens_of_the_sandbox_authenticate(sandbox: RunningSandbox) -> None:
    pod = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
    code, created = await _admin(sandbox, "POST", "/api/v1/namespaces/default/pods", json=pod)
    assert code == 201, created
    bound = await _service_account_token(
        sandbox,
        {
            "boundObjectRef": {
                "kind": "Pod",
                "apiVersion": "v1",
                "name": "web",
                "uid": created["metadata"]["uid"],
            }
        },
    )
    other_audience = await _service_account_token(sandbox, {"audiences": ["vk-test"]})

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    code, body = await _anonymous(sandbox, "GET", "/api/v1/namespaces/default/pods", headers=bearer(bound))
    assert code == 200 and body["items"][0]["metadata"]["name"] == "web"
    # a token for another audience is not one for the API, as on the real server
    assert await _anonymous(sandbox, "GET", "/api/v1/pods", headers=bearer(other_audience)) == (
        401,
        UNAUTHORIZED,
    )
    forged = bound[:-4] + ("AAAA" if not bound.endswith("AAAA") else "BBBB")
    assert await _anonymous(sandbox, "GET", "/api/v1/pods", headers=bearer(forged)) == (401, UNAUTHORIZED)
    code, _ = await _admin(sandbox, "DELETE", "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=0")
    assert code == 200
    # the bound pod is gone: so is the token's validity (TokenReview's check)
    assert await _anonymous(sandbox, "GET", "/api/v1/pods", headers=bearer(bound)) == (401, UNAUTHORIZED)


# ------------------------------------------------------------------ Origin and Host


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "https://127.0.0.1.evil.example", "null", "file://"]
)
async def test_a_foreign_origin_is_403_and_creates_nothing(sandbox: RunningSandbox, origin: str) -> None:
    headers = {"Origin": origin, "Content-Type": "application/json"}
    code, body = await _admin(sandbox, "POST", CONFIGMAPS, data=_configmap("from-a-page"), headers=headers)
    assert code == 403
    assert body["kind"] == "Status" and body["reason"] == "Forbidden" and body["code"] == 403
    assert origin in body["message"]
    assert (await _admin(sandbox, "GET", f"{CONFIGMAPS}/from-a-page"))[0] == 404


@pytest.mark.parametrize(
    "origin", ["http://127.0.0.1", "http://localhost:3000", "https://[::1]:8443", "http://127.0.0.1:6443"]
)
async def test_a_loopback_origin_is_served(sandbox: RunningSandbox, origin: str) -> None:
    code, body = await _admin(sandbox, "GET", "/api/v1/namespaces", headers={"Origin": origin})
    assert code == 200, body


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", ""])
async def test_a_foreign_host_name_is_403(sandbox: RunningSandbox, host: str) -> None:
    headers = {"Host": host.format(port=sandbox.port)}
    code, body = await _admin(sandbox, "GET", "/api/v1/namespaces", headers=headers)
    assert code == 403 and body["reason"] == "Forbidden", body
    # a DNS-rebinding page cannot read the open endpoints either
    assert (await _anonymous(sandbox, "GET", "/version", headers=headers))[0] == 403


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}", "127.0.0.2"])
async def test_a_loopback_host_name_is_served(sandbox: RunningSandbox, host: str) -> None:
    code, body = await _admin(
        sandbox, "GET", "/api/v1/namespaces", headers={"Host": host.format(port=sandbox.port)}
    )
    assert code == 200, body


@pytest.mark.parametrize("origin", ["http://localhost:3000", "http://evil.example"])
async def test_no_cors_headers_even_for_a_preflight(sandbox: RunningSandbox, origin: str) -> None:
    preflight = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    async with tls_session(sandbox) as session:
        code, _, headers = await _call(session, sandbox, "OPTIONS", CONFIGMAPS, headers=preflight)
    assert code in (401, 403)
    assert not [h for h in headers if h.lower().startswith("access-control-")]
    async with admin_session(sandbox) as session:
        code, _, headers = await _call(
            session, sandbox, "GET", "/api/v1/namespaces", headers={"Origin": origin}
        )
    assert not [h for h in headers if h.lower().startswith("access-control-")]


# ------------------------------------------------------------------ Content-Type


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "*/*"],
)
async def test_a_body_of_no_api_type_is_415_and_creates_nothing(
    sandbox: RunningSandbox, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    async with admin_session(sandbox, skip_auto_headers=("Content-Type",)) as session:
        code, body, _ = await _call(
            session, sandbox, "POST", CONFIGMAPS, data=_configmap("typeless"), headers=headers
        )
    assert (code, body) == (
        415,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf",
            "reason": "UnsupportedMediaType",
            "code": 415,
        },
    )
    assert (await _admin(sandbox, "GET", f"{CONFIGMAPS}/typeless"))[0] == 404


@pytest.mark.parametrize("content_type", [None, ""])
async def test_a_create_without_content_type_is_json_unless_a_browser_sent_it(
    sandbox: RunningSandbox, content_type: str | None
) -> None:
    """As the real server (NegotiateInputSerializerForMediaType: none means JSON), which the
    official Python client relies on; a request with an Origin is a browser's, and a browser's
    cross-site POST must not reach a handler, so there a missing Content-Type stays 415."""
    headers = {} if content_type is None else {"Content-Type": content_type}
    async with admin_session(sandbox, skip_auto_headers=("Content-Type",)) as session:
        code, _, _ = await _call(
            session, sandbox, "POST", CONFIGMAPS, data=_configmap("typeless"), headers=headers
        )
        assert code == 201
        browser = {**headers, "Origin": "http://localhost:3000"}  # a local page: its origin passes
        code, body, _ = await _call(
            session, sandbox, "POST", CONFIGMAPS, data=_configmap("from-a-page"), headers=browser
        )
    assert (code, body["reason"]) == (415, "UnsupportedMediaType")
    assert (await _admin(sandbox, "GET", f"{CONFIGMAPS}/from-a-page"))[0] == 404


async def test_a_patch_without_content_type_is_415(sandbox: RunningSandbox) -> None:
    headers = {"Content-Type": "application/json"}
    assert (await _admin(sandbox, "POST", CONFIGMAPS, data=_configmap("patched"), headers=headers))[0] == 201
    async with admin_session(sandbox, skip_auto_headers=("Content-Type",)) as session:
        code, body, _ = await _call(
            session, sandbox, "PATCH", f"{CONFIGMAPS}/patched", data=b'{"data":{"a":"2"}}'
        )
    assert code == 415 and body["reason"] == "UnsupportedMediaType", body
    code, current = await _admin(sandbox, "GET", f"{CONFIGMAPS}/patched")
    assert current["data"] == {"a": "1"}


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json; charset=utf-8", _configmap("as-json")),
        ("application/yaml", yaml.safe_dump({"metadata": {"name": "as-yaml"}}).encode()),
    ],
)
async def test_api_types_are_decoded(sandbox: RunningSandbox, content_type: str, body: bytes) -> None:
    code, answer = await _admin(
        sandbox, "POST", CONFIGMAPS, data=body, headers={"Content-Type": content_type}
    )
    assert code == 201, answer


async def test_bodyless_posts_and_proxy_bodies_need_no_api_type(sandbox: RunningSandbox) -> None:
    async with admin_session(sandbox, skip_auto_headers=("Content-Type",)) as session:
        code, body, _ = await _call(session, sandbox, "POST", "/debug/sandbox/close-watches")
        assert code == 200, body
        # the proxy passes the body on (here: to a node that does not exist)
        proxy = "/api/v1/nodes/nowhere/proxy/run"
        code, body, _ = await _call(
            session, sandbox, "POST", proxy, data=b"a=1", headers={"Content-Type": "text/plain"}
        )
    assert code == 404 and body["reason"] == "NotFound", body


# ------------------------------------------------------------------ size


async def test_a_body_above_3_mib_is_413_before_it_is_read(sandbox: RunningSandbox) -> None:
    headers = {"Content-Type": "application/json"}
    assert await _admin(sandbox, "POST", CONFIGMAPS, data=b" " * (LIMIT + 1), headers=headers) == (
        413,
        TOO_LARGE,
    )
    assert await _admin(
        sandbox, "POST", "/debug/sandbox/faults", data=b" " * (LIMIT + 1), headers=headers
    ) == (
        413,
        TOO_LARGE,
    )
    # exactly the limit is allowed, as limitedReadBody allows it: the body is read (and is no object)
    code, body = await _admin(sandbox, "POST", CONFIGMAPS, data=b" " * LIMIT, headers=headers)
    assert code == 400 and body["reason"] == "BadRequest", body


async def test_a_chunked_body_above_3_mib_is_413(sandbox: RunningSandbox) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(LIMIT // 65536 + 8):
            yield b" " * 65536

    headers = {"Content-Type": "application/json"}
    assert await _admin(sandbox, "POST", CONFIGMAPS, data=chunks(), headers=headers) == (413, TOO_LARGE)
    assert await _admin(sandbox, "PUT", f"{CONFIGMAPS}/x", data=chunks(), headers=headers) == (413, TOO_LARGE)
