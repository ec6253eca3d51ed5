"""The sandbox's scheduler: binds pending pods to nodes, like kube-scheduler's default profile.

What lives here: `Scheduler(store)`, which watches pods and nodes in the `Store`, and on every
change (and every `resync_seconds`) tries to place each pod that waits for scheduling. A placed
pod gets the `PodScheduled=True` condition and `spec.nodeName` (as `BindingREST` does) and a
`Scheduled` event; a pod that fits nowhere gets `PodScheduled=False`/`Unschedulable` with the
FitError message and a `FailedScheduling` event, and is tried again on the next change.
The decisions are in `scheduler_filters.py`. Must not: talk HTTP or touch Docker.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime
from typing import Any

from vk_common.logging import get_logger, pod_ref
from vk_common.objects import format_time
from vk_common.tasks import cancel_and_wait
from vk_sandbox.api.errors import ApiError
from vk_sandbox.controllers.scheduler_filters import (
    MALFORMED,
    SCHEDULER_NAME,
    NodeInfo,
    choose_node,
    counts_against_node,
    waits_for_scheduling,
)
from vk_sandbox.storage.store import Store

log = get_logger("sandbox.scheduler")

Obj = dict[str, Any]


def _now() -> str:
    return format_time(datetime.now(UTC))


def _queue_order(pod: Obj) -> tuple[int, str, str, str]:
    """Higher priority first, then oldest first (the default PrioritySort queue order)."""
    meta = pod.get("metadata") or {}
    priority = (pod.get("spec") or {}).get("priority") or 0
    return -int(priority), meta.get("creationTimestamp") or "", meta.get("namespace", ""), meta["name"]


def _may_change_placement(event_type: str, resource: str, obj: Obj) -> bool:
    """Whether a watch event can let a pod be placed: any node change, a pod that waits, or a
    bound pod that goes away or finishes (its requests are freed)."""
    if event_type not in ("ADDED", "MODIFIED", "DELETED"):
        return False
    if resource == "nodes" or waits_for_scheduling(obj):
        return True
    return event_type == "DELETED" or not counts_against_node(obj)


def _with_condition(pod: Obj, condition: Obj) -> Obj | None:
    """The pod's status with the PodScheduled condition set, or None when nothing changes.

    lastTransitionTime moves only when the status flips (podutil.UpdatePodCondition).
    """
    status = dict(pod.get("status") or {})
    conditions = list(status.get("conditions") or [])
    old = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if old is not None:
        if all(old.get(k) == condition.get(k) for k in ("status", "reason", "message")):
            return None
        if old.get("status") == condition["status"] and old.get("lastTransitionTime"):
            condition = {**condition, "lastTransitionTime": old["lastTransitionTime"]}
        conditions = [condition if c is old else c for c in conditions]
    else:
        conditions.append(condition)
    status["conditions"] = conditions
    return status


class Scheduler:
    """Places pending pods on nodes until stopped."""

    def __init__(self, store: Store, *, resync_seconds: float = 30.0) -> None:
        self._store = store
        self._resync = resync_seconds
        self._kick = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._kick.set()
        self._tasks = [
            asyncio.create_task(self._watch("pods"), name="sandbox-scheduler-pods"),
            asyncio.create_task(self._watch("nodes"), name="sandbox-scheduler-nodes"),
            asyncio.create_task(self._loop(), name="sandbox-scheduler"),
        ]

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks)
        self._tasks = []

    async def _watch(self, resource: str) -> None:
        while True:
            try:
                async for event in self._store.watch(resource):
                    if _may_change_placement(event.type, resource, event.view):
                        self._kick.set()
            except Exception:
                log.exception("watch failed", extra={"resource": resource})
                await asyncio.sleep(1)
            self._kick.set()  # the watch ended (closed by fault injection): look again

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), self._resync)
            self._kick.clear()
            try:
                await self.schedule_pending()
            except Exception:
                log.exception("scheduling pass failed")
                await asyncio.sleep(1)

    async def schedule_pending(self) -> None:
        """One pass over every pod that waits for scheduling."""
        # The stored objects themselves (a pass reads every pod, for each new one): nothing here
        # changes them; a binding or a status is a new dict.
        pods = self._store.stored("pods")
        pending = sorted((p for p in pods if waits_for_scheduling(p)), key=_queue_order)
        if not pending:
            return
        nodes = self._store.stored("nodes")
        infos = {n["metadata"]["name"]: NodeInfo(n) for n in nodes}
        for pod in pods:
            with contextlib.suppress(*MALFORMED):  # a malformed pod requests nothing
                info = infos.get((pod.get("spec") or {}).get("nodeName") or "")
                if info is not None and counts_against_node(pod):
                    info.add(pod)
        for pod in pending:
            try:
                info, message = choose_node(pod, list(infos.values()))
                if info is None:
                    await self._mark_unschedulable(pod, message)
                elif await self._bind(pod, info.name):
                    info.add(pod)
            except ApiError as exc:  # the pod changed or went away meanwhile: next pass
                log.debug("not scheduled this pass", extra={"pod": pod_ref(pod), "err": exc.message})
            except MALFORMED as exc:  # one malformed pod does not stop the others
                ref = pod_ref(pod)
                log.warning("not scheduling: malformed object", extra={"pod": ref, "err": repr(exc)})

    async def _bind(self, pod: Obj, node_name: str) -> bool:
        """The pods/binding write the real scheduler makes: nodeName and PodScheduled=True in one
        event, the generation unchanged (BindingREST.setPodNodeAndMetadata in
        pkg/registry/core/pod/storage/storage.go goes around the pod strategy, which counts spec
        changes)."""
        meta = pod["metadata"]
        condition = {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": _now(),
        }
        status = _with_condition(pod, condition) or pod.get("status") or {}
        bound = {**pod, "spec": {**pod["spec"], "nodeName": node_name}, "status": status}
        try:  # carries its resourceVersion: a pod changed meanwhile is a conflict, tried next pass
            bound = await self._store.update("pods", bound, subresource="binding")
        except ApiError:
            return False
        message = f"Successfully assigned {meta.get('namespace')}/{meta['name']} to {node_name}"
        log.info("successfully assigned the pod", extra={"pod": pod_ref(pod), "node": node_name})
        await self._event(bound, "Normal", "Scheduled", message, "Binding")
        return True

    async def _mark_unschedulable(self, pod: Obj, message: str) -> None:
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": _now(),
            "reason": "Unschedulable",
            "message": message,
        }
        status = _with_condition(pod, condition)
        if status is None:
            return  # already says exactly this
        pod = await self._store.update("pods", {**pod, "status": status}, subresource="status")
        log.info("unschedulable", extra={"pod": pod_ref(pod), "detail": message})
        await self._event(pod, "Warning", "FailedScheduling", message, "Scheduling")

    async def _event(self, pod: Obj, type_: str, reason: str, message: str, action: str) -> None:
        meta = pod["metadata"]
        now = _now()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": meta.get("namespace")},
            "involvedObject": {
                "kind": "Pod",
                "namespace": meta.get("namespace"),
                "name": meta["name"],
                "uid": meta.get("uid"),
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": SCHEDULER_NAME},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "action": action,
            "reportingComponent": SCHEDULER_NAME,
            "reportingInstance": f"{SCHEDULER_NAME}-sandbox",
        }
        try:
            await self._store.create("events", event)
        except ApiError as exc:
            log.debug("event not recorded", extra={"pod": pod_ref(pod), "err": exc.message})
