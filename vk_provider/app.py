"""The provider process: builds the parts, starts them in order, runs until a signal, stops them.

What lives here: `Provider` (the wired parts with `start()` / `stop()`, usable in-process by
tests) and `run_provider(config)`, the entry point that runs a Provider until SIGTERM or
SIGINT. Start order: the runtime, the event recorder, node registration, the status
manager, the pod workers (which first adopt the containers that already exist), then the
API pod source. Stop is the reverse and never stops the pods' containers.
Must not: contain pod, node or status logic of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Mapping
from typing import Any

from vk_provider.config import Config
from vk_provider.kube.client import KubeClient, make_kube_client
from vk_provider.kube.events import EventRecorder
from vk_provider.logging import get_logger
from vk_provider.node.agent import NodeAgent
from vk_provider.pods.api_source import ApiPodSource, list_node_pods, make_object_getter
from vk_provider.pods.config import PodConfig, pod_uid
from vk_provider.pods.workers import PodWorkers
from vk_provider.runtime.docker.runtime import DockerRuntime
from vk_provider.status.manager import StatusManager

log = get_logger("app")

ADOPT_RETRY_SECONDS = 2.0


class Provider:
    """The wired parts of one virtual node."""

    def __init__(self, config: Config, client: KubeClient | None = None) -> None:
        self.config = config
        self.node_name = config.node.name
        self._given_client = client
        self.client: KubeClient | None = client
        self.runtime: DockerRuntime | None = None
        self.recorder: EventRecorder | None = None
        self.node: NodeAgent | None = None
        self.status: StatusManager | None = None
        self.workers: PodWorkers | None = None
        self.pod_config: PodConfig | None = None
        self.source: ApiPodSource | None = None
        self._housekeeping_gate: asyncio.Task[None] | None = None

    def _allocatable(self) -> Mapping[str, str]:
        if self.node is None:
            return {}
        allocatable: Mapping[str, str] = (self.node.node_object().get("status") or {}).get(
            "allocatable"
        ) or {}
        return allocatable

    def _host_ip(self) -> str:
        return self.node.node_ip if self.node is not None else ""

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

    async def start(self) -> None:
        cfg = self.config
        client = self.client or await make_kube_client(cfg.kubernetes)
        self.client = client
        self.runtime = DockerRuntime(cfg.docker, self.node_name)
        await self.runtime.start()
        self.recorder = EventRecorder(client, self.node_name)
        await self.recorder.start()
        self.node = NodeAgent(cfg, client, self.runtime, self.recorder)
        await self.node.start()
        self.status = StatusManager(client, sync_period=cfg.status.sync_period)
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
        )
        api_pods = await self._api_pods(client)
        await self.workers.adopt(pod_uid(p) for p in api_pods)
        await self.workers.start()
        self.pod_config = PodConfig(self.workers.update)
        self.source = ApiPodSource(client, self.node_name, self.pod_config, observe=self.status.observe_pod)
        await self.source.start()
        self._housekeeping_gate = asyncio.create_task(self._start_housekeeping(), name="housekeeping gate")
        log.info("provider started", extra={"node": self.node_name})

    async def _start_housekeeping(self) -> None:
        """Orphan clean-up may only start once the API source has listed every pod."""
        assert self.source is not None and self.workers is not None
        await self.source.synced.wait()
        self.workers.start_housekeeping()

    async def stop(self) -> None:
        """Stop every part in reverse order; the pods' containers keep running."""
        if self._housekeeping_gate is not None:
            self._housekeeping_gate.cancel()
        for part in (self.source, self.workers, self.status, self.node, self.recorder):
            if part is not None:
                try:
                    await part.stop()
                except Exception:
                    log.exception("error stopping %s", type(part).__name__)
        if self.runtime is not None:
            with contextlib.suppress(Exception):
                await self.runtime.close()
        if self.client is not None and self._given_client is None:
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
