"""The `pods/<name>/proxy/<path>` subresource: an HTTP request sent on to the pod's own address.

What lives here: `proxy_to_pod(request, pod, id_, path)`, as the real server's pod ResourceLocation
(pkg/registry/core/pod/strategy.go) and its proxy handler: the id is `name`, `name:port` or
`scheme:name:port` (utilnet.SplitSchemeNamePort); without a port, the first declared container
port is used; the request (method, query, body, headers other than hop-by-hop and credentials) goes
to `<scheme>://<podIP>:<port>/<path>` and the answer is streamed back as it is
(kubelet_proxy.relay_response, the kubelet proxy's own relay). A pod without an IP
is a 400 as upstream's IsProxyableIP answers; an unreachable pod is a 503 with the dial error.
Must not: proxy upgrades (exec, attach and port-forward go to the kubelet: kubelet_proxy.py), or
look anything up in the store (the caller passes the pod).
"""

from __future__ import annotations

from typing import Any

import aiohttp
from aiohttp import web

from vk_sandbox.api import errors
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.kubelet_proxy import relay_response

# Hop-by-hop headers (RFC 7230 6.1) and the client's credentials for this server.
_DROP_REQUEST = {
    "host",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "transfer-encoding",
    "authorization",
}
_TIMEOUT = aiohttp.ClientTimeout(total=None, connect=10, sock_connect=10)


def split_scheme_name_port(id_: str) -> tuple[str, str, str]:
    """utilnet.SplitSchemeNamePort: (scheme, name, port); 400 for an id it does not accept."""
    parts = id_.split(":")
    scheme, port = "", ""
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        name, port = parts
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        name = ""
    if not name or scheme not in ("", "http", "https"):
        raise errors.bad_request(f"invalid request {id_!r}")
    return scheme or "http", name, port


def _first_container_port(pod: dict[str, Any]) -> str:
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("containerPort"):
                return str(port["containerPort"])
    return ""


async def proxy_to_pod(request: web.Request, pod: dict[str, Any], id_: str, path: str) -> web.StreamResponse:
    scheme, _, port = split_scheme_name_port(id_)
    port = port or _first_container_port(pod)
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise errors.bad_request("address not allowed")
    host = f"[{ip}]" if ":" in ip else ip
    url = f"{scheme}://{host}{':' + port if port else ''}{path}"
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST}
    body = await request.read() if request.can_read_body else None
    async with aiohttp.ClientSession(timeout=_TIMEOUT, auto_decompress=False) as session:
        try:
            upstream = await session.request(
                # ssl=False: the real server does not verify a pod's certificate either
                request.method,
                url,
                params=request.query,
                headers=headers,
                data=body,
                ssl=False,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            # proxy's ErrorResponder answers a failed dial 503 (k8s.io/apimachinery pkg/util/proxy)
            raise ApiError(503, "ServiceUnavailable", f"error trying to reach service: {exc}") from None
        async with upstream:
            # cut short, the connection is dropped, as the real server's ReverseProxy does
            return await relay_response(request, upstream, abort_cut_short=True)
