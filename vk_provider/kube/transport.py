"""The HTTP transport under the apiserver client: `api_client_for(configuration)`.

What lives here: `ApiTransport`, a kubernetes_asyncio `ApiClient` (its configuration, and its
auth settings, which refresh a token as they do for the generated client) with two lean requests
of ours, the body already JSON and none of the generated client's work per request: `exchange`,
a one-shot request written in one piece on connections of its own kept alive to the apiserver
(vk_provider/wire.py: TLS from the context kubernetes_asyncio made for the configuration, its
CA, client certificate and server name; aiohttp's request and response objects cost about twice
that, docs/performance.md, 2026-12-07, late night), and `send`, a request through the aiohttp
session with its answer unread, for a watch to stream (and every request when a proxy stands
between the provider and the apiserver); and `api_client_for`, an `ApiTransport` whose aiohttp
session reads nothing from the environment per request.
kubernetes_asyncio makes its session with `trust_env=True`, and aiohttp then looks up `~/.netrc`
and the proxy variables in a worker thread before every request: two thread hops per request,
a tenth of the provider's CPU in a burst of pod starts (issue 32's profile). client-go reads no
netrc, and reads the proxy variables once (net/http's ProxyFromEnvironment): so the proxy for
the apiserver's address is looked up here once, from `HTTPS_PROXY`/`HTTP_PROXY` and `NO_PROXY`,
unless the kubeconfig names one (`proxy-url`). Must not: change the configuration's credentials,
TLS or timeouts.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

from vk_provider.wire import Answer, Connections, Reply, request_bytes

# kubernetes_asyncio's read buffer (client/rest.py): a watch event can hold a 1.5 MiB object.
READ_BUFSIZE = 2**21
# What a path keeps as it is when it has to be quoted (RFC 3986's pchar and "/").
PATH_SAFE = "/:@!$&'()*+,;=-._~%"


def env_proxy(server: str) -> str | None:
    """The proxy the environment names for `server` (an `https://host:port` URL), or None
    when there is none or `NO_PROXY` leaves the host out."""
    url = URL(server)
    if not url.host or urllib.request.proxy_bypass(url.host):
        return None
    return urllib.request.getproxies().get(url.scheme)


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One request to the apiserver: `path` absolute, `query` encoded, `body` already JSON."""

    method: str
    path: str
    query: list[tuple[str, str]]
    content_type: str = "application/json"
    body: bytes | None = None


class ApiTransport(ApiClient):
    _wire: Connections | None = None  # set by api_client_for when no proxy stands between
    _prefix = ""  # the server URL's path, before every request's
    _authority = ""  # the Host header

    async def _headers(self, content_type: str, query: list[tuple[str, str]]) -> dict[str, str]:
        """The request's headers with the credentials; an auth setting "in: query" appends to `query`."""
        headers = {**self.default_headers, "Accept": "application/json", "Content-Type": content_type}
        if self.cookie:
            headers["Cookie"] = self.cookie
        await self.update_params_for_auth(headers, query, ["BearerToken"])
        return headers

    async def send(self, request: ApiRequest, timeouts: aiohttp.ClientTimeout) -> aiohttp.ClientResponse:
        """`request` through aiohttp; the answer unread, for a watch to stream."""
        query = list(request.query)  # the caller's is reused
        headers = await self._headers(request.content_type, query)
        url = (self.configuration.host or "") + request.path
        if query:
            url += "?" + urlencode(query)
        rest = self.rest_client
        response: aiohttp.ClientResponse = await rest.pool_manager.request(
            request.method,
            url,
            headers=headers,
            data=request.body,
            timeout=timeouts,
            proxy=rest.proxy,
            proxy_headers=rest.proxy_headers,
            server_hostname=rest.server_hostname,
        )
        return response

    async def exchange(self, request: ApiRequest, within: float) -> Reply:
        """`request` and its whole answer, written in one piece on a kept-alive connection
        (vk_provider/wire.py), within `within` seconds; through aiohttp when a proxy stands
        between."""
        if self._wire is None:
            async with await self.send(request, aiohttp.ClientTimeout(total=within)) as response:
                data = await response.read()
            headers = {name.lower(): value for name, value in response.headers.items()}
            return Reply(response.status, response.reason or "", headers, data)
        query = list(request.query)
        headers = await self._headers(request.content_type, query)
        method, path, body = request.method, request.path, request.body
        if not path.isascii() or not path.isprintable() or " " in path:
            path = quote(path, safe=PATH_SAFE)
        target = self._prefix + path
        if query:
            target += "?" + urlencode(query)
        data = request_bytes(method, target, {"Host": self._authority, **headers}, body)
        return await self._wire.exchange(data, resend=method in ("GET", "HEAD"), within=within)

    async def close(self) -> None:
        if self._wire is not None:
            self._wire.close()
        await super().close()


def _tls(connector: aiohttp.BaseConnector) -> ssl.SSLContext | None:
    """The TLS context kubernetes_asyncio made for the configuration (CA, client certificate,
    verification), which its connector holds."""
    context = getattr(connector, "_ssl", None)
    return context if isinstance(context, ssl.SSLContext) else None


def _wire_for(api: ApiTransport, tls: ssl.SSLContext | None) -> None:
    """Give `api` its own kept-alive connections to the server, unless the address is one
    they cannot reach (a proxy, a scheme other than http and https)."""
    rest = api.rest_client
    server = urlsplit(api.configuration.host or "")
    https = server.scheme == "https"
    if rest.proxy or server.scheme not in ("http", "https") or not server.hostname or (https and tls is None):
        return
    host, port = server.hostname, server.port or (443 if https else 80)
    sni = (rest.server_hostname or host) if https else None

    async def connect(factory: Callable[[], Answer]) -> tuple[asyncio.BaseTransport, Answer]:
        loop = asyncio.get_running_loop()
        if not https:
            return await loop.create_connection(factory, host, port)
        return await loop.create_connection(factory, host, port, ssl=tls, server_hostname=sni)

    api._wire = Connections(connect, api.configuration.connection_pool_maxsize or 100)
    api._prefix = server.path.rstrip("/")
    api._authority = server.netloc.rpartition("@")[2]


def api_client_for(configuration: Configuration) -> ApiTransport:
    """An ApiTransport for `configuration`: its one-shot requests on kept-alive connections of
    its own, its watches on an aiohttp session that does not trust the environment."""
    api = ApiTransport(configuration)
    rest = api.rest_client
    old = rest.pool_manager
    connector = old.connector
    assert connector is not None
    old.detach()  # the connector (TLS context, pool size) passes to the new session
    rest.pool_manager = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=READ_BUFSIZE)
    if not rest.proxy and (proxy := env_proxy(configuration.host or "")):
        rest.proxy = proxy
        if (auth := aiohttp.BasicAuth.from_url(URL(proxy))) is not None:
            rest.proxy_headers = {"Proxy-Authorization": auth.encode()}
    _wire_for(api, _tls(connector))
    return api
