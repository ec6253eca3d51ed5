"""ApiPodSource: the node's pods reach PodConfig, mirror pods only reach the observers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

from tests.support.polling import eventually
from vk_provider.kube.client import KubeClient
from vk_provider.pods.api_source import ApiPodSource
from vk_provider.pods.config import PodConfig, PodUpdate, UpdateKind


def pod(uid: str, **annotations: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "d", "annotations": annotations}, "spec": {}}


class ListOnlyClient:
    """Answers the list with fixed pods; the watch sends one deletion and then stays open."""

    def __init__(self) -> None:
        self.params: list[Mapping[str, Any] | None] = []

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        self.params.append(params)
        items = [pod("a"), pod("m", **{"kubernetes.io/config.mirror": "hash"}), pod("b")]
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}, "items": items}

    async def watch(
        self, path: str, params: Mapping[str, Any] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        yield {
            "type": "DELETED",
            "object": {**pod("b"), "metadata": {**pod("b")["metadata"], "resourceVersion": "6"}},
        }
        await asyncio.Event().wait()


async def test_mirror_pods_skip_pod_config_but_reach_observers() -> None:
    updates: list[PodUpdate] = []
    observed: list[tuple[str, str]] = []
    synced: list[bool] = []
    client = ListOnlyClient()
    source = ApiPodSource(
        cast(KubeClient, client),
        "vk-1",
        PodConfig(updates.append),
        observers=[lambda t, p: observed.append((t, p["metadata"]["uid"]))],
        on_synced=[lambda: synced.append(True)],
    )
    await source.start()
    await eventually(
        lambda: len(updates) >= 3, within=5, interval=0.01, what="three updates from the reflector"
    )
    await source.stop()
    assert client.params[0] == {"fieldSelector": "spec.nodeName=vk-1"}
    assert [(u.kind, u.pod["metadata"]["uid"], u.source) for u in updates] == [
        (UpdateKind.ADD, "a", "api"),
        (UpdateKind.ADD, "b", "api"),
        (UpdateKind.REMOVE, "b", "api"),
    ]
    assert ("ADDED", "m") in observed and ("DELETED", "b") in observed
    assert synced == [True]
    assert source.synced.is_set()
