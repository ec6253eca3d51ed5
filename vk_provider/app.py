"""The provider process: builds the parts, starts them in order, runs until a signal, stops them.

What lives here: `Provider` (the wired parts with `start()` / `stop()`, usable in-process by
tests) and `run_provider(config)`, the entry point that runs a Provider until SIGTERM or
SIGINT. Start order: the runtime, the event recorder, the kubelet API server (its bound
port is what the Node advertises), node registration, the status manager, the pod workers,
mirror pods, the static pod source (when `staticPods.path` is set; its pods run without the
apiserver), then, once the apiserver answers, adoption of the containers that already exist
and the API pod source. Stop is the reverse and never stops the pods'
containers. Must not: contain pod, node or status logic of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
from collections.abc import Mapping
from typing import Any

from vk_provider.config import Config
from vk_provider.kube.client import KubeClient, make_kube_client
from vk_provider.kube.events import EventRecorder
from vk_provider.kube.objects import uid as pod_uid
from vk_provider.kube.permissions import PermissionReporter
from vk_provider.kubeletapi import KubeletServer
from vk_provider.logging import get_logger
from vk_provider.node.agent import NodeAgent, detect_node_ip
from vk_provider.node.build import node_ip_from
from vk_provider.pods.api_source import ApiPodSource, Observer, list_node_pods, make_object_getter
from vk_provider.pods.config import PodConfig
from vk_provider.pods.volume_writer import make_token_requester
from vk_provider.pods.workers import PodWorkers
from vk_provider.runtime.docker.runtime import DockerRuntime
from vk_provider.runtime.docker.spec import spec_hash
from vk_provider.static.mirror import MirrorPods
from vk_provider.static.source import BadManifest, StaticPodSource
from vk_provider.status.manager import StatusManager

log = get_logger("app")

ADOPT_RETRY_SECONDS = 2.0
STATIC_SOURCE = "file"
BAD_MANIFEST_REASON = "FailedStaticPodManifest"


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
        self.runtime: DockerRuntime | None = None
        self.recorder: EventRecorder | None = None
        self.kubelet: KubeletServer | None = None
        self.node: NodeAgent | None = None
        self.status: StatusManager | None = None
        self.workers: PodWorkers | None = None
        self.pod_config: PodConfig | None = None
        self.mirrors: MirrorPods | None = None
        self.static_source: StaticPodSource | None = None
        self.source: ApiPodSource | None = None
        self._api_task: asyncio.Task[None] | None = None
        self._reported_bad: set[tuple[str, str]] = set()

    def _allocatable(self) -> Mapping[str, str]:
        if self.node is None:
            return {}
        allocatable: Mapping[str, str] = (self.node.node_object().get("status") or {}).get(
            "allocatable"
        ) or {}
        return allocatable

    def _host_ip(self) -> str:
        return self.node.node_ip if self.node is not None else ""

    async def start(self) -> None:
        cfg = self.config
        client = await make_kube_client(cfg.kubernetes)
        self.client = client
        self.runtime = DockerRuntime(cfg.docker, self.node_name)
        await self.runtime.start()
        self.recorder = EventRecorder(client, self.node_name)
        await self.recorder.start()
        client.on_forbidden = PermissionReporter(self.recorder, self.node_name)
        node_ip = node_ip_from(cfg.node.internal_ip, os.environ) or detect_node_ip()
        self.kubelet = KubeletServer(
            cfg.kubelet_server, self.node_name, self.runtime, node_ip, engine=self.runtime.engine, kube=client
        )
        await self.kubelet.start()
        self.node = NodeAgent(with_kubelet_port(cfg, self.kubelet.port), client, self.runtime, self.recorder)
        await self.node.start()
        # Built even without a static pod directory, so mirrors left by an earlier run are deleted.
        self.mirrors = MirrorPods(client, self.node_name, self.recorder)
        self.status = StatusManager(
            client, sync_period=cfg.status.sync_period, mirror_uid=self.mirrors.mirror_uid
        )
        await self.status.start()
        self.workers = PodWorkers(
            self.runtime,
            self.status,
            self.recorder,
            getter=make_object_getter(client),
            host_ip=self._host_ip,
            node_allocatable=self._allocatable,
            max_concurrent_syncs=cfg.pods.max_concurrent_syncs,
            resync_interval=cfg.pods.resync_interval,
            spec_hash=spec_hash,
            request_token=make_token_requester(client),
        )
        await self.workers.start()
        self.pod_config = PodConfig(self.workers.update)
        await self.mirrors.start()
        if cfg.static_pods.path:
            self.static_source = StaticPodSource(
                cfg.static_pods.path,
                self.node_name,
                cfg.static_pods.relist_interval,
                on_pods=self._on_static_pods,
                on_errors=self._on_bad_manifests,
            )
            await self.static_source.start()
        else:
            self.mirrors.set_static_pods({})  # no static pods: every mirror of this node is an orphan
        self._api_task = asyncio.create_task(self._run_api_source(client), name="api pod source start")
        log.info("provider started", extra={"node": self.node_name})

    async def _on_static_pods(self, pods: dict[str, dict[str, Any]]) -> None:
        assert self.pod_config is not None and self.mirrors is not None
        self.pod_config.set_pods(STATIC_SOURCE, pods.values())
        self.mirrors.set_static_pods(pods)

    async def _on_bad_manifests(self, bad: list[BadManifest]) -> None:
        """A Warning Event on the Node for each newly bad file (the source logs it).

        The other files keep their pods.
        """
        assert self.recorder is not None and self.node is not None
        current = {(b.path, b.reason) for b in bad}
        for path, reason in sorted(current - self._reported_bad):
            self.recorder.event(self.node.node_ref(), "Warning", BAD_MANIFEST_REASON, f"{path}: {reason}")
        self._reported_bad = current

    async def _api_pods(self, client: KubeClient) -> list[dict[str, Any]]:
        """The node's pods from the API; retried until the apiserver answers (pods keep running)."""
        while True:
            try:
                return await list_node_pods(client, self.node_name)
            except Exception as exc:
                log.warning(
                    "cannot list the node's pods yet (%s); retrying", exc, extra={"node": self.node_name}
                )
                await asyncio.sleep(ADOPT_RETRY_SECONDS)

    async def _run_api_source(self, client: KubeClient) -> None:
        try:
            await self._start_api_source(client)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the API pod source could not start", extra={"node": self.node_name})

    async def _start_api_source(self, client: KubeClient) -> None:
        """Adopt what runs (removing the containers of vanished pods), then follow the API."""
        assert self.workers is not None and self.pod_config is not None and self.status is not None
        api_pods = await self._api_pods(client)
        known = {pod_uid(p) for p in api_pods} | {pod_uid(p) for p in self.pod_config.pods()}
        await self.workers.adopt(known)
        status = self.status
        observers: list[Observer] = [
            lambda type_, pod: None if type_ == "DELETED" else status.observe_pod(pod)
        ]
        synced = []
        if self.mirrors is not None:
            observers.append(self.mirrors.observe)
            synced.append(self.mirrors.observed_synced)
        self.source = ApiPodSource(
            client, self.node_name, self.pod_config, observers=observers, on_synced=synced
        )
        await self.source.start()
        await self.source.synced.wait()
        # Orphan clean-up may only start once every source has listed its pods.
        self.workers.start_housekeeping()

    async def stop(self) -> None:
        """Stop every part in reverse order; the pods' containers keep running."""
        if self._api_task is not None:
            self._api_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._api_task
        parts = (
            self.source,
            self.static_source,
            self.mirrors,
            self.workers,
            self.status,
            self.kubelet,
            self.node,
            self.recorder,
        )
        for part in parts:
            if part is not None:
                try:
                    await part.stop()
                except Exception:
                    log.exception("error stopping %s", type(part).__name__)
        if self.runtime is not None:
            with contextlib.suppress(Exception):
                await self.runtime.close()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        log.info("provider stopped", extra={"node": self.node_name})


async def run_provider(config: Config) -> int:
    """Run the provider until SIGTERM or SIGINT; 0 on a clean stop, 1 when start-up failed."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stopping.set)
    provider = Provider(config)
    code = 0
    try:
        starting = asyncio.create_task(provider.start())
        waiter = asyncio.create_task(stopping.wait())
        done, _ = await asyncio.wait({starting, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if starting in done:
            starting.result()
            await waiter
        else:
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
    except Exception:
        log.exception("provider failed to start", extra={"node": config.node.name})
        code = 1
    finally:
        await provider.stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    return code
