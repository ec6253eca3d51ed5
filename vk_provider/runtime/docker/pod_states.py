"""What the engine holds of this node's pods, read back from their labels and kept while nothing changes it.

What lives here: `PodStates`, the state side of `DockerRuntime`: the event pump (`start`,
`close`, `events`), the caches of exited containers (they never change), of running ones and
of running sandboxes (they stand while the engine's list shows them running and no event or
stop of ours told otherwise: one list per relist, not one inspect per container, as the
kubelet's PLEG relists with one call), the latest node-wide list (`listing`, reused as a pod's
state while the event stream is read without a gap), and the reads: `inspect`,
`owned_inspect`, `list_rows`, `pod_rows`, `instance`, `sandbox_state`, `pod_from_rows`, `list_pods`,
`pod_state`, `container_role`; and `start_container`, the engine's start of a container made
here, so that the start's own "start" event leaves the cache standing. A container's termination
message is read here, from its file or (FallbackToLogsOnError) its log's tail.
Must not: create, stop or remove anything; report a container without this node's label.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any

from docker.errors import NotFound
from vk_provider.runtime.docker import cni_sandbox
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.cgroup_stats import CgroupStats
from vk_provider.runtime.docker.cni_sandbox import CNISandboxes
from vk_provider.runtime.docker.engine import Engine, EngineErrors
from vk_provider.runtime.docker.events import ACTIONS, EventPump
from vk_provider.runtime.docker.listing import ListingCache
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    EventsResumed,
    PodRuntimeState,
    PodSandboxState,
    RuntimeEvent,
    RuntimeUnavailable,
)

# Upstream: pkg/kubelet/container/runtime.go MaxContainerTerminationMessage{Length,LogLength,LogLines}.
MAX_TERMINATION_MESSAGE = 4096
MAX_TERMINATION_LOG_BYTES = 2048
MAX_TERMINATION_LOG_LINES = 80


def _read_message(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_TERMINATION_MESSAGE).decode("utf-8", "replace")
    except OSError:
        return ""


def _listed_state(row: Mapping[str, Any]) -> str:
    """A container's State in the engine's list ("running", "exited", ...)."""
    return str(row.get("State") or "")


class PodStates:
    def __init__(
        self,
        engine: Engine,
        node_name: str,
        cni: CNISandboxes | None,
        cgroups: CgroupStats | None,
        *,
        events_by_action: bool = True,
    ) -> None:
        self._engine = engine
        self._events_by_action = events_by_action
        self.node_name = node_name
        self._cni = cni
        self._cgroups = cgroups
        self.pump: EventPump | None = None
        # Exited containers never change again: their inspect (and message) is cached by id.
        self._exited: dict[str, ContainerInstance] = {}
        # A running container (or sandbox) does not change while it runs, except through
        # `update_resources` (which forgets it).
        self._running: dict[str, ContainerInstance] = {}
        self._running_sandboxes: dict[str, PodSandboxState] = {}
        # The containers whose start this runtime asked for and whose "start" event has not
        # been read yet: that event tells nothing the inspect made after the start does not (a
        # death after it is an event of its own), so it leaves their cached state standing; a
        # pod's first resync then inspects nothing (docs/performance.md, 2026-12-08).
        self._starting: set[str] = set()
        # The latest node-wide list, a pod's state while nothing changed it (while `events()`
        # is being read without a gap: the changes are known).
        self._event_readers = 0
        self.listing = ListingCache(self._events_epoch)

    def start(self) -> None:
        if self.pump is None:
            self.pump = EventPump(self._open_events, self.node_name)
            self.pump.start()

    def _open_events(self, since: float | None) -> Any:
        filters: dict[str, Any] = {"label": f"{lb.NODE}={self.node_name}", "type": "container"}
        if self._events_by_action:
            # Only the actions a RuntimeEvent is made of: Docker leaves out the rest (a new pod's
            # create and attach events), which the pump would decode to drop.
            filters["event"] = list(ACTIONS)
        return self._engine.stream_client.api.events(decode=True, since=since, filters=filters)

    def close(self) -> None:
        if self.pump is not None:
            self.pump.close()

    def removed(self, container_id: str) -> None:
        """The container is gone: forget its cached instance."""
        self.forget_running(container_id)
        self._exited.pop(container_id, None)
        self._starting.discard(container_id)

    async def start_container(self, container_id: str) -> None:
        """The engine's start of one of this node's containers, with its own "start" event
        marked as already known: the caller inspects the container after the start."""
        self._starting.add(container_id)
        try:
            await self._engine.start_container(container_id)
        except BaseException:
            self._starting.discard(container_id)
            raise

    async def events(self) -> AsyncIterator[RuntimeEvent | EventsResumed]:
        if self.pump is None:
            raise RuntimeUnavailable("the runtime is not started")
        self._event_readers += 1
        try:
            async for event in self.pump.events():
                # Forgotten before the consumer hears of the change: the engine's list (a snapshot it
                # updates a moment later) may still show the container running.
                if isinstance(event, EventsResumed):
                    self._running.clear()
                    self._running_sandboxes.clear()
                    self._starting.clear()
                else:
                    if event.action == "start" and event.container_id in self._starting:
                        self._starting.discard(event.container_id)  # the cache holds the start
                        self.listing.container_changed(event.container_id)
                    else:
                        self.forget_running(event.container_id)
                    self.listing.changed(event.pod_uid)
                yield event
        finally:
            self._event_readers -= 1

    def _events_epoch(self) -> int | None:
        """The event stream's connection while somebody reads `events()` (so every change is
        marked in the listing cache), else None."""
        return self.pump.epoch if self.pump is not None and self._event_readers > 0 else None

    def forget_running(self, container_id: str) -> None:
        self._running.pop(container_id, None)
        if self._cgroups is not None:
            self._cgroups.forget(container_id)
        self._running_sandboxes.pop(container_id, None)
        self.listing.container_changed(container_id)

    # --- observing ---

    async def inspect(self, container_id: str) -> dict[str, Any] | None:
        try:
            return await self._engine.inspect_container(container_id)
        except NotFound:
            return None

    async def owned_inspect(self, container_id: str) -> dict[str, Any] | None:
        """The container's inspect if it exists and belongs to this node."""
        inspect = await self.inspect(container_id)
        if inspect is None or not lb.is_owned(
            (inspect.get("Config") or {}).get("Labels") or {}, self.node_name
        ):
            return None
        return inspect

    async def list_rows(self, filters: Mapping[str, Any]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = await self._engine.call(
            self._engine.client.api.containers, all=True, filters=dict(filters)
        )
        return [r for r in rows if lb.is_owned(r.get("Labels") or {}, self.node_name)]

    async def instance(self, container_id: str, listed: str = "") -> ContainerInstance | None:
        """The container as a ContainerInstance; `listed`: its State in the engine's list, when
        known ("running" lets a running container's cached instance stand)."""
        cached = self._exited.get(container_id)
        if cached is None and listed == "running":
            cached = self._running.get(container_id)
        if cached is not None:
            return cached
        self._running.pop(container_id, None)  # not listed running: whatever was kept is stale
        inspect = await self.inspect(container_id)
        if inspect is None:
            return None
        labels = (inspect.get("Config") or {}).get("Labels") or {}
        message = ""
        path = labels.get(lb.TERMINATION_MESSAGE_FILE)
        state = inspect.get("State") or {}
        exited = lb.run_state(state) == ContainerRunState.EXITED or bool(state.get("Error"))
        if path and exited:
            message = await self._engine.call(_read_message, path)
        exit_code = int(state.get("ExitCode") or 0)
        fallback = labels.get(lb.TERMINATION_MESSAGE_POLICY) == "FallbackToLogsOnError"
        if exited and fallback and not message and exit_code != 0:
            message = await self._log_tail_message(container_id)
        inst = lb.instance_from_inspect(inspect, message)
        if inst.state == ContainerRunState.EXITED:
            self._exited[container_id] = inst
        elif inst.state == ContainerRunState.RUNNING:
            self._running[container_id] = inst
        return inst

    async def _log_tail_message(self, container_id: str) -> str:
        """FallbackToLogsOnError: the last lines of the log, as the kubelet takes them."""
        try:
            tail: bytes = await self._engine.call(
                self._engine.client.api.logs, container_id, tail=MAX_TERMINATION_LOG_LINES
            )
        except EngineErrors:
            return ""
        return tail[-MAX_TERMINATION_LOG_BYTES:].decode("utf-8", "replace")

    async def sandbox_state(self, container_id: str, listed: str = "") -> PodSandboxState | None:
        """The sandbox's state; `listed` as for `_instance`."""
        cached = self._running_sandboxes.get(container_id) if listed == "running" else None
        if cached is not None:
            return cached
        self._running_sandboxes.pop(container_id, None)  # as in `_instance`
        inspect = await self.inspect(container_id)
        if inspect is None:
            return None
        state = lb.sandbox_from_inspect(inspect)
        if self._cni is not None and state.running and cni_sandbox.netns_of(inspect) and not state.ip:
            ips = await self._cni.ips(inspect)
            state = dataclasses.replace(state, ip=ips[0] if ips else "", ips=ips)
        if state.running:
            self._running_sandboxes[container_id] = state
        return state

    async def pod_from_rows(self, uid: str, rows: list[dict[str, Any]]) -> PodRuntimeState:
        labels0 = rows[0].get("Labels") or {}
        sandboxes = [r for r in rows if lb.role_of(r.get("Labels") or {}) == ContainerRole.SANDBOX]
        others = [r for r in rows if lb.role_of(r.get("Labels") or {}) not in (ContainerRole.SANDBOX, None)]
        sandbox = None
        if sandboxes:
            latest = max(sandboxes, key=lambda r: lb.attempt_of(r.get("Labels") or {}))
            sandbox = await self.sandbox_state(str(latest["Id"]), _listed_state(latest))
        found = await asyncio.gather(*(self.instance(str(r["Id"]), _listed_state(r)) for r in others))
        return PodRuntimeState(
            uid=uid,
            namespace=labels0.get(lb.POD_NAMESPACE, ""),
            name=labels0.get(lb.POD_NAME, ""),
            sandbox=sandbox,
            containers=tuple(sorted((c for c in found if c is not None), key=lambda c: (c.name, c.attempt))),
        )

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        started = self.listing.now()
        rows = await self.list_rows(lb.node_filter(self.node_name))
        by_pod = self.listing.listed(started, rows)
        live = {str(r["Id"]) for r in rows}
        for cache in (self._exited, self._running, self._running_sandboxes):
            for gone in set(cache) - live:
                del cache[gone]
        states = await asyncio.gather(*(self.pod_from_rows(uid, rs) for uid, rs in by_pod.items()))
        return {s.uid: s for s in states}

    async def pod_rows(self, uid: str) -> list[dict[str, Any]]:
        """The pod's containers as the engine lists them: the latest node-wide list's rows while
        they are fresh, else one list of the pod's own."""
        rows = self.listing.rows(uid)
        if rows is None:
            rows = await self.list_rows(lb.pod_filter(self.node_name, uid))
            self.listing.seen(uid, rows)
        return rows

    async def pod_state(self, uid: str) -> PodRuntimeState | None:
        rows = await self.pod_rows(uid)
        return await self.pod_from_rows(uid, rows) if rows else None

    async def container_role(self, container_id: str) -> ContainerRole | None:
        inspect = await self.owned_inspect(container_id)
        return None if inspect is None else lb.role_of((inspect.get("Config") or {}).get("Labels") or {})

    # --- images ---
