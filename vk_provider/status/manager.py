"""StatusManager: the only writer of pod status, a versioned cache per pod UID synced to the apiserver.

What lives here: `StatusManager` (the kubelet's status manager,
`pkg/kubelet/status/status_manager.go`): entry points that update the cache through the
pure rules of cache.py and ring a 1-slot doorbell, and one background task that syncs
changed versions on the doorbell and runs a full reconciling pass every `sync_period`. A
sync does a fresh GET, merges (writeback.py), PATCHes pods/status with `metadata.uid`, and
sends the final DELETE (grace 0, UID precondition) once a deleted pod is finished.
It records in `metrics`: writes, final deletes, 409s and other failures, the status sync
duration (first unwritten change to its PATCH) and the pod start duration (creation to the
first Running status). Must not: compute statuses (generate.py
does), start or stop containers, or delete mirror pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import copy_json, is_deleting, is_static
from vk_common.objects import uid as uid_of
from vk_common.tasks import BackgroundTask
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.metrics import ProviderMetrics, pod_start_seconds
from vk_provider.status.cache import (
    VersionedStatus,
    status_equal_by_kubelet,
    terminated_status,
    update_status,
    with_container_flag,
)
from vk_provider.status.writeback import (
    can_be_deleted,
    could_have_running_containers,
    delete_options,
    merge_pod_status,
    status_patch,
)

log = get_logger("status")

# How long `stop` waits for the write in flight before cancelling it.
STOP_GRACE_SECONDS = 5.0


def _no_mirror(pod: Mapping[str, Any]) -> str | None:
    return None


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


class StatusManager:
    """Versioned pod status cache plus its sync loop (see the module docstring).

    `mirror_uid(static_pod)` gives the UID of a static pod's mirror pod, or None while there
    is none; a static pod's status is cached under its own UID and written to its mirror.
    """

    def __init__(
        self,
        client: KubeClient | None,
        *,
        sync_period: float,
        mirror_uid: Callable[[Mapping[str, Any]], str | None] = _no_mirror,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        self._client = client
        self._sync_period = sync_period
        self._mirror_uid = mirror_uid
        self._statuses: dict[str, VersionedStatus] = {}
        # Last version written per API pod UID (the mirror's UID for a static pod).
        self._api_versions: dict[str, int] = {}
        # The API's copy of each pod as last seen (watch via observe_pod, or our own GET/PATCH).
        self._observed: dict[str, Mapping[str, Any]] = {}
        self._watch_fed = False
        self._doorbell = asyncio.Event()
        self._stopping = False
        self._task = BackgroundTask("status-manager")
        self.metrics = metrics or ProviderMetrics()
        # Per cache UID, when its first change not yet written was cached (the sync duration).
        self._changed_at: dict[str, float] = {}
        # The cache UIDs with a version not written yet (in the order they changed), and those of
        # static pods (whose mirror, and so whose written version, may change under them): what
        # a pass that is not full looks at, so that it costs what changed, not every pod's check.
        self._unwritten: dict[str, None] = {}
        self._static: set[str] = set()
        # Per API pod UID, the (resourceVersion, cache version) the full pass last found equal:
        # the same pair again needs no new comparison (at 500 idle pods the comparisons were a
        # quarter of the provider's CPU).
        self._found_equal: dict[str, tuple[str, int]] = {}

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the sync task; with no client (standalone) nothing is ever written."""
        if self._client is not None:
            self._stopping = False  # a manager stopped before may be started again
            self._task.start(self._run)

    async def stop(self) -> None:
        """Stop after the write in flight, within `STOP_GRACE_SECONDS`: a PATCH or final DELETE
        the apiserver is already serving is answered, not abandoned half-way (an abandoned
        DELETE may or may not have happened, and the next start would send it again)."""
        self._stopping = True
        self._doorbell.set()
        await self._task.stop(grace=STOP_GRACE_SECONDS)

    # -- entry points ------------------------------------------------------------------------

    def set_pod_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None:
        """Cache `status` for `pod` (a new version if it differs in what the kubelet owns) and ring."""
        force = is_deleting(pod)
        self._update(pod, status, force=force, finished=False)

    def get_pod_status(self, uid: str) -> dict[str, Any] | None:
        """A copy of the cached status; a mirror pod's UID resolves to its static pod."""
        status = self.cached_status(uid)
        return copy_json(status) if status is not None else None

    def cached_status(self, uid: str) -> Mapping[str, Any] | None:
        """The cached status itself, not to be changed: for the pod sync, which reads it to make
        the next status (generate copies what it keeps) and copies nothing of it twice."""
        entry = self._statuses.get(uid)
        if entry is None:
            mirrored = (self._statuses[s] for s in self._static if s in self._statuses)
            entry = next((e for e in mirrored if self._api_uid(e) == uid), None)
        return entry.status if entry is not None else None

    def terminate_pod(self, pod: Mapping[str, Any]) -> None:
        """The pod worker is done with `pod`: mark it finished so its final delete may follow."""
        uid = uid_of(pod)
        cached = self._statuses.get(uid)
        base = cached.status if cached is not None else (pod.get("status") or {})
        self._update(pod, terminated_status(pod, base), force=True, finished=True)

    def remove_pod(self, uid: str) -> None:
        """Forget a pod that no longer exists in any source."""
        entry = self._statuses.pop(uid, None)
        self._changed_at.pop(uid, None)
        self._unwritten.pop(uid, None)
        self._static.discard(uid)
        if entry is not None:
            # A later status for the same UID starts again at version 1 and must not look written.
            api_uid = self._api_uid(entry) or uid
            self._api_versions.pop(api_uid, None)
            self._found_equal.pop(api_uid, None)

    def set_container_readiness(self, uid: str, container_name: str, ready: bool) -> None:
        self._set_flag(uid, container_name, "ready", ready)

    def set_container_startup(self, uid: str, container_name: str, started: bool) -> None:
        self._set_flag(uid, container_name, "started", started)

    def observe_pod(self, pod: Mapping[str, Any]) -> None:
        """Feed the API's copy of a pod (or mirror pod) from the pod watch, for the reconciling pass.

        Without this feed, the full pass reads each pod with a GET instead.
        """
        self._watch_fed = True
        self._observed[uid_of(pod)] = pod

    def _set_flag(self, uid: str, container_name: str, flag: str, value: bool) -> None:
        entry = self._statuses.get(uid)
        if entry is None:
            return
        status = with_container_flag(entry.pod, entry.status, container_name, flag, value)
        if status is not None:
            self._update(entry.pod, status, force=False, finished=False)

    def _update(self, pod: Mapping[str, Any], status: dict[str, Any], *, force: bool, finished: bool) -> None:
        uid = uid_of(pod)
        now = datetime.now(UTC)
        cached = self._statuses.get(uid)
        entry, why = update_status(cached, pod, status, force=force, finished=finished, now=now)
        if entry is None:
            if why != "unchanged":
                log.warning("status update on pod aborted", extra=pod_fields(pod, reason=why))
            return
        self._statuses[uid] = entry
        self._unwritten[uid] = None
        if is_static(pod):
            self._static.add(uid)
        self._changed_at.setdefault(uid, time.monotonic())
        self._observe_start(pod, cached, entry, now)
        self._doorbell.set()

    def _observe_start(
        self, pod: Mapping[str, Any], cached: VersionedStatus | None, entry: VersionedStatus, now: datetime
    ) -> None:
        """The pod start duration, once per pod: its first Running status, unless the API already
        had it Running (a pod adopted after a restart started long ago)."""
        if entry.status.get("phase") != "Running":
            return
        was_running = cached is not None and cached.status.get("phase") == "Running"
        if was_running or (pod.get("status") or {}).get("phase") == "Running":
            return
        seconds = pod_start_seconds(pod, now)
        if seconds is not None:
            self.metrics.pod_start_duration.observe(seconds)

    # -- sync loop ---------------------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_full = loop.time() + self._sync_period
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._doorbell.wait(), timeout=max(0.0, next_full - loop.time()))
            if self._stopping:
                return
            try:
                if self._doorbell.is_set():
                    self._doorbell.clear()
                    await self.sync_batch(full=False)
                if loop.time() >= next_full and not self._stopping:
                    next_full = loop.time() + self._sync_period
                    await self.sync_batch(full=True)
            except Exception:  # a bug must not end status reporting for good
                log.exception("status sync pass failed")

    def _api_uid(self, entry: VersionedStatus) -> str | None:
        """The UID of the API object the status goes to: the pod's, or its mirror's (None: no mirror)."""
        if is_static(entry.pod):
            return self._mirror_uid(entry.pod)
        return entry.uid

    async def sync_batch(self, *, full: bool) -> None:
        """One pass: sync versions not yet written; with `full`, also reconcile and retry deletes."""
        chosen: list[tuple[str, VersionedStatus, str]] = []
        if full:
            looked_at = list(self._statuses)
        else:
            looked_at = [*self._unwritten, *(self._static - self._unwritten.keys())]
        for uid in looked_at:
            if (entry := self._statuses.get(uid)) is None:
                self._unwritten.pop(uid, None)
                continue
            api_uid = self._api_uid(entry)
            if api_uid is None:
                continue  # a static pod without a mirror: nothing to write to yet
            written = self._api_versions.get(api_uid)
            if written is None or written < entry.version:
                chosen.append((uid, entry, api_uid))
                continue
            self._unwritten.pop(uid, None)
            if full and (await self._needs_reconcile(entry, api_uid) or self._deletable(entry, api_uid)):
                self._api_versions.pop(api_uid, None)
                self._unwritten[uid] = None
                chosen.append((uid, entry, api_uid))
        if full:
            live = {self._api_uid(e) for e in self._statuses.values()}
            for stale in set(self._api_versions) - live:
                del self._api_versions[stale]
            for stale in set(self._observed) - live:
                del self._observed[stale]
            for stale in set(self._found_equal) - live:
                del self._found_equal[stale]
        for uid, entry, api_uid in chosen:
            if self._stopping:
                return  # the pod in flight is done; the rest waits for the next start
            if self._statuses.get(uid) is entry:
                await self._sync_pod(uid, entry, api_uid)

    def _deletable(self, entry: VersionedStatus, api_uid: str) -> bool:
        observed = self._observed.get(api_uid)
        return observed is not None and can_be_deleted(observed, entry.pod_is_finished)

    async def _needs_reconcile(self, entry: VersionedStatus, api_uid: str) -> bool:
        """`needsReconcile`: the API's copy differs from the cache in what the kubelet owns."""
        observed = self._observed.get(api_uid)
        if observed is None or not self._watch_fed:
            observed = await self._get(entry)
            if observed is None:
                return False
        if uid_of(observed) != api_uid:
            return True  # replaced: the sync will notice and drop the entry
        seen = (str((observed.get("metadata") or {}).get("resourceVersion") or ""), entry.version)
        if seen[0] and self._found_equal.get(api_uid) == seen:
            return False
        if status_equal_by_kubelet(observed.get("status") or {}, entry.status):
            self._found_equal[api_uid] = seen
            return False
        self._found_equal.pop(api_uid, None)
        return True

    async def _get(self, entry: VersionedStatus) -> Mapping[str, Any] | None:
        assert self._client is not None
        try:
            pod = await self._client.get(_pod_path(entry.namespace, entry.name))
        except ApiStatusError as exc:
            if exc.status != 404:
                log.info("failed to get pod for status", extra=pod_fields(entry.pod, err=str(exc)))
            return None
        self._observed[uid_of(pod)] = pod
        return pod

    async def _sync_pod(self, uid: str, entry: VersionedStatus, api_uid: str) -> None:
        """`syncPod`: fresh GET, UID check, merge, PATCH, record the version, final DELETE."""
        assert self._client is not None
        api_pod = await self._get(entry)
        if api_pod is None:
            return
        found_uid = uid_of(api_pod)
        if found_uid != api_uid:
            if not is_static(entry.pod):
                log.info(
                    "Pod was deleted and then recreated, skipping status update",
                    extra=pod_fields(entry.pod),
                )
                if self._statuses.get(uid) is entry:
                    del self._statuses[uid]
            return
        api_status = api_pod.get("status") or {}
        running = could_have_running_containers(entry.status, entry.pod_is_finished)
        merged = merge_pod_status(api_status, entry.status, running, datetime.now(UTC))
        body = status_patch(api_uid, api_status, merged)
        path = _pod_path(entry.namespace, entry.name)
        if body is not None:
            try:
                api_pod = await self._client.patch(path + "/status", body, "strategic")
            except ApiStatusError as exc:
                self._count_failure(exc)
                log.info(
                    "failed to update status; trying again at the next pass",
                    extra=pod_fields(entry.pod, err=str(exc), withinSeconds=self._sync_period),
                )
                return
            self.metrics.pod_status_patches.inc()
            self._observed[api_uid] = api_pod
            log.debug("patched status", extra=pod_fields(entry.pod, version=entry.version))
        self._api_versions[api_uid] = entry.version
        if self._statuses.get(uid) is entry:  # not when a newer version came in meanwhile
            self._unwritten.pop(uid, None)
        changed_at = self._changed_at.pop(uid, None)
        if changed_at is not None:
            self.metrics.pod_status_sync_duration.observe(time.monotonic() - changed_at)
        if can_be_deleted(api_pod, entry.pod_is_finished):
            await self._final_delete(uid, entry, api_uid)

    async def _final_delete(self, uid: str, entry: VersionedStatus, api_uid: str) -> None:
        assert self._client is not None
        try:
            await self._client.delete(_pod_path(entry.namespace, entry.name), delete_options(api_uid))
        except ApiStatusError as exc:
            if exc.status != 404:
                self._count_failure(exc)
                log.info(
                    "failed to delete pod; trying again at the next full pass",
                    extra=pod_fields(entry.pod, err=str(exc), withinSeconds=self._sync_period),
                )
                return
        self.metrics.pod_deletions.inc()
        log.info("Pod fully terminated and removed from the API", extra=pod_fields(entry.pod))
        if self._statuses.get(uid) is entry:
            del self._statuses[uid]

    def _count_failure(self, exc: ApiStatusError) -> None:
        if exc.status == 409:
            self.metrics.pod_status_conflicts.inc()
        else:
            self.metrics.pod_status_errors.inc()
