"""`HealthzServer`: the kubelet's unauthenticated health endpoint (its `healthzPort`, 10248), plain HTTP.

What lives here: a small aiohttp server on `kubeletServer.healthzListen` answering `GET
/healthz` with 200 `ok`, for the liveness and readiness probes of the provider's own pod
(the chart's). It is started once the provider has started, so a probe before that fails;
the answer comes from the provider's event loop, so a wedged loop fails the probe too (a TCP
probe would not see it: the kernel accepts connections for a stuck process). Like the
kubelet's, it needs no credentials and says nothing but `ok`.
Must not: serve anything else (the authenticated kubelet API is server.py), or use TLS.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from vk_provider.kubeletapi.server import parse_listen
from vk_provider.logging import get_logger

log = get_logger("kubeletapi.healthz")


class HealthzServer:
    def __init__(self, listen: str) -> None:
        self.listen = listen
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        async def healthz(_: web.Request) -> web.StreamResponse:
            return web.Response(text="ok")

        app = web.Application()
        app.router.add_get("/healthz", healthz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        host, port = parse_listen(self.listen)
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        server: Any = site._server  # the bound port, for a listen of ":0"
        self.port = int(server.sockets[0].getsockname()[1]) if server is not None else port
        log.info("health endpoint listening on http://%s:%d/healthz", host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
