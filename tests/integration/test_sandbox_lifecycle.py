"""The sandbox node lifecycle controller: a silent node goes Unknown and tainted, and comes back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.polling import eventually
from vk_sandbox.controllers.node_lifecycle import NodeLifecycle
from vk_sandbox.storage.store import Store

GRACE = 2.0
DEADLINE = 30.0
NODE = "lease-node"


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _conditions(ready: str) -> list[dict[str, Any]]:
    now = _now()
    kinds = [("Ready", ready, "KubeletReady"), ("MemoryPressure", "False", "KubeletHasSufficientMemory")]
    kinds += [
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
    ]
    return [
        {
            "type": t,
            "status": s,
            "reason": r,
            "message": "",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        for t, s, r in kinds
    ]


class Kubelet:
    """Plays the kubelet's heartbeat: renews the Lease and writes Ready conditions."""

    def __init__(self, store: Store, name: str = NODE) -> None:
        self.store = store
        self.name = name
        self.task: asyncio.Task[None] | None = None

    async def register(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": {"kubernetes.io/hostname": self.name}},
            "spec": {
                "taints": [{"key": "virtual-kubelet.io/provider", "value": "docker", "effect": "NoSchedule"}]
            },
        }
        created = await self.store.create("nodes", node)
        created["status"] = {"conditions": _conditions("True")}
        await self.store.update("nodes", created, subresource="status")

    async def renew(self) -> None:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": self.name, "leaseDurationSeconds": 40, "renewTime": _micro_now()},
        }
        await self.store.update("leases.coordination.k8s.io", lease)

    async def post_ready(self) -> None:
        node = await self.store.get("nodes", None, self.name)
        node["status"]["conditions"] = _conditions("True")
        await self.store.update("nodes", node, subresource="status")

    def start_renewing(self) -> None:
        async def loop() -> None:
            while True:
                await self.renew()
                await asyncio.sleep(0.2)

        self.task = asyncio.create_task(loop())

    async def stop_renewing(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    store = Store()
    for ns in ("default", "kube-node-lease"):
        await store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    lifecycle = NodeLifecycle(store, grace_seconds=GRACE)
    await lifecycle.start()
    yield store
    await lifecycle.stop()


def _ready(node: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


def _lifecycle_taints(node: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted(
        (t["key"], t["effect"])
        for t in node["spec"].get("taints", [])
        if t["key"].startswith("node.kubernetes.io/")
    )


@pytest.fixture
async def bystander(store: Store) -> AsyncIterator[Kubelet]:
    """A second node that stays Ready: with every node down the controller evicts nothing."""
    kubelet = Kubelet(store, "bystander")
    await kubelet.register()
    kubelet.start_renewing()
    yield kubelet
    await kubelet.stop_renewing()


async def test_silent_node_goes_unknown_and_recovers(store: Store, bystander: Kubelet) -> None:
    kubelet = Kubelet(store)
    await kubelet.register()
    kubelet.start_renewing()
    loop = asyncio.get_running_loop()

    # While the lease is renewed, the node stays Ready well past the grace period.
    await asyncio.sleep(GRACE * 2)
    node = await store.get("nodes", None, NODE)
    assert _ready(node)["status"] == "True"
    assert _lifecycle_taints(node) == []

    await kubelet.stop_renewing()
    stopped = loop.time()

    async def unknown_and_tainted() -> dict[str, Any] | None:
        node = await store.get("nodes", None, NODE)
        return node if _ready(node)["status"] == "Unknown" and _lifecycle_taints(node) else None

    node = await eventually(unknown_and_tainted, within=DEADLINE, interval=0.1)
    assert loop.time() - stopped >= GRACE  # lower bound only
    for condition in node["status"]["conditions"]:
        assert condition["status"] == "Unknown"
        assert condition["reason"] == "NodeStatusUnknown"
        assert condition["message"] == "Kubelet stopped posting node status."
    assert _lifecycle_taints(node) == [
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
    ]
    assert all(
        "timeAdded" in t for t in node["spec"]["taints"] if t["key"] == "node.kubernetes.io/unreachable"
    )
    assert any(t["key"] == "virtual-kubelet.io/provider" for t in node["spec"]["taints"])

    # The kubelet comes back: renews its lease and posts Ready; the taints go.
    kubelet.start_renewing()
    await kubelet.post_ready()

    async def recovered() -> dict[str, Any] | None:
        node = await store.get("nodes", None, NODE)
        return node if _ready(node)["status"] == "True" and not _lifecycle_taints(node) else None

    node = await eventually(recovered, within=DEADLINE, interval=0.1)
    assert [t["key"] for t in node["spec"]["taints"]] == ["virtual-kubelet.io/provider"]
    await asyncio.sleep(GRACE * 1.5)
    node = await store.get("nodes", None, NODE)
    assert _ready(node)["status"] == "True"
    await kubelet.stop_renewing()


async def test_when_every_node_is_down_there_are_no_noexecute_taints_and_no_evictions(store: Store) -> None:
    """kube-controller-manager's "master disruption mode" (handleDisruption): one zone, no node Ready."""
    kubelet = Kubelet(store)
    await kubelet.register()
    await kubelet.renew()
    await store.create("pods", _bound_pod("short", 1))

    async def unknown() -> dict[str, Any] | None:
        node = await store.get("nodes", None, NODE)
        return node if _ready(node)["status"] == "Unknown" and _lifecycle_taints(node) else None

    node = await eventually(unknown, within=DEADLINE, interval=0.1)
    assert _lifecycle_taints(node) == [("node.kubernetes.io/unreachable", "NoSchedule")]
    await asyncio.sleep(2.5)  # well past the pod's 1 s toleration
    pod = await store.get("pods", "default", "short")
    assert not pod["metadata"].get("deletionTimestamp")
    assert _lifecycle_taints(await store.get("nodes", None, NODE)) == [
        ("node.kubernetes.io/unreachable", "NoSchedule")
    ]


async def test_not_ready_node_gets_not_ready_taints(store: Store, bystander: Kubelet) -> None:
    kubelet = Kubelet(store)
    await kubelet.register()
    kubelet.start_renewing()
    node = await store.get("nodes", None, NODE)
    node["status"]["conditions"] = _conditions("False")
    await store.update("nodes", node, subresource="status")

    async def tainted() -> list[tuple[str, str]]:
        return _lifecycle_taints(await store.get("nodes", None, NODE))

    assert await eventually(tainted, within=DEADLINE, interval=0.1) == [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/not-ready", "NoSchedule"),
    ]
    await kubelet.stop_renewing()


def _bound_pod(name: str, toleration_seconds: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "app", "image": "vk-test/pause:1"}],
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": toleration_seconds,
                }
            ],
        },
        "status": {"phase": "Running"},
    }


async def test_pods_are_evicted_after_their_toleration(store: Store, bystander: Kubelet) -> None:
    kubelet = Kubelet(store)
    await kubelet.register()
    await kubelet.renew()
    await store.create("pods", _bound_pod("short", 1))
    await store.create("pods", _bound_pod("long", 3600))

    async def short_evicted() -> dict[str, Any] | None:
        pod = await store.get("pods", "default", "short")
        return pod if pod["metadata"].get("deletionTimestamp") else None

    pod = await eventually(short_evicted, within=DEADLINE, interval=0.1)
    disruption = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert disruption[0]["reason"] == "DeletionByTaintManager"
    node = await store.get("nodes", None, NODE)
    assert _ready(node)["status"] == "Unknown"
    long = await store.get("pods", "default", "long")
    assert not long["metadata"].get("deletionTimestamp")
