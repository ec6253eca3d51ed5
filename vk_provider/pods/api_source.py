"""ApiPodSource: the pods the apiserver binds to this node, fed into PodConfig.

What lives here: `ApiPodSource`, a Reflector over `/api/v1/pods` with
`fieldSelector=spec.nodeName=<node>` (resume, 410 relist, backoff and bookmarks are the
Reflector's); mirror pods (annotation `kubernetes.io/config.mirror`) are not fed to
PodConfig, since their static pod comes from the static source, but observers see them.
Also `make_object_getter`, the ConfigMap and Secret lookups env resolution needs.
Must not: start containers or write anything to the apiserver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vk_common.objects import is_mirror, uid
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.kube.reflector import Reflector
from vk_provider.pods.config import PodConfig
from vk_provider.pods.env import ObjectGetter

SOURCE = "api"
_PLURAL = {"configmap": "configmaps", "secret": "secrets"}


Observer = Callable[[str, Mapping[str, Any]], None]


class ApiPodSource:
    """Every `observers` entry sees every pod event `(type, pod)`, mirror pods included (the
    StatusManager and MirrorPods follow the API this way); `on_synced` callbacks run after
    each full list."""

    def __init__(
        self,
        client: KubeClient,
        node_name: str,
        config: PodConfig,
        *,
        observers: Sequence[Observer] = (),
        on_synced: Sequence[Callable[[], None]] = (),
    ) -> None:
        self._config = config
        self._observers = tuple(observers)
        self._on_synced = tuple(on_synced)
        self._reflector = Reflector(
            client,
            "/api/v1/pods",
            self._handle,
            params={"fieldSelector": f"spec.nodeName={node_name}"},
            on_synced=self._synced,
            name=f"pods of {node_name}",
        )

    @property
    def synced(self) -> asyncio.Event:
        return self._reflector.synced

    async def _synced(self) -> None:
        for callback in self._on_synced:
            callback()

    async def _handle(self, type_: str, pod: dict[str, Any]) -> None:
        for observe in self._observers:
            observe(type_, pod)
        if is_mirror(pod):
            return
        if type_ == "DELETED":
            self._config.remove(SOURCE, uid(pod))
        else:
            self._config.upsert(SOURCE, pod)

    async def start(self) -> None:
        await self._reflector.start()

    async def stop(self) -> None:
        await self._reflector.stop()


async def list_node_pods(client: KubeClient, node_name: str) -> list[dict[str, Any]]:
    """One list of the (non-mirror) pods bound to `node_name`, for adoption at start."""
    answer = await client.get("/api/v1/pods", {"fieldSelector": f"spec.nodeName={node_name}"})
    return [pod for pod in answer.get("items") or [] if not is_mirror(pod)]


def make_object_getter(client: KubeClient) -> ObjectGetter:
    """ConfigMap / Secret lookups for env resolution; None when the object does not exist."""

    async def get(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            return await client.get(f"/api/v1/namespaces/{namespace}/{_PLURAL[kind]}/{name}")
        except ApiStatusError as exc:
            if exc.status == 404:
                return None
            raise

    return get
