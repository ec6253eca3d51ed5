"""The sandbox API server: an aiohttp application on 127.0.0.1 serving the Kubernetes API over HTTPS.

What lives here: `SandboxServer` (start/stop, the route table, the request entry point that turns
ApiError into Status responses, /version, /healthz|/readyz|/livez, /openapi/*, bootstrap of the
system namespaces and their content, and the controllers: scheduler, node lifecycle, CSR signer,
namespace content), routing metrics.k8s.io to api/metrics.py, the admin bearer token (persisted in
the state directory as `admin.token`, 0600) with the request guard that requires it
(api/request_guard.py, first of the middlewares after the listener's), the serving certificate
(`pki/apiserver.crt`, signed by the sandbox CA for 127.0.0.1, ::1, localhost and the listen
address: kubectl sends a bearer token only over TLS, client-go's `clientcmd` reads no
credentials for an http server),
and `write_kubeconfig`, whose user carries the token. It listens through the kubelet API's
guarded listener (vk_common/guarded_listener.py: a 32 s header timeout, a cap on connections without
a valid token, malformed requests logged once a minute). Must not: implement resource semantics
(storage/, api/handlers/, api/metrics.py), discovery documents (api/discovery.py) or request
checks (api/request_guard.py).
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import ssl
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from aiohttp import web

from vk_common.guarded_listener import ConnectionGuard, GuardedSite, listener_log
from vk_common.logging import get_logger
from vk_sandbox import kubeconfig
from vk_sandbox.api import discovery, errors, openapi
from vk_sandbox.api.debug import SandboxDebug
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.handlers.auth import authenticate as authenticate_service_account
from vk_sandbox.api.handlers.context import ApiContext
from vk_sandbox.api.handlers.dispatch import dispatch
from vk_sandbox.api.metrics import MetricsAPI, SummaryScraper
from vk_sandbox.api.request_guard import RequestGuard
from vk_sandbox.api.requestinfo import RequestInfo, parse_request
from vk_sandbox.api.responses import error_response, json_response, not_found_resource
from vk_sandbox.bootstrap import (
    NamespaceContent,
    ensure_kubernetes_service,
    ensure_system_namespaces,
)
from vk_sandbox.controllers.compactor import Compactor
from vk_sandbox.controllers.csr_signer import CSRSigner
from vk_sandbox.controllers.node_lifecycle import NodeLifecycle
from vk_sandbox.controllers.scheduler import Scheduler
from vk_sandbox.pki.authority import SandboxPKI
from vk_sandbox.pki.tokens import TokenError
from vk_sandbox.storage.store import Store
from vk_sandbox.storage.watch_cache import LOG_BYTES

log = get_logger("sandbox.server")

MAX_BODY = 3 * 1024 * 1024
_TOKEN_KEY_FILE = "token.key"
_ADMIN_TOKEN_FILE = "admin.token"


class _Controller(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


class SandboxServer:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        state_dir: Path | None = None,
        node_monitor_grace_seconds: float = 50.0,
        debug: bool = False,
        controllers: bool = True,
        watch_history: int = 10000,
        watch_history_bytes: int = LOG_BYTES,
        require_token: bool = True,
    ) -> None:
        """watch_history, watch_history_bytes: how many events and bytes the log keeps for watch
        resumes (older RVs get 410).
        require_token: answer 401 to a request without the admin token or a service account
        token of the sandbox (off: everyone who reaches the port is the admin)."""
        self.host = host
        self.port = port
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.store = Store(state_dir=self.state_dir, log_size=watch_history, log_bytes=watch_history_bytes)
        self.pki = SandboxPKI(self.state_dir)
        self.debug = SandboxDebug(self.store) if debug else None
        self._grace = node_monitor_grace_seconds
        self._with_controllers = controllers
        self._controllers: list[_Controller] = []
        self._runner: web.AppRunner | None = None
        self._ctx = ApiContext(
            self.store, self.pki, self._secret(_TOKEN_KEY_FILE, lambda: secrets.token_bytes(32))
        )
        self._metrics = MetricsAPI(self.store, SummaryScraper(self.pki))
        self.admin_token = self._secret(
            _ADMIN_TOKEN_FILE, lambda: secrets.token_urlsafe(32).encode()
        ).decode()
        self._guard = RequestGuard(
            listen_host=host,
            admin_token=self.admin_token,
            service_account_token=self._valid_service_account_token,
            require_token=require_token,
            max_body=MAX_BODY,
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"

    def _serving_context(self) -> ssl.SSLContext:
        """TLS with the apiserver certificate (as kubeadm's `apiserver.crt`), signed by the sandbox CA."""
        ips = {"127.0.0.1", "::1"}
        names = {"localhost"}
        try:
            ips.add(str(ipaddress.ip_address(self.host)))
        except ValueError:
            names.add(self.host)
        cert, key = self.pki.issue_pair(
            "apiserver", "kube-apiserver", server=True, dns_names=sorted(names), ips=sorted(ips)
        )
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(cert), str(key))
        return context

    def _secret(self, name: str, make: Callable[[], bytes]) -> bytes:
        """A secret of the state directory (made once, mode 0600); a fresh one without a state dir."""
        if self.state_dir is None:
            return make()
        path = self.state_dir / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(0o600)  # never readable by others, not even before it is written
            path.write_bytes(make())
        return path.read_bytes()

    async def _valid_service_account_token(self, token: str) -> bool:
        """The TokenReview check (signature, expiry, API audience, bound objects) for API requests."""
        try:
            await authenticate_service_account(self._ctx, token, [])
        except TokenError:
            return False
        return True

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        await ensure_system_namespaces(self.store)
        connections = ConnectionGuard(self._guard.authenticated, log)
        middlewares = [connections.middleware, self._guard.middleware]
        if self.debug is not None:
            middlewares.append(self.debug.middleware)
        app = web.Application(client_max_size=MAX_BODY, middlewares=middlewares)
        if self.debug is not None:
            app.add_routes(self.debug.routes())
        app.add_routes(
            [
                web.get("/version", self._version),
                web.get("/version/", self._version),
                *(web.get(f"/{p}", self._health) for p in ("healthz", "readyz", "livez")),
                *(web.get(f"/{p}/{{check:.*}}", self._health) for p in ("healthz", "readyz", "livez")),
                web.get("/openapi/v2", self._openapi_v2),
                web.get("/openapi/v3", self._openapi_v3_index),
                web.get("/openapi/v3/{path:.+}", self._openapi_v3_document),
                web.route("*", "/api", self._api),
                web.route("*", "/api/{tail:.*}", self._api),
                web.route("*", "/apis", self._api),
                web.route("*", "/apis/{tail:.*}", self._api),
                web.route("*", "/{tail:.*}", self._not_found),
            ]
        )
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, logger=listener_log(log)
        )
        await self._runner.setup()
        site = GuardedSite(
            self._runner, self.host, self.port, ssl_context=self._serving_context(), guard=connections
        )
        await site.start()
        self.port = site.port
        await ensure_kubernetes_service(self.store, self.port)
        self._controllers = [NamespaceContent(self.store, self.pki.ca_pem.decode()), Compactor(self.store)]
        if self._with_controllers:
            self._controllers += [
                Scheduler(self.store),
                NodeLifecycle(self.store, self._grace),
                CSRSigner(self.store, self.pki),
            ]
        for controller in self._controllers:
            await controller.start()
        log.info("sandbox API server listening", extra={"url": self.url})

    async def stop(self) -> None:
        for controller in reversed(self._controllers):
            await controller.stop()
        self._controllers = []
        self.store.close_all_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.store.close()

    async def __aenter__(self) -> SandboxServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def write_kubeconfig(self, path: Path) -> Path:
        credentials = kubeconfig.Credentials(self.pki.ca_cert_path, token=self.admin_token)
        return kubeconfig.write_kubeconfig(Path(path), self.url, credentials)

    # ------------------------------------------------------------ handlers

    async def _api(self, request: web.Request) -> web.StreamResponse:
        ri = parse_request(request.method, request.path, request.query)
        try:
            if self._metrics.serves(ri):
                return await self._metrics.handle(request, ri)
            if ri.is_resource:
                return await dispatch(self._ctx, request, ri)
            return self._discovery(request, ri)
        except ApiError as e:
            return error_response(e)
        except web.HTTPRequestEntityTooLarge:
            raise  # the request guard answers it with a Status
        except Exception as e:
            log.exception("request failed", extra={"verb": request.method, "path": request.path_qs})
            return error_response(errors.internal_error(str(e)))

    def _discovery(self, request: web.Request, ri: RequestInfo) -> web.Response:
        if request.method != "GET":
            raise errors.method_not_allowed(request.method, "discovery")
        parts = [p for p in request.path.strip("/").split("/") if p]
        doc: dict[str, Any] | None = None
        if parts in (["api"], ["apis"]) and discovery.wants_aggregated(request.headers.get("Accept", "")):
            response = json_response(discovery.aggregated_discovery(legacy=parts == ["api"]))
            response.headers["Content-Type"] = discovery.AGGREGATED_CONTENT_TYPE
            return response
        if parts == ["api"]:
            doc = discovery.api_versions(f"{self.host}:{self.port}")
        elif parts == ["apis"]:
            doc = discovery.api_group_list()
        elif parts[0] == "api" and len(parts) == 2:
            doc = discovery.api_resource_list("", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            doc = discovery.api_group(parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            doc = discovery.api_resource_list(parts[1], parts[2])
        if doc is None:
            raise not_found_resource()
        return json_response(doc)

    async def _not_found(self, request: web.Request) -> web.Response:
        return error_response(not_found_resource())

    async def _version(self, request: web.Request) -> web.Response:
        return web.Response(
            text=json.dumps(discovery.KUBERNETES_VERSION, indent=2), content_type="application/json"
        )

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def _openapi_v2(self, request: web.Request) -> web.Response:
        accept = request.headers.get("Accept", "")
        if "protobuf" in accept and "json" not in accept:
            # v2 is only served as JSON; kubectl reads /openapi/v3 first and needs v2 only if v3 fails.
            return web.Response(status=406, text="only application/json is served", content_type="text/plain")
        return json_response(openapi.openapi_v2())

    async def _openapi_v3_index(self, request: web.Request) -> web.Response:
        return json_response(openapi.openapi_v3_index())

    async def _openapi_v3_document(self, request: web.Request) -> web.Response:
        doc = openapi.openapi_v3_document(request.match_info["path"])
        if doc is None:
            return error_response(not_found_resource())
        return json_response(doc)
