"""`WitnessNode`: a Node no kubelet runs, kept Ready by the test renewing its Lease.

With a single node, a silent node makes the node lifecycle controller (upstream and the
emulator's) enter full disruption: no NoExecute taint, no eviction. A second Ready node keeps the
cluster in its normal state, so a test of a silent node sees the `unreachable` NoExecute taint a
real cluster would put on it, and the taint-eviction rules with it. The witness is tainted
NoSchedule, so nothing is scheduled onto it. Used as `async with WitnessNode(api, name):`; on
exit it stops renewing and deletes its Node and Lease.
Must not: touch any other node or any pod.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

from vk_common.objects import format_time
from vk_provider.kube.client import KubeClient
from vk_provider.node.lease import LEASE_NAMESPACE, LeaseKeeper

RENEW_EVERY = 2.0  # seconds; far inside any node monitor grace period
TAINT = {"key": "io.vk-provider.test/witness", "effect": "NoSchedule"}


class WitnessNode:
    def __init__(self, api: KubeClient, name: str) -> None:
        self._api = api
        self.name = name
        self._lease = LeaseKeeper(api, name, duration=40)
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> WitnessNode:
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name},
            "spec": {"taints": [TAINT]},
        }
        node = await self._api.create("/api/v1/nodes", body)
        now = format_time(datetime.now(UTC))
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "a witness node renewed by the test",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        await self._api.patch(
            f"/api/v1/nodes/{self.name}/status", {"status": {"conditions": [ready]}}, patch_type="merge"
        )
        await self._lease.renew(node["metadata"]["uid"], datetime.now(UTC))
        self._task = asyncio.create_task(self._renew(node["metadata"]["uid"]))
        return self

    async def _renew(self, node_uid: str) -> None:
        while True:
            await asyncio.sleep(RENEW_EVERY)
            with contextlib.suppress(Exception):  # a missed renewal is retried at the next tick
                await self._lease.renew(node_uid, datetime.now(UTC))

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):
            await self._api.delete(f"/api/v1/nodes/{self.name}")
        with contextlib.suppress(Exception):
            await self._api.delete(
                f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{self.name}"
            )
