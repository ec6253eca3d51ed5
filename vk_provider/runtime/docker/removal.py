"""Stopping and removing what the engine holds of this node's pods.

What lives here: `Removal`: `stop` (the container's stop signal, the grace period, then SIGKILL;
a sandbox's CNI network torn down first, as the kubelet's StopPodSandbox), `remove` (forced, and a
removal the engine already has under way waited out), `remove_sandbox` (CNI DEL first),
`prune_pod` (the pod's older instances: the latest sandbox and the two latest of each container
stay, as the kubelet's container GC keeps them) and `remove_pod` (its containers, sandboxes,
sub-path mounts, Docker volumes, shipped volumes and directory).
Must not: touch containers without this node's label, or block the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError, NotFound
from vk_common.logging import get_logger
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.cni_sandbox import CNISandboxes
from vk_provider.runtime.docker.engine import Engine, EngineErrors
from vk_provider.runtime.docker.pod_dirs import PodDirs
from vk_provider.runtime.docker.pod_states import PodStates
from vk_provider.runtime.docker.shipped_volumes import ShippedVolumes
from vk_provider.runtime.pod_cgroups import PodCgroups
from vk_provider.runtime.types import ContainerRole, RuntimeFailure

log = get_logger("runtime.docker")

KILL_WAIT_SECONDS = 30.0
EXIT_POLL_SECONDS = 2.0
REMOVAL_POLL_SECONDS = 0.2  # waiting out a removal the engine already has under way


def _signal_of(inspect: Mapping[str, Any]) -> str:
    """The container's stop signal (Docker copies the image's STOPSIGNAL into its config)."""
    return str((inspect.get("Config") or {}).get("StopSignal") or "SIGTERM")


@dataclass(frozen=True)
class Removal:
    engine: Engine
    states: PodStates
    node_name: str
    cni: CNISandboxes | None
    dirs: PodDirs | None
    shipped: ShippedVolumes
    cgroups: Callable[[], PodCgroups | None] = lambda: None  # the node's pod cgroups, once known

    async def stop(self, container_id: str, grace_seconds: float, signal: str | None = None) -> None:
        inspect = await self.states.owned_inspect(container_id)
        if inspect is None or not (inspect.get("State") or {}).get("Running"):
            return
        if (
            self.cni is not None
            and lb.role_of((inspect.get("Config") or {}).get("Labels") or {}) == ContainerRole.SANDBOX
        ):
            await self.cni.teardown(container_id, inspect)  # the kubelet's StopPodSandbox: network first
        sig = signal or _signal_of(inspect)
        if grace_seconds > 0 and await self._signal_and_wait(container_id, sig, grace_seconds):
            return
        await self._signal_and_wait(container_id, "SIGKILL", KILL_WAIT_SECONDS)

    async def _signal_and_wait(self, container_id: str, sig: str, seconds: float) -> bool:
        """Send `sig`; True once the container has exited within `seconds`."""
        pump = self.states.pump
        exited = pump.wait_exit(container_id) if pump is not None else None
        try:
            try:
                await self.engine.call(self.engine.client.api.kill, container_id, signal=sig)
            except APIError as exc:
                if exc.status_code in (404, 409):  # gone, or not running any more
                    return True
                raise
            deadline = time.monotonic() + seconds
            while (remaining := deadline - time.monotonic()) > 0:
                if exited is not None:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(exited), min(remaining, EXIT_POLL_SECONDS))
                        return True
                else:
                    await asyncio.sleep(min(remaining, EXIT_POLL_SECONDS))
                # The event stream may have been reconnecting: look directly too.
                inspect = await self.states.inspect(container_id)
                if inspect is None or not (inspect.get("State") or {}).get("Running"):
                    return True
            return False
        finally:
            self.states.forget_running(container_id)
            if exited is not None and pump is not None:
                pump.forget(container_id, exited)

    async def remove(self, container_id: str) -> None:
        api = self.engine.client.api
        try:
            await self.engine.call(api.remove_container, container_id, force=True, v=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:
                raise
            # "removal of container ... is already in progress": the engine goes on with a
            # removal whose caller went away (a provider stopped mid-deletion); wait for it.
            await self._wait_removed(container_id, exc)
        finally:
            self.states.removed(container_id)

    async def remove_sandbox(self, container_id: str) -> None:
        """CNI mode: DEL its network first (a failure keeps it, to be removed again later)."""
        if self.cni is not None:
            await self.cni.teardown(container_id, await self.states.inspect(container_id))
        await self.remove(container_id)

    async def _wait_removed(self, container_id: str, conflict: APIError) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + KILL_WAIT_SECONDS
        while loop.time() < end:
            try:
                await self.engine.call(self.engine.client.api.inspect_container, container_id)
            except NotFound:
                return
            await asyncio.sleep(REMOVAL_POLL_SECONDS)
        raise RuntimeFailure(f"container {container_id[:12]} is still being removed: {conflict}")

    async def prune_pod(self, uid: str) -> None:
        rows = await self.states.list_rows(lb.pod_filter(self.node_name, uid))
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in rows:
            labels = r.get("Labels") or {}
            groups.setdefault((labels.get(lb.ROLE, ""), labels.get(lb.CONTAINER_NAME, "")), []).append(r)
        doomed = []
        for (role, _), members in groups.items():
            keep = 1 if role == ContainerRole.SANDBOX.value else 2
            members.sort(key=lambda r: lb.attempt_of(r.get("Labels") or {}), reverse=True)
            doomed += [r for r in members[keep:] if r.get("State") != "running"]
        sandbox = ContainerRole.SANDBOX.value
        await asyncio.gather(
            *(
                (self.remove_sandbox if (r.get("Labels") or {}).get(lb.ROLE) == sandbox else self.remove)(
                    str(r["Id"])
                )
                for r in doomed
            )
        )
        if self.dirs is not None:
            for r in doomed:
                await self.engine.call(self.dirs.drop_container_dir, uid, r.get("Labels") or {})

    async def remove_pod(self, uid: str) -> None:
        try:
            await self._remove_pod(uid)
        except EngineErrors as exc:
            # A RuntimeFailure, so that `vk-provider clean` logs this pod and goes on with the rest.
            raise RuntimeFailure(f"removing pod {uid}: {exc}") from exc

    async def _remove_pod(self, uid: str) -> None:
        rows = await self.states.list_rows(lb.pod_filter(self.node_name, uid))
        sandboxes = [r for r in rows if lb.role_of(r.get("Labels") or {}) == ContainerRole.SANDBOX]
        others = [r for r in rows if r not in sandboxes]
        await asyncio.gather(*(self.remove(str(r["Id"])) for r in others))
        await asyncio.gather(*(self.remove_sandbox(str(r["Id"])) for r in sandboxes))
        if self.dirs is not None:  # before the volumes and files whose paths they hold
            await self.engine.call(self.dirs.clean_subpaths, uid)
        api = self.engine.client.api
        volumes = await self.engine.call(
            api.volumes, filters={"label": [f"{lb.NODE}={self.node_name}", f"{lb.POD_UID}={uid}"]}
        )
        for vol in (volumes or {}).get("Volumes") or []:
            with contextlib.suppress(NotFound):
                await self.engine.call(api.remove_volume, vol["Name"], force=True)
        self.shipped.forget(uid)
        cgroups = self.cgroups()
        if cgroups is not None and not await self.engine.call(cgroups.remove, uid):
            log.info("pod cgroup still busy; removed later", extra={"uid": uid})
        if self.dirs is not None:
            await self.engine.call(self.dirs.drop_pod_dir, uid)
