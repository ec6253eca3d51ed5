"""`KubeletServer`: the node's kubelet HTTPS endpoint (logs, exec, attach, pods, stats, metrics).

What lives here: the aiohttp application with the kubelet's routes (virtual-kubelet
`node/api/server.go`, gorilla/mux with `StrictSlash(true)`: a path with a trailing slash
is redirected with 301 to the route without it, after authentication: virtual-kubelet's
`WithAuth` wraps the whole mux), the error mapping (404 / 400 / 500 with the error text as the
body, as `node/api/helpers.go`), the desired pods the app hands it (`pods`, podstate.py), `/metrics`
(the provider's own series, vk_provider/metrics.py, with the running gauges set from the
runtime when scraped) and `/metrics/probes` (the prober series; neither route without
`metrics`: `metrics.enabled: false`), `/metrics/cadvisor` (cadvisor.py, from the same cached
stats pass as `/stats/summary` and `/metrics/resource`), and
the listener's lifecycle on `kubeletServer.listen` (vk_common/guarded_listener.py: the header timeout, the cap
on unauthenticated connections, malformed requests logged once a minute)
(`auth: none` logs a WARNING at start: every request is allowed; so does `auth: webhook`
without `clientCAFile`: the apiserver's client certificate cannot be verified). It reaches containers
only through the Runtime protocol. Must not: implement a route's protocol (logs.py,
exec.py, portforward.py, stats.py, metrics.py, cadvisor.py), TLS/auth details (tls.py, auth.py), or
know which engine the runtime drives.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from vk_common.guarded_listener import ConnectionGuard, GuardedSite, listener_log
from vk_common.logging import get_logger
from vk_common.tasks import cancel_and_wait
from vk_provider.config import KubeletServerConfig
from vk_provider.kube.client import KubeClient
from vk_provider.kubeletapi.auth import allows_anonymous, auth_middleware, authenticated
from vk_provider.kubeletapi.cadvisor import cadvisor_metrics
from vk_provider.kubeletapi.csr import ServingCertificate
from vk_provider.kubeletapi.exec import stream_handler
from vk_provider.kubeletapi.logs import container_logs_handler
from vk_provider.kubeletapi.lookup import BadRequest, NotFound, ServerError
from vk_provider.kubeletapi.metrics import CONTENT_TYPE, resource_metrics
from vk_provider.kubeletapi.node_logs import NodeLogSettings, node_logs_handler
from vk_provider.kubeletapi.pods import pod_list
from vk_provider.kubeletapi.podstate import KnownPods
from vk_provider.kubeletapi.portforward import port_forward_handler
from vk_provider.kubeletapi.stats import StatsCollector
from vk_provider.kubeletapi.tls import KubeletTLSError, server_ssl_context
from vk_provider.kubeletapi.webhook import WebhookAuth
from vk_provider.metrics import ProviderMetrics
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerNotFound, RuntimeFailure, running_counts

log = get_logger("kubeletapi")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def parse_listen(listen: str) -> tuple[str, int]:
    """`host:port` or `[v6]:port` (an empty host means every address)."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"kubeletServer.listen {listen!r}: expected host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except NotFound as exc:
        return web.Response(status=404, text=f"{exc}\n")
    except BadRequest as exc:
        return web.Response(status=400, text=f"{exc}\n")
    except ServerError as exc:
        return web.Response(status=500, text=f"{exc}\n")
    except RuntimeFailure as exc:  # the engine failed or the container vanished meanwhile
        status = 404 if isinstance(exc, ContainerNotFound) else 500
        return web.Response(status=status, text=f"{exc.message}\n")


@web.middleware
async def _strict_slash(request: web.Request, handler: Handler) -> web.StreamResponse:
    """gorilla/mux StrictSlash(true): `/a/` and `/a` redirect (301) to whichever is the route."""
    path = request.path
    if len(path) > 1 and request.match_info.http_exception is not None:
        target = path.rstrip("/") if path.endswith("/") else path + "/"
        match = await request.app.router.resolve(request.clone(rel_url=target))
        if match.http_exception is None:
            query = f"?{request.query_string}" if request.query_string else ""
            raise web.HTTPMovedPermanently(target + query)
    return await handler(request)


