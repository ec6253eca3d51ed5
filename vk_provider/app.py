"""The provider process: builds the parts, starts them in order, runs until a signal, stops them.

What lives here: `Provider` (the wired parts with `start()` / `stop()`, usable in-process by
tests), `run_provider(config)`, the entry point that runs a Provider until SIGTERM or
SIGINT, and `clean_node(config)`, which removes what the node's pods left in the engine.
Start order: the node's client certificate with `kubernetes.credentials: node`
(`kube.node_credentials`, renewed in the background), the runtime (`runtime.build`), the
event recorder, the kubelet API server (its bound port is what the Node advertises), node
registration, the status manager, the services and RuntimeClasses reflectors (`kube.services`,
`kube.runtime_classes`), the pod workers, mirror pods, the pod sources (`pods.sources`: the
static pods, then adoption and the API source once the apiserver answers), and last the health
endpoints
(`kubeletServer.healthzListen`: /healthz, and /readyz from `kubeletapi.readiness`). Stop is
the reverse and never stops the pods' containers. Must not: contain pod, node or status logic
of its own, or know which container engine runs the pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import signal

from kubernetes_asyncio.config.config_exception import ConfigException as KubeConfigException

from vk_common.host_address import detect_node_ip
from vk_common.logging import get_logger
from vk_common.tasks import cancel_and_wait
from vk_provider.config import Config
from vk_provider.kube.client import KubeClient, make_kube_client
from vk_provider.kube.events import EventRecorder
from vk_provider.kube.node_credentials import NodeCredentials, NodeCredentialsError
from vk_provider.kube.permissions import PermissionReporter
from vk_provider.kube.runtime_classes import RuntimeClassLister
from vk_provider.kube.services import ServiceLister
from vk_provider.kubeletapi import KubeletServer
from vk_provider.kubeletapi.healthz import HealthzServer
from vk_provider.kubeletapi.podstate import KnownPods
from vk_provider.kubeletapi.readiness import Readiness
from vk_provider.kubeletapi.tls import KubeletTLSError
from vk_provider.kuberuntime.dns import NodeDNS
from vk_provider.metrics import ProviderMetrics
from vk_provider.node.agent import NodeAgent
from vk_provider.node.build import node_ip_from
from vk_provider.pods.api_source import make_object_getter
from vk_provider.pods.pod_certificates import make_pod_certificate_api
from vk_provider.pods.sources import PodSources
from vk_provider.pods.volume_writer import make_token_requester, make_trust_bundle_lister
from vk_provider.pods.workers import PodWorkers
from vk_provider.runtime.build import build_runtime
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import RuntimeFailure, RuntimeUnavailable
from vk_provider.static.mirror import MirrorPods
from vk_provider.status.manager import StatusManager

log = get_logger("app")


def with_kubelet_port(config: Config, port: int) -> Config:
    """The configuration with `kubeletServer.listen` naming the port actually bound (for `:0`)."""
    host, _, _ = config.kubelet_server.listen.rpartition(":")
    server = dataclasses.replace(config.kubelet_server, listen=f"{host}:{port}")
    return dataclasses.replace(config, kubelet_server=server)


class Provider:
    """The wired parts of one virtual node."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.node_name = config.node.name
        self.client: KubeClient | None = None
        self.runtime: Runtime | None = None
        self.recorder: EventRecorder | None = None
        self.kubelet: KubeletServer | None = None
        self.node: NodeAgent | None = None
        self.status: StatusManager | None = None
        self.services: ServiceLister | None = None
        self.runtime_classes: RuntimeClassLister | None = None
        self.workers: PodWorkers | None = None
        self.mirrors: MirrorPods | None = None
        self.sources: PodSources | None = None
        self.healthz: HealthzServer | None = None
        # kubernetes.credentials node: the node's client certificate and its renewal.
        self.credentials: NodeCredentials | None = None
        self._renewal: asyncio.Task[None] | None = None
        # The node's own series (kube client, runtime, workers, status), served on /metrics.
        self.metrics = ProviderMetrics()

    async def start(self) -> None:
        cfg = self.config
        if cfg.kubernetes.credentials == "node":
            self.credentials = NodeCredentials(cfg, metrics=self.metrics)
            client = await self.credentials.start()
            self._renewal = asyncio.create_task(self.credentials.run())
        else:
            client = await make_kube_client(cfg.kubernetes, metrics=self.metrics)
        self.client = client
        self.runtime = runtime = build_runtime(cfg, self.metrics)
        await runtime.start()
        # The kubelet's EventClient: a token bucket of its own (eventRecordQPS and eventBurst,
        # whose defaults are kubeAPIQPS's and kubeAPIBurst's), so Events never hold up a pod's.
        self.recorder = EventRecorder(
            client.with_own_limit(cfg.kubernetes.qps, cfg.kubernetes.burst), self.node_name
        )
        await self.recorder.start()
        client.on_forbidden = PermissionReporter(self.recorder, self.node_name)
        node_ip = node_ip_from(cfg.node.internal_ip, os.environ) or detect_node_ip()
        self.kubelet = KubeletServer(
            cfg.kubelet_server,
            self.node_name,
            runtime,
            node_ip,
            kube=client,
            metrics=self.metrics if cfg.metrics.enabled else None,
        )
        await self.kubelet.start()
        # The kubelet's HeartbeatClient: the node's status and Lease are never rate-limited.
        heartbeats = client.with_own_limit(0, 1)
        self.node = node = NodeAgent(
            with_kubelet_port(cfg, self.kubelet.port), heartbeats, runtime, self.recorder
        )
        await node.start()
        # Built even without a static pod directory, so mirrors left by an earlier run are deleted.
        self.mirrors = MirrorPods(client, self.node_name, self.recorder)
        self.status = StatusManager(
            client,
            sync_period=cfg.status.sync_period,
            mirror_uid=self.mirrors.mirror_uid,
            metrics=self.metrics,
        )
        await self.status.start()
        self.services = services = ServiceLister(client)
        await services.start()
        self.runtime_classes = runtime_classes = RuntimeClassLister(client)
        await runtime_classes.start()
        self.workers = PodWorkers(
            runtime,
            self.status,
            self.recorder,
            getter=make_object_getter(client),
            host_ip=lambda: node.node_ip,
            node_allocatable=node.allocatable,
            max_concurrent_syncs=cfg.pods.max_concurrent_syncs,
            resync_interval=cfg.pods.resync_interval,
            request_token=make_token_requester(client),
            trust_bundles=make_trust_bundle_lister(client),
            pod_certificate_api=make_pod_certificate_api(client),
            services=services,
            runtime_classes=runtime_classes.handler,
            node_object=node.node_object,
            dns=NodeDNS(cfg.pods.cluster_dns, cfg.pods.cluster_domain, cfg.pods.resolv_conf),
            docker=cfg.docker,
            metrics=self.metrics,
        )
        await self.workers.start()
        await self.mirrors.start()
        self.sources = PodSources(
            client,
            self.node_name,
            cfg.static_pods,
            workers=self.workers,
            status=self.status,
            mirrors=self.mirrors,
            recorder=self.recorder,
            node_ref=node.node_ref(),
        )
        self.kubelet.pods = KnownPods(self.sources.pod_config, self.status)
        await self.sources.start()
        if cfg.kubelet_server.healthz_listen:  # last: healthy once everything runs
            readiness = Readiness(
                runtime,
                self.metrics,
                node_registered=lambda: bool(node.node_object()),
                ask_apiserver=lambda: client.get("/version"),
            )
            self.healthz = HealthzServer(cfg.kubelet_server.healthz_listen, readiness)
            await self.healthz.start()
        log.info("provider started", extra={"node": self.node_name})

    async def stop(self) -> None:
        """Stop every part in reverse order; the pods' containers keep running."""
        parts = (
            self.healthz,
            self.sources,
            self.mirrors,
            self.workers,
            self.status,
            self.services,
            self.runtime_classes,
            self.kubelet,
            self.node,
            self.recorder,
        )
        for part in parts:
            if part is not None:
                try:
                    await part.stop()
                except Exception:
                    log.exception("error stopping a part", extra={"part": type(part).__name__})
        if self.runtime is not None:
            with contextlib.suppress(Exception):
                await self.runtime.close()
        if self._renewal is not None:
            await cancel_and_wait(self._renewal)
        if self.credentials is not None:
            with contextlib.suppress(Exception):
                await self.credentials.close()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        log.info("provider stopped", extra={"node": self.node_name})


