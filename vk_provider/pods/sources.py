"""PodSources: where the node's desired pods come from, merged into PodConfig in the kubelet's order.

What lives here: `PodSources`, which owns PodConfig (it feeds the pod workers), the static
pod source (when `staticPods.path` is set: its pods run without the apiserver, its bad
files become Warning Events on the Node) and the API pod source with the fan-out of its
watch (every pod event to the status manager and the mirror pods); and the order they
start in: the static pods first, then in the background, once the apiserver answers,
adoption of the containers that already run (removing those of vanished pods), the API
source, and once it has listed, the workers' housekeeping. Must not: start containers,
write status, or talk to the apiserver beyond listing the node's pods.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from vk_common.logging import get_logger
from vk_common.objects import uid as pod_uid
from vk_common.tasks import cancel_and_wait
from vk_provider.config import StaticPodsConfig
from vk_provider.kube.client import KubeClient
from vk_provider.kube.events import EventRecorder
from vk_provider.pods.api_source import ApiPodSource, list_node_pods
from vk_provider.pods.config import PodConfig
from vk_provider.pods.workers import PodWorkers
from vk_provider.static.mirror import MirrorPods
from vk_provider.static.source import BadManifestEvents, StaticPodSource
from vk_provider.status.manager import StatusManager

log = get_logger("pods.sources")

ADOPT_RETRY_SECONDS = 2.0
STATIC_SOURCE = "file"


class PodSources:
    """`start()` delivers the static pods before it returns; the API side follows in the background."""

    def __init__(
        self,
        client: KubeClient,
        node_name: str,
        static_pods: StaticPodsConfig,
        *,
        workers: PodWorkers,
        status: StatusManager,
        mirrors: MirrorPods,
        recorder: EventRecorder,
        node_ref: Mapping[str, Any],
    ) -> None:
        self._client = client
        self._node_name = node_name
        self._workers = workers
        self._status = status
        self._mirrors = mirrors
        self.pod_config = PodConfig(workers.update)
        self.static_source: StaticPodSource | None = None
        if static_pods.path:
            self.static_source = StaticPodSource(
                static_pods.path,
                node_name,
                static_pods.relist_interval,
                on_pods=self._on_static_pods,
                on_errors=BadManifestEvents(recorder, node_ref),
            )
        self.api_source: ApiPodSource | None = None
        self._api_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.static_source is not None:
            await self.static_source.start()
        else:
            self._mirrors.set_static_pods({})  # no static pods: every mirror of this node is an orphan
        self._api_task = asyncio.create_task(self._run_api_source(), name="api pod source start")

    async def stop(self) -> None:
        task, self._api_task = self._api_task, None
        await cancel_and_wait(task)  # its failures were logged where they happened
        for source in (self.api_source, self.static_source):
            if source is not None:
                try:
                    await source.stop()
                except Exception:
                    log.exception("error stopping a pod source", extra={"source": type(source).__name__})

    async def _on_static_pods(self, pods: dict[str, dict[str, Any]]) -> None:
        self.pod_config.set_pods(STATIC_SOURCE, pods.values())
        self._mirrors.set_static_pods(pods)

    def _observe(self, type_: str, pod: Mapping[str, Any]) -> None:
        """Every API pod event, mirror pods included: the status manager follows the API's view
        of each pod (a deletion it learns from the workers), the mirror pods their own."""
        if type_ != "DELETED":
            self._status.observe_pod(pod)
        self._mirrors.observe(type_, pod)

    async def _api_pods(self) -> list[dict[str, Any]]:
        """The node's pods from the API; retried until the apiserver answers (pods keep running)."""
        while True:
            try:
                return await list_node_pods(self._client, self._node_name)
            except Exception as exc:
                log.warning(
                    "cannot list the node's pods yet; retrying",
                    extra={"node": self._node_name, "err": str(exc)},
                )
                await asyncio.sleep(ADOPT_RETRY_SECONDS)

    async def _run_api_source(self) -> None:
        try:
            await self._start_api_source()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the API pod source could not start", extra={"node": self._node_name})

    async def _start_api_source(self) -> None:
        """Adopt what runs (removing the containers of vanished pods), then follow the API."""
        api_pods = await self._api_pods()
        known = {pod_uid(p) for p in api_pods} | {pod_uid(p) for p in self.pod_config.pods()}
        await self._workers.adopt(known)
        self.api_source = ApiPodSource(
            self._client,
            self._node_name,
            self.pod_config,
            observers=[self._observe],
            on_synced=[self._mirrors.observed_synced],
        )
        await self.api_source.start()
        await self.api_source.synced.wait()
        # Orphan clean-up may only start once every source has listed its pods.
        self._workers.start_housekeeping()
