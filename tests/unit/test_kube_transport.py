"""The apiserver client's transport (vk_provider/kube/transport.py): the proxy variables are read
once and honoured, NO_PROXY leaves a host out, a kubeconfig's proxy-url wins, and ~/.netrc is
never read (client-go reads none). Local aiohttp servers stand in for the apiserver and a proxy."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from aiohttp import web

from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import ApiConnectionError, make_kube_client
from vk_provider.kube.transport import env_proxy


class Recorder:
    """A server that answers every GET with a Namespace and keeps what it was sent."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []  # (the request line's target, Authorization)
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append((request.raw_path, request.headers.get("Authorization")))
        return web.json_response({"kind": "Namespace", "metadata": {"name": "default"}})


async def _serve(recorder: Recorder) -> web.AppRunner:
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", recorder.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    recorder.url = f"http://127.0.0.1:{port}"
    return runner


@pytest.fixture
async def servers() -> AsyncIterator[tuple[Recorder, Recorder]]:
    apiserver, proxy = Recorder(), Recorder()
    runners = [await _serve(apiserver), await _serve(proxy)]
    yield apiserver, proxy
    for runner in runners:
        await runner.cleanup()


def _kubeconfig(
    tmp_path: Path, server: str, proxy_url: str | None = None, user: dict[str, str] | None = None
) -> str:
    cluster: dict[str, str] = {"server": server}
    if proxy_url:
        cluster["proxy-url"] = proxy_url
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user or {}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return str(path)


async def _get(kubeconfig: str) -> None:
    client = await make_kube_client(KubernetesConfig(kubeconfig=kubeconfig))
    try:
        assert (await client.get("/api/v1/namespaces/default"))["metadata"]["name"] == "default"
    finally:
        await client.close()


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


async def test_the_proxy_variable_carries_the_requests(
    servers: tuple[Recorder, Recorder], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    apiserver, proxy = servers
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    await _get(_kubeconfig(tmp_path, apiserver.url))
    assert apiserver.seen == []
    assert [target for target, _ in proxy.seen] == [f"{apiserver.url}/api/v1/namespaces/default"]


async def test_no_proxy_leaves_the_apiserver_out(
    servers: tuple[Recorder, Recorder], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    apiserver, proxy = servers
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    await _get(_kubeconfig(tmp_path, apiserver.url))
    assert proxy.seen == [] and [t for t, _ in apiserver.seen] == ["/api/v1/namespaces/default"]
    assert env_proxy(apiserver.url) is None


async def test_the_kubeconfig_proxy_url_wins_over_the_variables(
    servers: tuple[Recorder, Recorder], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    apiserver, proxy = servers
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    await _get(_kubeconfig(tmp_path, apiserver.url, proxy_url=proxy.url))
    assert apiserver.seen == [] and len(proxy.seen) == 1


async def test_netrc_is_never_read(servers: tuple[Recorder, Recorder], tmp_path: Path) -> None:
    apiserver, _ = servers
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    await _get(_kubeconfig(tmp_path, apiserver.url))
    assert apiserver.seen == [("/api/v1/namespaces/default", None)]


async def test_a_request_carries_the_credentials_headers_query_and_body(tmp_path: Path) -> None:
    """The lean request (`ApiTransport.send`) sends what the generated client sent: the
    kubeconfig's token, the client's User-Agent, the patch's Content-Type, the query encoded,
    the body as JSON."""
    seen: list[tuple[str, str, dict[str, str], object]] = []

    async def handle(request: web.Request) -> web.Response:
        text = await request.text()
        seen.append(
            (request.method, request.raw_path, dict(request.headers), json.loads(text) if text else None)
        )
        return web.json_response({"kind": "Pod", "metadata": {"name": "web"}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    server = f"http://127.0.0.1:{runner.addresses[0][1]}"
    path = _kubeconfig(tmp_path, server, user={"token": "s3cret"})
    client = await make_kube_client(KubernetesConfig(kubeconfig=path))
    try:
        body = {"status": {"phase": "Running", "message": "é"}}
        answer = await client.patch("/api/v1/namespaces/d/pods/web/status", body)
        await client.get("/api/v1/pods", {"labelSelector": "app in (a,b)", "allowWatchBookmarks": True})
    finally:
        await client.close()
        await runner.cleanup()
    assert answer == {"kind": "Pod", "metadata": {"name": "web"}}
    (method, target, headers, received), listed = seen
    listed_path, _, listed_query = listed[1].partition("?")
    assert (listed[0], listed_path) == ("GET", "/api/v1/pods")
    assert parse_qsl(listed_query) == [("labelSelector", "app in (a,b)"), ("allowWatchBookmarks", "true")]
    assert listed[2]["Authorization"] == "Bearer s3cret" and listed[3] is None
    assert (method, target, received) == ("PATCH", "/api/v1/namespaces/d/pods/web/status", body)
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert headers["Accept"] == "application/json"
    assert headers["User-Agent"].startswith("vk-provider/")


class Peers:
    """A server that answers each request with what the `answers` function makes of it and
    keeps the client's address of each request (one address per connection)."""

    def __init__(self, answers: Callable[[web.Request], web.StreamResponse]) -> None:
        self.answers = answers
        self.seen: list[tuple[str, str, object]] = []  # (method, target, peer)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.seen.append(
            (
                request.method,
                request.raw_path,
                request.transport and request.transport.get_extra_info("peername"),
            )
        )
        return self.answers(request)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Peers], Awaitable[str]]]:
    runners: list[web.AppRunner] = []

    async def start(peers: Peers) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:(?s:.*)}", peers.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_requests_share_one_kept_alive_connection(
    serve: Callable[[Peers], Awaitable[str]], tmp_path: Path
) -> None:
    peers = Peers(lambda request: web.json_response({"kind": "Pod"}))
    client = await make_kube_client(KubernetesConfig(kubeconfig=_kubeconfig(tmp_path, await serve(peers))))
    try:
        for _ in range(3):
            assert await client.get("/api/v1/namespaces/d/pods/p") == {"kind": "Pod"}
        await client.create("/api/v1/namespaces/d/events", {"kind": "Event"})
        await client.delete("/api/v1/namespaces/d/pods/p")
    finally:
        await client.close()
    assert [method for method, _, _ in peers.seen] == ["GET", "GET", "GET", "POST", "DELETE"]
    assert len({peer for _, _, peer in peers.seen}) == 1


