"""MirrorPods: the only writer of mirror pods, the API's copies of this node's static pods.

What lives here: `MirrorPods`, which holds the current static pods (`set_static_pods`) and
the mirror pods of this node in the API (fed by the API pod source through `observe` /
`observed_synced`; until that feed has synced, each pass lists the node's pods itself), and
runs one background reconcile loop (on every change and every `resync_period` seconds,
doing nothing until the first `set_static_pods`) that applies `plan_mirrors`: deletes with
grace 0 and a UID precondition, creates with the owner reference to the Node (only once
`GET /api/v1/nodes/<node>` succeeds and the Node is not being deleted). It retries with
backoff while the apiserver is unreachable and never blocks its caller.
`mirror_uid(static_pod)` tells the StatusManager where a static pod's status goes.
Must not: start, stop or look at containers, or write pod status (the StatusManager does).

Upstream: pkg/kubelet/pod/mirror_client.go (DeleteMirrorPod: grace 0 + UID precondition;
NotFound and Conflict are not errors), pkg/kubelet/kubelet.go (tryReconcileMirrorPods,
fastStaticPodsRegistration) and kubelet_pods.go (deleteOrphanedMirrorPods).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from vk_common.logging import get_logger
from vk_common.objects import full_name, is_deleting, is_mirror, uid
from vk_common.tasks import BackgroundTask
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.kube.events import EventRecorder
from vk_provider.static.mirror_plan import (
    MirrorDecision,
    build_mirror_pod,
    find_mirror,
    mirror_hash,
    plan_mirrors,
    static_hash,
)

log = get_logger("static.mirror")

RESYNC_PERIOD = 10.0
RETRY_MIN = 0.5  # first retry after a failed pass, doubling up to the resync period
TOMBSTONES = 1024  # UIDs deleted by us whose late watch events are ignored

FAILED_CREATE = "FailedCreateMirrorPod"
FAILED_DELETE = "FailedDeleteMirrorPod"

Pod = dict[str, Any]


def _pods_path(name: str) -> str:
    """The pods collection of full name `namespace/name`'s namespace."""
    return f"/api/v1/namespaces/{name.partition('/')[0]}/pods"


def _pod_path(name: str) -> str:
    return f"{_pods_path(name)}/{name.partition('/')[2]}"


def retry_delay(failures: int, resync_period: float) -> float:
    """Wait before the next pass: the resync period after a clean pass, else doubling from RETRY_MIN."""
    if failures <= 0:
        return resync_period
    return float(min(resync_period, RETRY_MIN * 2 ** (failures - 1)))


