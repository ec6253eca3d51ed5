"""The latest node-wide container list, reused as one pod's state while nothing changed that pod.

What lives here: `ListingCache`. It keeps the rows of the latest node-wide list (the one
`DockerRuntime.list_pods` makes at each housekeeping pass that lists the engine: at least once a
minute, `pods/workers.py`) by pod UID, when that list was started,
and when each pod last changed as far as this process knows: a Docker event for one of its
containers, or a create, start, stop, update or removal of ours. `rows(uid)` answers with the
pod's rows from that list only while (a) the engine's events have been followed without a gap
since the list was made (`epoch`: None while they are not followed, another number after each
gap), (b) the list
is younger than `MAX_AGE_SECONDS`, and (c) the pod did not change since `EVENT_LAG_SECONDS`
before the list started (an event can reach us before the engine's list shows its change);
otherwise None, and the caller lists the pod itself. So a pod's periodic resync costs no Docker
call while nothing happens, and Docker calls per second at rest do not grow with the pods (the
kubelet's PLEG relists once for every pod too).

Must not: call Docker or read a clock other than the one it was given; decide anything about a
pod's state (it only hands back rows).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from vk_provider.runtime.docker import labels as lb

# A list older than that is not reused: the housekeeping lists the engine at least every 60 s
# (pods/workers.FULL_HOUSEKEEPING_SECONDS) and its passes come 10 s apart.
MAX_AGE_SECONDS = 90.0
EVENT_LAG_SECONDS = 1.0

Row = dict[str, Any]


class ListingCache:
    def __init__(self, epoch: Callable[[], int | None], clock: Callable[[], float] = time.monotonic) -> None:
        self._epoch = epoch
        self._clock = clock
        self._listed_epoch: int | None = None
        self._listed_at: float | None = None
        self._by_pod: dict[str, list[Row]] = {}
        self._pod_of: dict[str, str] = {}  # container ID -> pod UID, from every list seen
        self._changed_at: dict[str, float] = {}

    def now(self) -> float:
        return self._clock()

    def listed(self, started: float, rows: Iterable[Row]) -> dict[str, list[Row]]:
        """A node-wide list, asked for at `started` (this cache's clock); its rows by pod UID."""
        by_pod: dict[str, list[Row]] = {}
        for row in rows:
            uid = str((row.get("Labels") or {}).get(lb.POD_UID, ""))
            by_pod.setdefault(uid, []).append(row)
        self._by_pod, self._listed_at, self._listed_epoch = by_pod, started, self._epoch()
        self._pod_of = {str(row["Id"]): uid for uid, pod_rows in by_pod.items() for row in pod_rows}
        for uid, at in list(self._changed_at.items()):
            if uid not in by_pod and at < started - EVENT_LAG_SECONDS:
                del self._changed_at[uid]  # a pod gone from the engine a while ago
        return by_pod

    def seen(self, uid: str, rows: Iterable[Row]) -> None:
        """One pod's own list: its containers' IDs are known from now on."""
        for row in rows:
            self._pod_of[str(row["Id"])] = uid

    def changed(self, uid: str) -> None:
        self._changed_at[uid] = self._clock()

    def container_changed(self, container_id: str) -> None:
        """A container of ours changed; a container not listed yet belongs to a pod that was
        marked when it was created."""
        uid = self._pod_of.get(container_id)
        if uid is not None:
            self.changed(uid)

    def rows(self, uid: str) -> list[Row] | None:
        """The pod's rows from the latest list, or None when they may be stale."""
        if self._listed_at is None or self._listed_epoch is None or self._epoch() != self._listed_epoch:
            return None
        if self._clock() - self._listed_at > MAX_AGE_SECONDS:
            return None
        changed = self._changed_at.get(uid)
        if changed is not None and changed >= self._listed_at - EVENT_LAG_SECONDS:
            return None
        return list(self._by_pod.get(uid, ()))