async def test_the_servers_path_comes_before_every_requests(
    serve: Callable[[Peers], Awaitable[str]], tmp_path: Path
) -> None:
    """A server URL with a path (an apiserver behind a proxy that routes by path, as Rancher's)."""
    peers = Peers(lambda request: web.json_response({"kind": "Pod"}))
    server = await serve(peers) + "/k8s/clusters/c-1/"
    client = await make_kube_client(KubernetesConfig(kubeconfig=_kubeconfig(tmp_path, server)))
    try:
        await client.get("/api/v1/pods", {"labelSelector": "app=web"})
    finally:
        await client.close()
    assert [target for _, target, _ in peers.seen] == [
        "/k8s/clusters/c-1/api/v1/pods?labelSelector=app%3Dweb"
    ]


async def test_an_answer_with_retry_after_is_sent_again_on_the_wire(
    serve: Callable[[Peers], Awaitable[str]], tmp_path: Path
) -> None:
    answers = [
        web.json_response({"kind": "Status", "code": 429}, status=429, headers={"Retry-After": "0"}),
        web.json_response({"kind": "Pod"}),
    ]
    peers = Peers(lambda request: answers.pop(0))
    client = await make_kube_client(KubernetesConfig(kubeconfig=_kubeconfig(tmp_path, await serve(peers))))
    try:
        assert await client.patch("/api/v1/namespaces/d/pods/p/status", {"status": {}}) == {"kind": "Pod"}
    finally:
        await client.close()
    assert [method for method, _, _ in peers.seen] == ["PATCH", "PATCH"]


async def test_a_token_with_a_line_break_is_never_sent(
    serve: Callable[[Peers], Awaitable[str]], tmp_path: Path
) -> None:
    """A credential that would end the header and start another is an error, not a request."""
    peers = Peers(lambda request: web.json_response({"kind": "Pod"}))
    kubeconfig = _kubeconfig(tmp_path, await serve(peers), user={"token": "s3cret\r\nX-Remote-User: admin"})
    client = await make_kube_client(KubernetesConfig(kubeconfig=kubeconfig))
    try:
        with pytest.raises(ApiConnectionError, match=r"(?i)header authorization holds a line break"):
            await client.get("/api/v1/pods")
    finally:
        await client.close()
    assert peers.seen == []


async def test_a_path_holding_a_line_break_goes_percent_encoded_in_one_request(
    serve: Callable[[Peers], Awaitable[str]], tmp_path: Path
) -> None:
    """A name with a line break (never a valid one) cannot split the request: the path is
    percent-encoded, the server sees one request and answers it."""
    peers = Peers(lambda request: web.json_response({"kind": "Pod"}))
    client = await make_kube_client(KubernetesConfig(kubeconfig=_kubeconfig(tmp_path, await serve(peers))))
    try:
        assert await client.get("/api/v1/namespaces/d/pods/p\r\nX-Smuggled: 1") == {"kind": "Pod"}
    finally:
        await client.close()
    assert [(method, target) for method, target, _ in peers.seen] == [
        ("GET", "/api/v1/namespaces/d/pods/p%0D%0AX-Smuggled:%201")
    ]