class MirrorPods:
    """Keeps exactly one mirror pod per static pod in the API (see the module docstring)."""

    def __init__(
        self,
        client: KubeClient | None,
        node_name: str,
        recorder: EventRecorder | None,
        *,
        resync_period: float = RESYNC_PERIOD,
    ) -> None:
        self._client = client
        self.node_name = node_name
        self._recorder = recorder
        self._resync = resync_period
        self._statics: dict[str, Pod] | None = None  # None until the first set_static_pods
        self._fed: dict[str, Pod] = {}  # mirror pods by UID, from observe()
        self._fed_synced = False
        self._listed: dict[str, Pod] = {}  # mirror pods by UID, from our own list (until the feed synced)
        self._tombstones: OrderedDict[str, None] = OrderedDict()
        self._doorbell = asyncio.Event()
        self._task = BackgroundTask("mirror-pods")
        self._wait_reasons: dict[str, str] = {}  # "list" / "node": why that step failed, logged once
        self._waiting_logged: set[str] = set()

    # -- inputs ----------------------------------------------------------------------------

    def set_static_pods(self, pods: Mapping[str, Mapping[str, Any]]) -> None:
        """The complete current set of static pods, by UID (`{}` when there is no static pod
        path). Nothing is mirrored or deleted before the first call: until the static pods are
        known, every mirror pod in the API would look orphaned (the kubelet likewise deletes
        orphaned mirror pods only once all its pod sources are ready)."""
        self._statics = {key: dict(pod) for key, pod in pods.items()}
        self._doorbell.set()

    def observe(self, event_type: str, pod: Mapping[str, Any]) -> None:
        """A watch event (ADDED / MODIFIED / DELETED) for a pod of this node; others' pods are ignored."""
        if not is_mirror(pod) or (pod.get("spec") or {}).get("nodeName") != self.node_name:
            return
        pod_uid = uid(pod)
        if event_type == "DELETED":
            self._fed.pop(pod_uid, None)
            self._tombstones.pop(pod_uid, None)
            self._waiting_logged.discard(pod_uid)
        elif pod_uid in self._tombstones:
            return  # an event from before our own delete
        else:
            self._fed[pod_uid] = dict(pod)
        self._doorbell.set()

    def observed_synced(self) -> None:
        """The feed has delivered its initial list: from now on it is the view of the API."""
        self._fed_synced = True
        self._doorbell.set()

    def mirror_uid(self, pod: Mapping[str, Any]) -> str | None:
        """The UID of the current mirror pod of static pod `pod`, or None while there is none."""
        mirror = find_mirror(pod, self._view().values())
        return uid(mirror) if mirror is not None else None

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the reconcile loop in the background; with no client there is nothing to mirror to."""
        if self._client is not None:
            self._task.start(self._run)

    async def stop(self) -> None:
        await self._task.stop()

    # -- the view of the API ---------------------------------------------------------------

    def _view(self) -> dict[str, Pod]:
        return self._fed if self._fed_synced else self._listed

    def _remember(self, pod: Pod) -> None:
        """Our own write's answer: the API holds `pod` now."""
        for view in (self._fed, self._listed):
            view[uid(pod)] = pod

    def _forget(self, pod_uid: str) -> None:
        """The API no longer holds `pod_uid` (we deleted it, or it was gone already)."""
        self._fed.pop(pod_uid, None)
        self._listed.pop(pod_uid, None)
        self._waiting_logged.discard(pod_uid)
        self._tombstones[pod_uid] = None
        while len(self._tombstones) > TOMBSTONES:
            self._tombstones.popitem(last=False)

    async def _list(self, client: KubeClient) -> None:
        answer = await client.get("/api/v1/pods", {"fieldSelector": f"spec.nodeName={self.node_name}"})
        self._listed = {
            uid(pod): pod
            for pod in answer.get("items") or []
            if is_mirror(pod) and (pod.get("spec") or {}).get("nodeName") == self.node_name
        }

    # -- the loop --------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while True:
            self._doorbell.clear()
            try:
                clean = await self.reconcile()
            except Exception:  # a bug must not end mirroring for good
                log.exception("mirror pod pass failed", extra={"node": self.node_name})
                clean = False
            failures = 0 if clean else failures + 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._doorbell.wait(), retry_delay(failures, self._resync))

    async def reconcile(self) -> bool:
        """One pass; True when nothing is left to retry soon."""
        client, statics = self._client, self._statics
        if client is None or statics is None:
            return True
        if not self._fed_synced:
            try:
                await self._list(client)
            except ApiStatusError as exc:
                self._waiting("list", f"cannot list the node's pods: {exc}")
                return False
            self._resumed("list")
        decisions = plan_mirrors(statics, list(self._view().values()))
        node: Mapping[str, Any] | None = None
        if any(d.create is not None for d in decisions):
            node = await self._usable_node(client)
        clean = True
        for decision in decisions:
            clean = await self._apply(client, decision, node) and clean
        return clean

    async def _usable_node(self, client: KubeClient) -> Mapping[str, Any] | None:
        """The Node, if it exists and is not being deleted (mirror pods need its UID)."""
        try:
            node = await client.get(f"/api/v1/nodes/{self.node_name}")
        except ApiStatusError as exc:
            self._waiting("node", f"cannot get the Node: {exc}")
            return None
        if is_deleting(node):
            self._waiting("node", "the Node is being deleted")
            return None
        self._resumed("node")
        return node

    def _waiting(self, step: str, why: str) -> None:
        if self._wait_reasons.get(step) != why:
            log.info("mirror pods wait; retrying with backoff", extra={"node": self.node_name, "reason": why})
            self._wait_reasons[step] = why

    def _resumed(self, step: str) -> None:
        if why := self._wait_reasons.pop(step, ""):
            log.info("mirror pods resume", extra={"node": self.node_name, "waitedFor": why})

    async def _apply(
        self, client: KubeClient, decision: MirrorDecision, node: Mapping[str, Any] | None
    ) -> bool:
        name = decision.full_name
        if decision.waiting is not None:
            waiting_uid = uid(decision.waiting)
            if waiting_uid not in self._waiting_logged:
                self._waiting_logged.add(waiting_uid)
                log.info(
                    "mirror pod is being deleted; waiting until it is gone",
                    extra={"pod": name, "uid": waiting_uid},
                )
            return True
        all_gone = True
        for mirror, why in decision.delete:
            all_gone = await self._delete(client, mirror, why) and all_gone
        if decision.create is None:
            return all_gone
        if not all_gone or node is None:
            return False
        return await self._create(client, decision.create, node)

    async def _delete(self, client: KubeClient, mirror: Mapping[str, Any], why: str) -> bool:
        """DeleteMirrorPod: grace 0, UID precondition. True when the mirror is gone."""
        name, mirror_uid = full_name(mirror), uid(mirror)
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": mirror_uid},
        }
        try:
            answer = await client.delete(_pod_path(name), options)
        except ApiStatusError as exc:
            if exc.status == 404:
                log.info("mirror pod was already gone", extra={"pod": name, "uid": mirror_uid, "reason": why})
                self._forget(mirror_uid)
                return True
            if exc.status == 409:
                # The name now belongs to another pod: it shows up in the next list or watch event.
                log.info(
                    "mirror pod was replaced meanwhile; not deleted", extra={"pod": name, "uid": mirror_uid}
                )
                self._forget(mirror_uid)
                return False
            self._failed(FAILED_DELETE, name, f"deleting mirror pod {name} (uid {mirror_uid}, {why})", exc)
            return False
        if uid(answer) == mirror_uid and (answer.get("metadata") or {}).get("finalizers"):
            log.info(
                "deleted mirror pod; its finalizers keep it for now",
                extra={"pod": name, "uid": mirror_uid, "reason": why},
            )
            self._remember(answer)
            return False
        log.info("deleted mirror pod", extra={"pod": name, "uid": mirror_uid, "reason": why})
        self._forget(mirror_uid)
        return True

    async def _create(
        self, client: KubeClient, static_pod: Mapping[str, Any], node: Mapping[str, Any]
    ) -> bool:
        """CreateMirrorPod. True when the current mirror exists afterwards."""
        name, want = full_name(static_pod), static_hash(static_pod)
        node_uid = uid(node)
        body = build_mirror_pod(static_pod, self.node_name, node_uid)
        try:
            created = await client.create(_pods_path(name), body)
        except ApiStatusError as exc:
            if exc.status == 409 and exc.reason == "AlreadyExists":
                return await self._adopt_existing(client, name, want)
            self._failed(FAILED_CREATE, name, f"creating mirror pod {name}", exc)
            return False
        self._remember(created)
        log.info("created mirror pod", extra={"pod": name, "uid": uid(created), "hash": want})
        return True

    async def _adopt_existing(self, client: KubeClient, name: str, want: str) -> bool:
        """The name is taken: an existing mirror with our hash counts as created (as the kubelet
        does); another mirror is replaced by the next pass; a pod that is no mirror is reported."""
        try:
            existing = await client.get(_pod_path(name))
        except ApiStatusError as exc:
            log.info(
                "mirror pod name is taken, then unreadable; retrying", extra={"pod": name, "err": str(exc)}
            )
            return False
        if not is_mirror(existing):
            message = f"creating mirror pod {name} failed: a pod that is not a mirror pod has the name"
            log.warning(
                "creating the mirror pod failed: a pod that is not a mirror pod has the name",
                extra={"pod": name},
            )
            self._event(FAILED_CREATE, message)
            return False
        self._remember(existing)
        if mirror_hash(existing) == want and not is_deleting(existing):
            log.info("mirror pod already exists", extra={"pod": name, "uid": uid(existing), "hash": want})
            return True
        log.info(
            "an older mirror pod holds the name; replacing it", extra={"pod": name, "uid": uid(existing)}
        )
        return False

    def _failed(self, reason: str, name: str, what: str, exc: ApiStatusError) -> None:
        log.warning("mirror pod request failed", extra={"pod": name, "request": what, "err": str(exc)})
        if exc.status != 0:  # an unreachable apiserver takes no Events either
            self._event(reason, f"{what} failed: {exc.message or exc.reason}")

    def _event(self, reason: str, message: str) -> None:
        if self._recorder is not None:
            node_ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node_name}}
            self._recorder.event(node_ref, "Warning", reason, message)
