"""The sandbox's node lifecycle controller: nodes that stop heartbeating go Unknown and get tainted.

What lives here: `NodeLifecycle(store, grace_seconds)`, a periodic monitor like
kube-controller-manager's (`pkg/controller/nodelifecycle/node_lifecycle_controller.go`,
`tryUpdateNodeHealth`): it records locally when it last saw a node's heartbeat change (its
Lease `renewTime` in kube-node-lease, or its Ready condition's `lastHeartbeatTime`); after
`grace_seconds` without a change, the node's Ready, MemoryPressure, DiskPressure and PIDPressure
conditions become Unknown (`NodeStatusUnknown`, "Kubelet stopped posting node status."). Nodes
whose Ready is Unknown carry the `node.kubernetes.io/unreachable` NoSchedule and NoExecute taints,
nodes whose Ready is False the `node.kubernetes.io/not-ready` ones; when Ready is True again
(the kubelet's own next status write) the taints go. Pod eviction is not done.
Must not: write conditions other than the ones above, or touch pods.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Any

from vk_provider.logging import get_logger
from vk_provider.sandbox.errors import ApiError
from vk_provider.sandbox.store import Store

log = get_logger("sandbox.node-lifecycle")

Obj = dict[str, Any]

LEASE_NAMESPACE = "kube-node-lease"
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
MONITORED_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
UNKNOWN_REASON = "NodeStatusUnknown"
UNKNOWN_MESSAGE = "Kubelet stopped posting node status."
NEVER_REASON = "NodeStatusNeverUpdated"
NEVER_MESSAGE = "Kubelet never posted node status."
# --node-monitor-period: how often the controller looks (5 s upstream).
DEFAULT_MONITOR_PERIOD = 5.0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(node: Obj, type_: str) -> Obj | None:
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == type_), None)


def unknown_conditions(node: Obj, now: str) -> list[Obj] | None:
    """The node's conditions after the kubelet went silent, or None when they already say so."""
    conditions = [dict(c) for c in (node.get("status") or {}).get("conditions") or []]
    changed = False
    for type_ in MONITORED_CONDITIONS:
        cond = next((c for c in conditions if c.get("type") == type_), None)
        if cond is None:
            conditions.append(
                {
                    "type": type_,
                    "status": "Unknown",
                    "reason": NEVER_REASON,
                    "message": NEVER_MESSAGE,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            )
            changed = True
        elif cond.get("status") != "Unknown":
            cond.update(
                status="Unknown", reason=UNKNOWN_REASON, message=UNKNOWN_MESSAGE, lastTransitionTime=now
            )
            changed = True
    return conditions if changed else None


def wanted_taints(node: Obj, now: str) -> list[Obj] | None:
    """The node's taints for its Ready status, or None when they are already right."""
    ready = _condition(node, "Ready")
    status = (ready or {}).get("status")
    key = UNREACHABLE if status == "Unknown" else NOT_READY if status == "False" else None
    taints = list((node.get("spec") or {}).get("taints") or [])
    kept = [t for t in taints if t.get("key") not in (UNREACHABLE, NOT_READY) or t.get("key") == key]
    if key is not None:
        for effect in ("NoSchedule", "NoExecute"):
            if not any(t.get("key") == key and t.get("effect") == effect for t in kept):
                kept.append({"key": key, "effect": effect, "timeAdded": now})
    return None if kept == taints else kept


class NodeLifecycle:
    """Watches node heartbeats until stopped."""

    def __init__(self, store: Store, grace_seconds: float = 50.0, *, monitor_period: float | None = None):
        self._store = store
        self._grace = grace_seconds
        self._period = monitor_period or min(DEFAULT_MONITOR_PERIOD, max(0.1, grace_seconds / 4))
        self._seen: dict[str, tuple[tuple[str, str], float]] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="sandbox-node-lifecycle")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        while True:
            try:
                await self.monitor()
            except Exception:
                log.exception("node health pass failed")
            await asyncio.sleep(self._period)

    async def monitor(self) -> None:
        """One pass: update every node's health from its latest heartbeat."""
        loop = asyncio.get_running_loop()
        nodes, _ = await self._store.list("nodes")
        leases, _ = await self._store.list("leases.coordination.k8s.io", LEASE_NAMESPACE)
        renewed = {
            lease["metadata"]["name"]: (lease.get("spec") or {}).get("renewTime") or "" for lease in leases
        }
        names = set()
        for node in nodes:
            name = node["metadata"]["name"]
            names.add(name)
            ready = _condition(node, "Ready") or {}
            heartbeat = (renewed.get(name, ""), ready.get("lastHeartbeatTime") or "")
            seen = self._seen.get(name)
            if seen is None or seen[0] != heartbeat:
                self._seen[name] = (heartbeat, loop.time())
            elif loop.time() - seen[1] > self._grace:
                node = await self._mark_unknown(node)
            await self._sync_taints(node)
        for gone in set(self._seen) - names:
            del self._seen[gone]

    async def _mark_unknown(self, node: Obj) -> Obj:
        conditions = unknown_conditions(node, _now())
        if conditions is None:
            return node
        name = node["metadata"]["name"]
        try:
            updated = await self._store.update(
                "nodes",
                {**node, "status": {**(node.get("status") or {}), "conditions": conditions}},
                subresource="status",
            )
        except ApiError as exc:
            log.debug("node %s: %s", name, exc.message, extra={"node": name})
            return node
        log.info("node %s stopped posting status: Ready=Unknown", name, extra={"node": name})
        return updated

    async def _sync_taints(self, node: Obj) -> None:
        taints = wanted_taints(node, _now())
        if taints is None:
            return
        name = node["metadata"]["name"]
        spec = {**(node.get("spec") or {}), "taints": taints}
        if not taints:
            del spec["taints"]
        try:
            await self._store.update("nodes", {**node, "spec": spec})
        except ApiError as exc:  # changed meanwhile: the next pass sees the new object
            log.debug("node %s taints: %s", name, exc.message, extra={"node": name})
            return
        log.info(
            "node %s taints now %s", name, [f"{t['key']}:{t['effect']}" for t in taints], extra={"node": name}
        )
