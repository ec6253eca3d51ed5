"""ApiPodSource: the node's pods reach PodConfig, mirror pods only reach the observers."""

from __future__ import annotations

from typing import cast

from tests.support.pods_api import ListOnlyClient
from tests.support.polling import eventually
from vk_provider.kube.client import KubeClient
from vk_provider.pods.api_source import ApiPodSource
from vk_provider.pods.config import PodConfig, PodUpdate, UpdateKind


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