class KubeletServer:
    """The kubelet API on HTTPS; `start()` binds (`port` is then the bound port), `stop()` closes."""

    def __init__(
        self,
        config: KubeletServerConfig,
        node_name: str,
        runtime: Runtime,
        node_ip: str,
        *,
        kube: KubeClient | None = None,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        self.config = config
        self.node_name = node_name
        self.runtime = runtime
        self.node_ip = node_ip
        self._stats = StatsCollector(runtime, node_name)
        # auth webhook with an apiserver client: TokenReview and SubjectAccessReview, as the kubelet.
        self._webhook = (
            WebhookAuth(kube, node_name) if kube is not None and config.auth == "webhook" else None
        )
        self._kube = kube
        self.serving_certificate: ServingCertificate | None = None  # tls.mode csr
        self._csr_task: asyncio.Task[None] | None = None
        self._runner: web.AppRunner | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.port = 0
        self._metrics = metrics  # what /metrics serves (None: no /metrics, 404)
        # The desired pods and their statuses (the app sets them once the pod sources exist): logs,
        # exec and attach then answer from the pod's spec and status as the kubelet; without them
        # the runtime's containers alone are the pods.
        self.pods: KnownPods | None = None

    def _app(self, guard: ConnectionGuard) -> web.Application:
        x509 = bool(self.config.client_ca_file)
        self._warn_if_open(x509)
        app = web.Application(  # authenticate first: no redirect (or 404) for anonymous requests
            middlewares=[
                guard.middleware,
                auth_middleware(self.config.auth, x509, self._webhook),
                _strict_slash,
                _errors,
            ]
        )
        rt = self.runtime

        async def healthz(_: web.Request) -> web.StreamResponse:
            return web.Response(text="ok")

        async def logs(request: web.Request) -> web.StreamResponse:
            return await container_logs_handler(request, rt, self.pods)

        async def pods(_: web.Request) -> web.StreamResponse:
            return web.json_response(pod_list(await rt.list_pods(), self.node_name))

        async def exec_(request: web.Request) -> web.StreamResponse:
            return await stream_handler(request, rt, "exec", self.pods)

        async def attach(request: web.Request) -> web.StreamResponse:
            return await stream_handler(request, rt, "attach", self.pods)

        async def port_forward(request: web.Request) -> web.StreamResponse:
            return await port_forward_handler(request, rt, self.node_ip)

        async def summary(_: web.Request) -> web.StreamResponse:
            return web.json_response(await self._stats.summary())

        async def metrics(_: web.Request) -> web.StreamResponse:
            text = resource_metrics(await self._stats.summary())
            return web.Response(body=text.encode(), headers={"Content-Type": CONTENT_TYPE})

        async def cadvisor(_: web.Request) -> web.StreamResponse:
            text = cadvisor_metrics(await self._stats.sample())
            return web.Response(body=text.encode(), headers={"Content-Type": CONTENT_TYPE})

        app.router.add_get("/healthz", healthz)
        app.router.add_get("/pods", pods)
        app.router.add_get("/runningpods/", pods)  # debug: the same pods, as virtual-kubelet's GetPods
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", logs)
        for method in ("GET", "POST"):
            app.router.add_route(method, "/exec/{namespace}/{pod}/{container}", exec_)
            app.router.add_route(method, "/attach/{namespace}/{pod}/{container}", attach)
            app.router.add_route(method, "/portForward/{namespace}/{pod}", port_forward)
        node_logs = node_logs_handler(
            NodeLogSettings(
                self.config.enable_system_log_handler,
                self.config.enable_system_log_query,
                Path(self.config.system_log_dir),
            )
        )
        app.router.add_get("/logs", node_logs)
        app.router.add_get("/logs/{path:.*}", node_logs)
        app.router.add_get("/stats/summary", summary)
        app.router.add_get("/metrics/resource", metrics)
        app.router.add_get("/metrics/cadvisor", cadvisor)
        if self._metrics is not None:
            app.router.add_get("/metrics", self._own_metrics(self._metrics))
            app.router.add_get("/metrics/probes", self._probe_metrics(self._metrics))
        return app

    def _own_metrics(self, metrics: ProviderMetrics) -> Handler:
        async def own_metrics(_: web.Request) -> web.StreamResponse:
            metrics.observe_running(*running_counts((await self.runtime.list_pods()).values()))
            return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE})

        return own_metrics

    def _probe_metrics(self, metrics: ProviderMetrics) -> Handler:
        async def probe_metrics(_: web.Request) -> web.StreamResponse:
            return web.Response(body=metrics.render_probes(), headers={"Content-Type": CONTENT_TYPE})

        return probe_metrics

    def _warn_if_open(self, x509: bool) -> None:
        if self.config.auth == "none":
            log.warning(
                "kubeletServer.auth none: every request to the kubelet API is allowed, unauthenticated "
                "(logs, exec, attach, port-forward); use webhook or x509 outside a test"
            )
        elif self.config.auth == "webhook" and not x509 and self._webhook is None:
            log.warning(
                "kubeletServer.auth webhook without clientCAFile: the kubelet API accepts anonymous requests"
            )
        elif self.config.auth == "webhook" and not x509:
            log.warning(
                "kubeletServer.auth webhook without clientCAFile: the apiserver's client certificate "
                "cannot be verified, so kubectl logs, exec, attach and port-forward answer 401; set "
                "clientCAFile to the CA that signs it (in a pod, usually "
                "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt)"
            )

    async def start(self) -> None:
        host, port = parse_listen(self.config.listen)
        self._scratch = tempfile.TemporaryDirectory(prefix="vk-kubelet-tls-")
        scratch = Path(self._scratch.name)
        if self.config.tls.mode == "csr" and self._kube is None:
            raise KubeletTLSError("kubeletServer.tls.mode csr needs an apiserver client")
        ssl_context = server_ssl_context(self.config, self.node_name, self.node_ip, scratch)
        if self.config.tls.mode == "csr" and self._kube is not None:
            self.serving_certificate = ServingCertificate(
                self._kube, self.node_name, self.node_ip, ssl_context, scratch
            )
            self._csr_task = asyncio.create_task(self.serving_certificate.run(), name="kubelet serving CSR")
        anonymous = allows_anonymous(self.config.auth, bool(self.config.client_ca_file), self._webhook)
        guard = ConnectionGuard(lambda request: anonymous or authenticated(request), log)
        self._runner = web.AppRunner(
            self._app(guard), access_log=None, handler_cancellation=True, logger=listener_log(log)
        )
        await self._runner.setup()
        site = GuardedSite(self._runner, host, port, ssl_context=ssl_context, guard=guard)
        await site.start()
        self.port = site.port  # the bound port, for listen ":0"
        log.info(
            "kubelet API listening",
            extra={"address": f"https://{host}:{self.port}", "auth": self.config.auth},
        )

    async def stop(self) -> None:
        task, self._csr_task = self._csr_task, None
        await cancel_and_wait(task)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