def freeze_start_up_objects() -> None:
    """What start-up made and keeps (modules, clients, the configuration, the node) lives as long
    as the process: collected once, then moved out of the garbage collector's reach
    (`gc.freeze`), so that its full passes no longer walk it. A 500-pod burst made two full
    passes of 71 ms each, none with it frozen (docs/performance.md, 2026-12-07, late night)."""
    gc.collect()
    gc.freeze()


async def run_provider(config: Config) -> int:
    """Run the provider until SIGTERM or SIGINT; 0 on a clean stop, 1 when start-up failed."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stopping.set)
    provider = Provider(config)
    code = 0
    starting = asyncio.create_task(provider.start())
    waiter = asyncio.create_task(stopping.wait())
    try:
        done, _ = await asyncio.wait({starting, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if starting in done:
            starting.result()
            freeze_start_up_objects()
            await waiter
        else:
            for error in await cancel_and_wait(starting):
                raise error
    except RuntimeUnavailable as exc:  # the engine's address and why, not a traceback
        log.error(
            "provider failed to start",
            extra={"node": config.node.name, "reason": exc.reason, "err": exc.message},
        )
        code = 1
    except (NodeCredentialsError, KubeletTLSError, KubeConfigException) as exc:
        # The CSR and what to do; or a file `config_files` passed that changed since, or that
        # only its use shows bad (a kubeconfig's exec plugin): one line, not a traceback.
        log.error("provider failed to start", extra={"node": config.node.name, "err": str(exc)})
        code = 1
    except Exception:
        log.exception("provider failed to start", extra={"node": config.node.name})
        code = 1
    finally:
        # A start-up that failed leaves the signal waiter pending: cancel it, or it is reported
        # "destroyed but pending" when collected.
        await cancel_and_wait(waiter)
        await provider.stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    return code


async def clean_node(config: Config) -> int:
    """Remove every pod the node's provider left in the engine (containers, volumes, files), then
    what the node kept there besides (its pod network).

    For `vk-provider clean` and the sandbox's `--clean`, after the provider has stopped; the
    apiserver is not touched. 0 when all were removed, 1 when the engine could not be reached or
    a pod could not be removed (each is logged).
    """
    runtime = build_runtime(config)
    node = config.node.name
    try:
        await runtime.start()
        pods = await runtime.list_pods()
        # A pod whose removal was cut short (the provider stopped in its cleanup) may have no
        # container left, only its volumes or files.
        uids = pods.keys() | await runtime.list_pod_storage()
        failed = 0
        for uid in sorted(uids):
            try:
                await runtime.remove_pod(uid)
            except RuntimeFailure as exc:
                failed += 1
                state = pods.get(uid)
                ref = f"{state.namespace}/{state.name}" if state is not None else f"uid {uid}"
                log.error("could not remove a pod", extra={"node": node, "pod": ref, "err": str(exc)})
        if not failed:
            for removed in await runtime.remove_node_resources():
                log.info("removed a node resource from the engine", extra={"node": node, "resource": removed})
    except RuntimeFailure as exc:
        log.error("could not clean the node", extra={"node": node, "err": str(exc)})
        return 1
    finally:
        await runtime.close()
    log.info(
        "removed the pods of the node from the engine", extra={"node": node, "count": len(uids) - failed}
    )
    return 1 if failed else 0
