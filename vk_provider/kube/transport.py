"""The HTTP transport under the apiserver client: `api_client_for(configuration)`.

What lives here: `api_client_for`, a kubernetes_asyncio `ApiClient` whose aiohttp session reads
nothing from the environment per request. kubernetes_asyncio makes its session with
`trust_env=True`, and aiohttp then looks up `~/.netrc` and the proxy variables in a worker
thread before every request: two thread hops per request, a tenth of the provider's CPU in a
burst of pod starts (issue 32's profile). client-go reads no netrc, and reads the proxy
variables once (net/http's ProxyFromEnvironment): so the proxy for the apiserver's address is
looked up here once, from `HTTPS_PROXY`/`HTTP_PROXY` and `NO_PROXY`, unless the kubeconfig names
one (`proxy-url`). Must not: change the configuration's credentials, TLS or timeouts.
"""

from __future__ import annotations

import urllib.request

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


def api_client_for(configuration: Configuration) -> ApiClient:
    """An ApiClient for `configuration` on a session that does not trust the environment."""
    api = ApiClient(configuration)
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
