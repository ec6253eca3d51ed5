"""The sandbox scheduler against a live Store: binds to matching nodes, explains why not, retries."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.polling import eventually
from vk_sandbox.controllers.scheduler import Scheduler
from vk_sandbox.storage.store import Store

DEADLINE = 20.0


def _node(
    name: str, labels: dict[str, str], *, taints: list[dict[str, str]] | None = None, cpu: str = "4"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
        },
    }


def _pod(name: str, *, selector: dict[str, str] | None = None, cpu: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "vk-test/pause:1"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {"containers": [container], "schedulerName": "default-scheduler"}
    if selector:
        spec["nodeSelector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    store = Store()
    await store.create(
        "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    )
    scheduler = Scheduler(store)
    await scheduler.start()
    yield store
    await scheduler.stop()


async def _bound_to(store: Store, name: str) -> str | None:
    pod = await store.get("pods", "default", name)
    node: str | None = pod["spec"].get("nodeName")
    return node


def _condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), None)


async def _events(store: Store, name: str, reason: str) -> list[dict[str, Any]]:
    events, _ = await store.list(
        "events", "default", field_selector=f"involvedObject.name={name},reason={reason}"
    )
    return events


async def test_binds_only_to_matching_node(store: Store) -> None:
    await store.create("nodes", _node("hdd-node", {"disk": "hdd"}))
    await store.create("nodes", _node("ssd-node", {"disk": "ssd"}))
    await store.create("pods", _pod("web", selector={"disk": "ssd"}))

    async def bound() -> str | None:
        return await _bound_to(store, "web")

    assert await eventually(bound, within=DEADLINE, interval=0.05) == "ssd-node"
    pod = await store.get("pods", "default", "web")
    condition = _condition(pod)
    assert condition is not None and condition["status"] == "True"
    events = await eventually(lambda: _events(store, "web", "Scheduled"), within=DEADLINE, interval=0.05)
    assert events[0]["type"] == "Normal"
    assert events[0]["message"] == "Successfully assigned default/web to ssd-node"
    assert events[0]["source"]["component"] == "default-scheduler"
    assert events[0]["involvedObject"]["uid"] == pod["metadata"]["uid"]


async def test_binding_is_one_write_that_keeps_the_generation(store: Store) -> None:
    """As the real scheduler's pods/binding: nodeName and PodScheduled=True in one MODIFIED event,
    metadata.generation unchanged (the upstream Pod Generation conformance spec expects 1 once
    the pod runs; the emulator's plain update counted the nodeName as a spec change)."""
    pod = _pod("gen")
    pod["metadata"]["generation"] = 1
    created = await store.create("pods", pod)
    stream = store.watch("pods", "default", resource_version=created["metadata"]["resourceVersion"])
    await store.create("nodes", _node("node-1", {}))
    try:
        event = await asyncio.wait_for(anext(stream), DEADLINE)
    finally:
        await stream.aclose()
    assert event.type == "MODIFIED"
    assert event.object["spec"]["nodeName"] == "node-1"
    condition = _condition(event.object)
    assert condition is not None and condition["status"] == "True"
    assert event.object["metadata"]["generation"] == 1


async def test_unschedulable_pod_says_why_and_is_retried(store: Store) -> None:
    await store.create("nodes", _node("hdd-node", {"disk": "hdd"}))
    await store.create(
        "nodes",
        _node(
            "tainted", {"disk": "nvme"}, taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        ),
    )
    await store.create("pods", _pod("fast", selector={"disk": "nvme"}))

    async def unschedulable() -> dict[str, Any] | None:
        condition = _condition(await store.get("pods", "default", "fast"))
        return condition if condition and condition["status"] == "False" else None

    condition = await eventually(unschedulable, within=DEADLINE, interval=0.05)
    expected = (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    )
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == expected
    events = await eventually(
        lambda: _events(store, "fast", "FailedScheduling"), within=DEADLINE, interval=0.05
    )
    assert events[0]["type"] == "Warning"
    assert events[0]["message"] == expected
    assert await _bound_to(store, "fast") is None

    await store.create("nodes", _node("nvme-node", {"disk": "nvme"}))

    async def bound() -> str | None:
        return await _bound_to(store, "fast")

    assert await eventually(bound, within=DEADLINE, interval=0.05) == "nvme-node"
    condition = _condition(await store.get("pods", "default", "fast"))
    assert condition is not None and condition["status"] == "True"


async def test_resources_are_counted_and_freed(store: Store) -> None:
    await store.create("nodes", _node("small", {}, cpu="1"))
    await store.create("pods", _pod("first", cpu="600m"))

    async def first_bound() -> str | None:
        return await _bound_to(store, "first")

    assert await eventually(first_bound, within=DEADLINE, interval=0.05) == "small"
    await store.create("pods", _pod("second", cpu="600m"))

    async def second_unschedulable() -> str | None:
        condition = _condition(await store.get("pods", "default", "second"))
        return condition["message"] if condition and condition["status"] == "False" else None

    message = await eventually(second_unschedulable, within=DEADLINE, interval=0.05)
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert message.endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )

    await store.delete("pods", "default", "first", grace_period_seconds=0)

    async def second_bound() -> str | None:
        return await _bound_to(store, "second")

    assert await eventually(second_bound, within=DEADLINE, interval=0.05) == "small"


async def test_ignores_other_schedulers_and_not_ready_nodes(store: Store) -> None:
    not_ready = _node("down", {})
    not_ready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    await store.create("nodes", not_ready)
    other = _pod("custom")
    other["spec"]["schedulerName"] = "my-scheduler"
    await store.create("pods", other)
    await store.create("pods", _pod("plain"))

    async def plain_message() -> str | None:
        condition = _condition(await store.get("pods", "default", "plain"))
        return condition["message"] if condition else None

    message = await eventually(plain_message, within=DEADLINE, interval=0.05)
    assert "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }" in message
    custom = await store.get("pods", "default", "custom")
    assert _condition(custom) is None and not custom["spec"].get("nodeName")
