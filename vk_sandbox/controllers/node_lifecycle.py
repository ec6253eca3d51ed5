"""The sandbox's node lifecycle controller: nodes that stop heartbeating go Unknown and get tainted.

What lives here: `NodeLifecycle(store, grace_seconds)`, a periodic monitor like
kube-controller-manager's (`pkg/controller/nodelifecycle/node_lifecycle_controller.go`,
`tryUpdateNodeHealth`): it records locally when it last saw a node's heartbeat change (its
Lease `renewTime` in kube-node-lease, or its Ready condition's `lastHeartbeatTime`); after
`grace_seconds` without a change, the node's Ready, MemoryPressure, DiskPressure and PIDPressure
conditions become Unknown (`NodeStatusUnknown`, "Kubelet stopped posting node status."). Nodes
whose Ready is Unknown carry the `node.kubernetes.io/unreachable` NoSchedule and NoExecute taints,
nodes whose Ready is False the `node.kubernetes.io/not-ready` ones; when Ready is True again
(the kubelet's own next status write) the taints go. When no node is Ready ("master
disruption mode", `handleDisruption`: the sandbox is one zone) the NoExecute taints are
removed and none are added, so nothing is evicted; the NoSchedule ones stay. Like the
taint-eviction controller
(`pkg/controller/tainteviction/taint_eviction.go`), pods on a node with NoExecute taints they
do not tolerate are deleted, at once or after their `tolerationSeconds` (counted from the
taint's `timeAdded`), with a `DisruptionTarget` condition first.
Must not: write node conditions other than the ones above, or change pods in any other way.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from vk_common.logging import ObjectRef, get_logger
from vk_common.objects import format_time, parse_time
from vk_common.tasks import BackgroundTask
from vk_sandbox.api.errors import ApiError
from vk_sandbox.controllers.scheduler_filters import MALFORMED, tolerates
from vk_sandbox.storage.store import Store

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
    return format_time(datetime.now(UTC))


def eviction_due(pod: Obj, taints: list[Obj], now: datetime) -> bool:
    """Whether the NoExecute taints of the pod's node evict it by `now`."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in taints:
        if taint.get("effect") != "NoExecute":
            continue
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return True
        seconds = [t["tolerationSeconds"] for t in matching if t.get("tolerationSeconds") is not None]
        if not seconds or len(seconds) < len(matching):
            continue  # tolerated forever
        added = parse_time(taint.get("timeAdded")) or now
        if (now - added).total_seconds() >= max(0, min(seconds)):
            return True
    return False


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


def wanted_taints(node: Obj, now: str, *, no_execute: bool = True) -> list[Obj] | None:
    """The node's taints for its Ready status, or None when they are already right.
    `no_execute=False` (every node down: full disruption) leaves out the NoExecute ones."""
    ready = _condition(node, "Ready")
    status = (ready or {}).get("status")
    key = UNREACHABLE if status == "Unknown" else NOT_READY if status == "False" else None
    taints = list((node.get("spec") or {}).get("taints") or [])
    ours = (UNREACHABLE, NOT_READY)
    kept = [
        t
        for t in taints
        if t.get("key") not in ours
        or (t.get("key") == key and (no_execute or t.get("effect") != "NoExecute"))
    ]
    if key is not None:
        for effect in ("NoSchedule", "NoExecute") if no_execute else ("NoSchedule",):
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
        self._task = BackgroundTask("sandbox-node-lifecycle")

    async def start(self) -> None:
        self._task.start(self._loop)

    async def stop(self) -> None:
        await self._task.stop()

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
        checked = []
        for node in nodes:
            name = node["metadata"]["name"]
            names.add(name)
            try:
                ready = _condition(node, "Ready") or {}
                heartbeat = (renewed.get(name, ""), str(ready.get("lastHeartbeatTime") or ""))
            except MALFORMED as exc:  # one malformed node does not stop the pass over the others
                log.warning("node skipped: malformed object", extra={"node": name, "err": repr(exc)})
                continue
            seen = self._seen.get(name)
            if seen is None or seen[0] != heartbeat:
                self._seen[name] = (heartbeat, loop.time())
            elif loop.time() - seen[1] > self._grace:
                node = await self._mark_unknown(node)
            checked.append(node)
        # No node Ready: full disruption, no NoExecute taints and so no evictions.
        no_execute = any((_condition(n, "Ready") or {}).get("status") == "True" for n in checked)
        for node in checked:
            name = node["metadata"]["name"]
            try:
                node = await self._sync_taints(node, no_execute)
                await self._evict(node)
            except MALFORMED as exc:
                log.warning("node skipped: malformed object", extra={"node": name, "err": repr(exc)})
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
            log.debug("node status not updated", extra={"node": name, "err": exc.message})
            return node
        log.info("node stopped posting status: Ready=Unknown", extra={"node": name})
        return updated

    async def _sync_taints(self, node: Obj, no_execute: bool) -> Obj:
        taints = wanted_taints(node, _now(), no_execute=no_execute)
        if taints is None:
            return node
        name = node["metadata"]["name"]
        spec = {**(node.get("spec") or {}), "taints": taints}
        if not taints:
            del spec["taints"]
        try:
            updated = await self._store.update("nodes", {**node, "spec": spec})
        except ApiError as exc:  # changed meanwhile: the next pass sees the new object
            log.debug("node taints not updated", extra={"node": name, "err": exc.message})
            return node
        shown = [f"{t['key']}:{t['effect']}" for t in taints]
        log.info("node taints changed", extra={"node": name, "taints": shown})
        return updated

    async def _evict(self, node: Obj) -> None:
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]
        if not taints:
            return
        name = node["metadata"]["name"]
        pods, _ = await self._store.list("pods", field_selector=f"spec.nodeName={name}")
        now = datetime.now(UTC)
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp") or not eviction_due(pod, taints, now):
                continue
            await self._evict_pod(pod, name)

    async def _evict_pod(self, pod: Obj, node_name: str) -> None:
        meta = pod["metadata"]
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": _now(),
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
        }
        status = dict(pod.get("status") or {})
        others = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        status["conditions"] = [*others, condition]
        try:
            await self._store.update("pods", {**pod, "status": status}, subresource="status")
            await self._store.delete("pods", meta["namespace"], meta["name"])
        except ApiError as exc:
            log.debug(
                "eviction failed",
                extra={"pod": ObjectRef(meta["name"], meta["namespace"]), "err": exc.message},
            )
            return
        log.info(
            "evicted pod (NoExecute taint)",
            extra={"pod": ObjectRef(meta["name"], meta["namespace"]), "node": node_name},
        )
