"""The node's heartbeat Lease in `kube-node-lease`, renewed like the kubelet's lease controller.

What lives here: `build_lease` (pure: holderIdentity, leaseDurationSeconds, renewTime as a
MicroTime, ownerReference to the Node) and `LeaseKeeper.renew(...)`: PUT of the last lease
seen (no GET on the happy path); on 409 a GET and a retry; on 404 a create; on a 5xx the
same write again at once; at most 5 attempts a round, one log line per retry
(component-helpers/apimachinery/lease/controller.go `retryUpdateLease`). Must not: decide
whether to renew (the agent skips renewal while the runtime does not answer).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from vk_common.logging import ObjectRef, get_logger
from vk_common.objects import format_time_micro
from vk_provider.kube.client import ApiStatusError, KubeClient

log = get_logger("node.lease")

LEASE_NAMESPACE = "kube-node-lease"
MAX_UPDATE_RETRIES = 5


def lease_path(node_name: str, collection: bool = False) -> str:
    base = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
    return base if collection else f"{base}/{node_name}"


def build_lease(
    base: Mapping[str, Any] | None, node_name: str, node_uid: str, duration: int, now: datetime
) -> dict[str, Any]:
    """`base` (the last lease seen, resourceVersion included) with our spec and owner; a new one if None."""
    lease: dict[str, Any] = dict(base) if base else {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}
    meta = dict(lease.get("metadata") or {})
    meta.update(name=node_name, namespace=LEASE_NAMESPACE)
    meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid}]
    lease["metadata"] = meta
    spec = dict(lease.get("spec") or {})
    spec.update(holderIdentity=node_name, leaseDurationSeconds=duration, renewTime=format_time_micro(now))
    lease["spec"] = spec
    return lease


class LeaseKeeper:
    def __init__(self, client: KubeClient, node_name: str, duration: int) -> None:
        self._client = client
        self.node_name = node_name
        self.duration = duration
        self.last: dict[str, Any] | None = None

    async def renew(self, node_uid: str, now: datetime) -> None:
        """Write renewTime = now; raises the last ApiStatusError when every attempt failed."""
        error: ApiStatusError | None = None
        for attempt in range(1, MAX_UPDATE_RETRIES + 1):
            try:
                if self.last is None:
                    await self._fetch()
                if self.last is None:
                    body = build_lease(None, self.node_name, node_uid, self.duration, now)
                    self.last = await self._client.create(lease_path(self.node_name, collection=True), body)
                    log.info("created lease", extra={"lease": ObjectRef(self.node_name, LEASE_NAMESPACE)})
                else:
                    body = build_lease(self.last, self.node_name, node_uid, self.duration, now)
                    self.last = await self._client.replace(lease_path(self.node_name), body)
                return
            except ApiStatusError as exc:
                error = exc
                reread = exc.status in (404, 409)  # someone else wrote it, or it was deleted
                if not reread and exc.status < 500:
                    raise
                if reread:
                    self.last = None
                if attempt < MAX_UPDATE_RETRIES:
                    log.info(
                        "lease renewal failed; trying again",
                        extra={
                            "err": str(exc),
                            "next": "reading it again" if reread else "sending it again at once",
                            "attempt": attempt + 1,
                            "maxAttempts": MAX_UPDATE_RETRIES,
                        },
                    )
        assert error is not None
        raise error

    async def _fetch(self) -> None:
        try:
            self.last = await self._client.get(lease_path(self.node_name))
        except ApiStatusError as exc:
            if exc.status != 404:
                raise
            self.last = None
