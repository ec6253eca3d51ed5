"""The per-pod work record shared by the pod workers, the pod sync and the container pipeline.

What lives here: `PodWork` (one pod UID's worker state: its pod, doorbell, state-machine
state, waiting reasons, image failures, next timer, its `ResizeState`: the allocated resources
and resize conditions that pods/resize.py keeps), `WorkerState`, `wake_in` (arm a pod's
timer-driven sync), and the `StatusSink` / `EventSink` protocols both depend on.
Must not: act on the runtime, the apiserver or Events; it only holds and arms state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from vk_provider.status.fields import ContainerWaiting

MOUNT_RETRY_FIRST_SECONDS = 1.0  # a failed volume set-up is retried soon, doubling up to ERROR_RETRY


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


@dataclass
class ResizeState:
    """One pod's allocation (container name -> resources, None until admitted) and its conditions."""

    allocated: dict[str, dict[str, Any]] | None = None
    pending: dict[str, Any] | None = None
    in_progress: dict[str, Any] | None = None

    def conditions(self) -> list[dict[str, Any]]:
        return [c for c in (self.pending, self.in_progress) if c is not None]


class WorkerState(StrEnum):
    SYNCING = "syncing"
    TERMINATING = "terminating"
    TERMINATED = "terminated"


@dataclass
class PodWork:
    uid: str
    pod: Mapping[str, Any]
    arrival: int = 0  # the order its worker was made in (1: the first): `runtime.call_order`
    doorbell: asyncio.Event = field(default_factory=asyncio.Event)
    state: WorkerState = WorkerState.SYNCING
    kill: bool = False  # termination requested (deleted, removed, terminal, deadline)
    removed: bool = False  # gone from its source: clean up once terminated
    grace: int | None = None
    terminal_reason: tuple[str, str] | None = None
    waiting: dict[str, ContainerWaiting] = field(default_factory=dict)
    wake_at: float | None = None  # loop time of the next timer-driven sync
    # Loop time until which the engine's events of this pod do not wake it: a sandbox that could
    # not be created is retried on its timer, not on the events of its own failed attempt.
    events_quiet_until: float = 0.0
    # image -> (epoch, message) of the last failed pull
    image_failures: dict[str, tuple[float, str]] = field(default_factory=dict)
    adopted: bool = False  # the first sync looked at what already ran
    volumes_mounted: bool = False  # the API-backed volumes were set up once
    mount_retry: float = MOUNT_RETRY_FIRST_SECONDS
    runtime_changed: bool = False  # this sync started or stopped something: its state is stale
    resize: ResizeState = field(default_factory=ResizeState)  # allocation and resize conditions
    task: asyncio.Task[None] | None = None


def wake_in(work: PodWork, seconds: float) -> None:
    """Sync `work` again within `seconds` at the latest (the earliest timer wins)."""
    at = asyncio.get_running_loop().time() + max(seconds, 0.0)
    work.wake_at = at if work.wake_at is None else min(work.wake_at, at)
