"""Reflector and EventRecorder against the sandbox apiserver: selectors, resume, 410 relist, aggregation."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.polling import eventually
from tests.support.sandbox import running_sandbox
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import ApiStatusError, make_kube_client
from vk_provider.kube.events import EventRecorder
from vk_provider.kube.reflector import Reflector

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def configmap(name: str, labelled: bool = True, value: str = "1") -> dict[str, Any]:
    labels = {"app": "r"} if labelled else {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"v": value},
    }


async def test_reflector_follows_a_selector_resumes_and_relists_after_410(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, debug=True, controllers=False) as sandbox:
        client = await make_kube_client(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
        seen: list[tuple[str, str, str]] = []

        async def handler(type_: str, obj: dict[str, Any]) -> None:
            seen.append((type_, obj["metadata"]["name"], obj.get("data", {}).get("v", "")))

        try:
            await client.create(CONFIGMAPS, configmap("a"))
            await client.create(CONFIGMAPS, configmap("other", labelled=False))
            reflector = Reflector(client, CONFIGMAPS, handler, params={"labelSelector": "app=r"})
            await reflector.start()
            await asyncio.wait_for(reflector.synced.wait(), 30)
            assert seen == [("ADDED", "a", "1")]

            await client.create(CONFIGMAPS, configmap("b"))
            await client.replace(
                f"{CONFIGMAPS}/a", {**(await client.get(f"{CONFIGMAPS}/a")), "data": {"v": "2"}}
            )
            await eventually(lambda: len(seen) == 3, within=30.0, interval=0.05)
            assert seen[1:] == [("ADDED", "b", "1"), ("MODIFIED", "a", "2")]

            # The watch drops; a change made meanwhile arrives on the resumed watch, once.
            assert sandbox.debug is not None
            sandbox.debug.close_watches()
            await client.delete(f"{CONFIGMAPS}/b")
            await eventually(lambda: len(seen) == 4, within=30.0, interval=0.05)
            assert seen[3] == ("DELETED", "b", "1")

            # The watch drops again and its resourceVersion falls out of the event log: the
            # resumed watch gets an ERROR 410, and the relist reports what happened meanwhile.
            sandbox.store.watch_cache.log_size = 3  # a tiny history, so it expires quickly
            sandbox.debug.add_latency(1.0, verb="watch")
            sandbox.debug.close_watches()
            await client.create(CONFIGMAPS, configmap("c"))
            await client.delete(f"{CONFIGMAPS}/a")
            for i in range(5):
                await client.replace(
                    f"{CONFIGMAPS}/other", {**configmap("other", labelled=False), "data": {"v": str(i)}}
                )
            await eventually(lambda: len(seen) == 6, within=30.0, interval=0.05)
            assert sorted(seen[4:]) == [("ADDED", "c", "1"), ("DELETED", "a", "2")]
            assert set(reflector.store()) == {"default/c"}
            sandbox.debug.clear_faults()

            await client.create(CONFIGMAPS, configmap("d"))
            await eventually(lambda: len(seen) == 7, within=30.0, interval=0.05)
            assert seen[6] == ("ADDED", "d", "1")
            counts = sandbox.debug.counters()["requests"]
            assert counts["list configmaps"] == 2  # the first list and the one relist
            await reflector.stop()
        finally:
            await client.close()


async def test_event_recorder_aggregates_repeats_on_the_sandbox(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, controllers=False) as sandbox:
        client = await make_kube_client(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
        try:
            cm = await client.create(CONFIGMAPS, configmap("subject"))
            recorder = EventRecorder(client, "vk-node-1")
            await recorder.start()
            for _ in range(3):
                recorder.event(cm, "Warning", "BackOff", "Back-off restarting failed container")
            recorder.event(cm, "Normal", "Pulled", "Container image already present on machine")
            await recorder.stop()
            events = (
                await client.get(
                    "/api/v1/namespaces/default/events", {"fieldSelector": "involvedObject.name=subject"}
                )
            )["items"]
            by_reason = {e["reason"]: e for e in events}
            assert len(events) == 2
            assert by_reason["BackOff"]["count"] == 3
            assert by_reason["Pulled"]["count"] == 1
            assert by_reason["BackOff"]["source"] == {"component": "kubelet", "host": "vk-node-1"}
            assert by_reason["BackOff"]["involvedObject"]["uid"] == cm["metadata"]["uid"]
            assert by_reason["BackOff"]["metadata"]["name"].startswith("subject.")
        finally:
            await client.close()


async def test_event_recorder_survives_an_unreachable_apiserver(tmp_path: Path) -> None:
    async with running_sandbox(tmp_path, controllers=False) as sandbox:
        kubeconfig = str(sandbox.kubeconfig)
    client = await make_kube_client(KubernetesConfig(kubeconfig=kubeconfig))  # the server is gone now
    try:
        recorder = EventRecorder(client, "vk-node-1")
        await recorder.start()
        recorder.event(configmap("x"), "Normal", "Pulled", "never delivered")
        await recorder.stop()  # returns after its short flush window, raising nothing
        with pytest.raises(ApiStatusError) as caught:
            await client.get("/api/v1/namespaces")
        assert caught.value.status == 0
    finally:
        await client.close()
