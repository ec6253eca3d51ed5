"""What passes between a pod's worker and its syncer.

What lives here: `PodWork`, one pod UID's worker record (its pod, doorbell, state-machine
state, kill request, terminal reason, next timer, the starts its syncs made), which only the
pod workers (`pods/workers.py`) write; `PodTask`, the read-only view of it a syncer is handed;
`SyncResult`, what one sync hands back for the worker to record (terminal or not, the terminal
reason, when to sync again, how long the engine's events of the pod stay quiet, what it
started, or the error); `SyncPass`, one sync's own scratch (the containers' waiting reasons,
the earliest retry, whether the pass changed the runtime or only made and started, a terminal
reason, the image look-ups started ahead), which the syncer and the steps it calls write and
nothing outlives; and the `StatusSink` / `EventSink` protocols.
Must not: act on the runtime, the apiserver or Events; it only holds state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from vk_provider.runtime.types import ContainerInstance, PodSandboxState
from vk_provider.status.fields import ContainerWaiting


class StatusSink(Protocol):
    def set_pod_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None: ...
    def get_pod_status(self, uid: str) -> dict[str, Any] | None: ...
    def cached_status(self, uid: str) -> Mapping[str, Any] | None:
        """The cached status, read-only (not copied: a sync reads it and copies nothing of it twice)."""
        ...

    def terminate_pod(self, pod: Mapping[str, Any]) -> None: ...
    def remove_pod(self, uid: str) -> None: ...
    def set_container_readiness(self, uid: str, container_name: str, ready: bool) -> None: ...
    def set_container_startup(self, uid: str, container_name: str, started: bool) -> None: ...


class EventSink(Protocol):
    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, field_path: str = ""
    ) -> None: ...


class WorkerState(StrEnum):
    SYNCING = "syncing"
    TERMINATING = "terminating"
    TERMINATED = "terminated"


@dataclass(frozen=True)
class PodTask:
    """The pod a syncer works on, as its worker knows it: read-only.

    `grace`: the grace period a kill asked for (None: the pod's own); `terminal_reason`: why the
    pod is terminating (evicted, past its deadline, rejected), for its terminal status."""

    uid: str
    pod: Mapping[str, Any]
    grace: int | None = None
    terminal_reason: tuple[str, str] | None = None


@dataclass(frozen=True)
class SyncResult:
    """One sync's outcome. `wake_in`: seconds until the pod must sync again at the latest (None:
    only on a trigger or the resync); `quiet_for`: seconds during which the pod's own engine
    events do not wake it (a sandbox that could not be made is retried on its timer, not on the
    events of its own failed attempt); `error`: the sync failed (FailedSync, retried)."""

    terminal: bool = False
    terminal_reason: tuple[str, str] | None = None
    wake_in: float | None = None
    quiet_for: float = 0.0
    error: Exception | None = None
    # The containers (the sandbox too) this sync started: what followed their start is in the
    # status it published, so their engine "start" events need no sync of their own.
    started: frozenset[str] = frozenset()


@dataclass
class SyncPass:
    """One sync's scratch: the syncer and its steps (images, resize) write it, the result is made
    from it, and it is dropped with the sync."""

    waiting: dict[str, ContainerWaiting] = field(default_factory=dict)
    wake: float | None = None  # seconds until the next sync at the latest
    # This pass stopped, replaced, reset, resized or pruned something, or a start failed or ran a
    # hook: the runtime's state read before it is stale.
    runtime_changed: bool = False
    # What this pass made and nothing else changed: the sandbox and the started containers (from
    # their inspects just after their start); the state read before it, with them, is current.
    made_sandbox: PodSandboxState | None = None
    started: list[ContainerInstance] = field(default_factory=list)
    started_ids: set[str] = field(default_factory=set)  # SyncResult.started
    terminal_reason: tuple[str, str] | None = None  # the pod is to end (deadline, rejected, refused)
    quiet_for: float = 0.0  # SyncResult.quiet_for
    # image -> its look-up started ahead, while the sandbox is made (pods/images.py `look_ahead`).
    image_lookups: dict[str, asyncio.Future[str | None]] = field(default_factory=dict)

    def drop_lookups(self) -> None:
        """The look-ups ahead no step took (the sandbox failed, or the plan's first start did
        not run): cancelled, their outcome read, so that none is left pending or unread."""
        for lookup in self.image_lookups.values():
            if lookup.done() and not lookup.cancelled():
                lookup.exception()
            lookup.cancel()
        self.image_lookups.clear()

    def wake_in(self, seconds: float) -> None:
        """Sync again within `seconds` at the latest (the earliest timer wins)."""
        seconds = max(seconds, 0.0)
        self.wake = seconds if self.wake is None else min(self.wake, seconds)

    def wait(self, name: str, reason: str, message: str, retry: float) -> None:
        """Container `name` waits with `reason`; the pod syncs again within `retry`."""
        self.waiting[name] = ContainerWaiting(reason, message)
        self.wake_in(retry)


@dataclass
class PodWork:
    """The worker's record of one pod UID (pods/workers.py alone writes it)."""

    uid: str
    pod: Mapping[str, Any]
    arrival: int = 0  # the order its worker was made in (1: the first): `runtime.call_order`
    doorbell: asyncio.Event = field(default_factory=asyncio.Event)
    state: WorkerState = WorkerState.SYNCING
    kill: bool = False  # termination requested (deleted, removed, terminal, deadline)
    removed: bool = False  # gone from its source: clean up once terminated
    grace: int | None = None
    terminal_reason: tuple[str, str] | None = None
    wake_at: float | None = None  # loop time of the next timer-driven sync
    # Loop time until which the engine's events of this pod do not wake it (SyncResult.quiet_for).
    events_quiet_until: float = 0.0
    # The engine's "start" events of the pod's containers seen during the sync under way (None:
    # none under way), whether anything else rang meanwhile, and the containers the last sync
    # started whose "start" event is still to come (pods/workers.py `_own_start`).
    starts_during_sync: set[str] | None = None
    rung_during_sync: bool = False
    own_starts: set[str] = field(default_factory=set)
    task: asyncio.Task[None] | None = None

    def ring(self) -> None:
        """Something changed: sync (again, after the one under way)."""
        self.rung_during_sync = True
        self.doorbell.set()

    def as_task(self) -> PodTask:
        return PodTask(self.uid, self.pod, self.grace, self.terminal_reason)
