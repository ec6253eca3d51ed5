"""`HealthzServer`: the provider's unauthenticated health endpoints (the kubelet's `healthzPort`,
10248), plain HTTP.

What lives here: a small aiohttp server on `kubeletServer.healthzListen` answering `GET
/healthz` (liveness: 200 `ok` from the provider's event loop, so a wedged loop fails it; a TCP
probe would not see it: the kernel accepts connections for a stuck process) and `GET /readyz`
(readiness: the engine answers, the apiserver answered recently, the Node is registered;
readiness.py decides, 500 with the failed checks' names when one fails, the list with
`?verbose`), for the probes of the provider's own pod (the chart's). It is started once the
provider has started, so a probe before that fails. Like the kubelet's, it needs no
credentials and says nothing but which check failed. Must not: serve anything else (the
authenticated kubelet API is server.py), decide readiness itself, or use TLS.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from vk_common.logging import get_logger
from vk_provider.kubeletapi.readiness import Readiness, report
from vk_provider.kubeletapi.server import parse_listen

log = get_logger("kubeletapi.healthz")


class HealthzServer:
    def __init__(self, listen: str, readiness: Readiness | None = None) -> None:
        self.listen = listen
        self.port = 0
        self._readiness = readiness  # None: /readyz is not served
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        async def healthz(_: web.Request) -> web.StreamResponse:
            return web.Response(text="ok")

        app = web.Application()
        app.router.add_get("/healthz", healthz)
        if self._readiness is not None:
            app.router.add_get("/readyz", self._readyz(self._readiness))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        host, port = parse_listen(self.listen)
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        server: Any = site._server  # the bound port, for a listen of ":0"
        self.port = int(server.sockets[0].getsockname()[1]) if server is not None else port
        log.info(
            "health endpoints listening (/healthz, /readyz)", extra={"address": f"http://{host}:{self.port}"}
        )

    @staticmethod
    def _readyz(readiness: Readiness) -> Any:
        async def readyz(request: web.Request) -> web.StreamResponse:
            status, body = report(await readiness.checks(), "verbose" in request.query)
            return web.Response(status=status, text=body)

        return readyz

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
