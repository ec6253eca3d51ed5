"""The HTTP transport under the apiserver client: `api_client_for(configuration)`.

What lives here: `ApiTransport`, a kubernetes_asyncio `ApiClient` with one lean request,
`send` (the body already JSON, the credentials from the client's own auth settings, which
refresh a token as they do for the generated client; none of the generated client's work per
request: walking the body to sanitise it, building a timeout, matching the content type,
encoding a string, about a quarter of a small request's CPU), and `api_client_for`, an
`ApiTransport` whose aiohttp session reads nothing from the environment per request.
kubernetes_asyncio makes its session with `trust_env=True`, and aiohttp then looks up `~/.netrc`
and the proxy variables in a worker thread before every request: two thread hops per request,
a tenth of the provider's CPU in a burst of pod starts (issue 32's profile). client-go reads no
netrc, and reads the proxy variables once (net/http's ProxyFromEnvironment): so the proxy for
the apiserver's address is looked up here once, from `HTTPS_PROXY`/`HTTP_PROXY` and `NO_PROXY`,
unless the kubeconfig names one (`proxy-url`). Must not: change the configuration's credentials,
TLS or timeouts.
"""

from __future__ import annotations

import urllib.request
from urllib.parse import urlencode

import aiohttp
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

# kubernetes_asyncio's read buffer (client/rest.py): a watch event can hold a 1.5 MiB object.
READ_BUFSIZE = 2**21


def env_proxy(server: str) -> str | None:
    """The proxy the environment names for `server` (an `https://host:port` URL), or None
    when there is none or `NO_PROXY` leaves the host out."""
    url = URL(server)
    if not url.host or urllib.request.proxy_bypass(url.host):
        return None
    return urllib.request.getproxies().get(url.scheme)


class ApiTransport(ApiClient):
    async def send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]],
        content_type: str,
        body: bytes | None,
        timeouts: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """One request to the apiserver (`path` absolute, `query` encoded); the answer unread."""
        headers = {**self.default_headers, "Accept": "application/json", "Content-Type": content_type}
        if self.cookie:
            headers["Cookie"] = self.cookie
        query = list(query)  # an auth setting "in: query" appends to it; the caller's is reused
        await self.update_params_for_auth(headers, query, ["BearerToken"])
        url = (self.configuration.host or "") + path
        if query:
            url += "?" + urlencode(query)
        rest = self.rest_client
        response: aiohttp.ClientResponse = await rest.pool_manager.request(
            method,
            url,
            headers=headers,
            data=body,
            timeout=timeouts,
            proxy=rest.proxy,
            proxy_headers=rest.proxy_headers,
            server_hostname=rest.server_hostname,
        )
        return response


def api_client_for(configuration: Configuration) -> ApiTransport:
    """An ApiTransport for `configuration` on a session that does not trust the environment."""
    api = ApiTransport(configuration)
    rest = api.rest_client
    old = rest.pool_manager
    connector = old.connector
    old.detach()  # the connector (TLS context, pool size) passes to the new session
    rest.pool_manager = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=READ_BUFSIZE)
    if not rest.proxy and (proxy := env_proxy(configuration.host or "")):
        rest.proxy = proxy
        if (auth := aiohttp.BasicAuth.from_url(URL(proxy))) is not None:
            rest.proxy_headers = {"Proxy-Authorization": auth.encode()}
    return api
