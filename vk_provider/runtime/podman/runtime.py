"""`PodmanRuntime`: the Runtime protocol on Podman's API service (`podman system service`).

What lives here: what Podman does differently from Docker behind the same verbs; everything else
is `DockerRuntime`'s, over Podman's Docker-compatible API (docs/runtime.md#podman lists which
API each call uses). An in-place resize goes through the libpod update endpoint (`libpod.py`):
Podman 4.3 has no compat update, and its update changes the container's cgroup without
changing what `inspect` reports, so the limits last applied to each running container are kept
here and shown as its resources (a provider restarted after a resize sees the created ones and
applies the allocation again, which the cgroup already has). A container its OCI runtime could
not start stays "created" in Podman, with no error: the error of the start is kept here and the
container shown as a failed run (exit code as Docker gives it, `start_exit_code`). A container
joins its sandbox's UTS namespace with its network, and a Localhost seccomp profile is named by
its path (Podman reads the file; Docker takes its text). Volume sizes (emptyDir sizeLimit) take
their labels from the volume list (Podman's `system df` has none). The node's runtime version reads
`podman://<version>`.
Must not: decide anything about a pod, or block the event loop (engine calls go through the
pool).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vk_provider.runtime.configs import ContainerConfig
from vk_provider.runtime.docker import DockerRuntime
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.seccomp_profile import localhost_profile_json
from vk_provider.runtime.podman import libpod
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRunState,
    LinuxResources,
    PodRuntimeState,
    RuntimeInfo,
)


def start_exit_code(message: str) -> int:
    """The exit code Docker records for a container its runtime could not start (moby's
    daemon/start.go): 127 for a missing executable, 126 for one not permitted, else 128."""
    lowered = message.lower()
    if "not found" in lowered or "no such file or directory" in lowered:
        return 127
    return 126 if "permission denied" in lowered else 128


class PodmanRuntime(DockerRuntime):
    SHARE_UTS = True  # Podman joins a sandbox's UTS namespace only when told (create.py)
    EVENTS_BY_ACTION = False  # Podman 4.3's compat event stream sends nothing under an `event` filter

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """DockerRuntime's arguments (config, node name, metrics, cni)."""
        super().__init__(*args, **kwargs)
        self._applied: dict[str, LinuxResources] = {}  # container id -> limits of its last update
        self._failed: dict[str, str] = {}  # container id -> why it could not start

    async def info(self) -> RuntimeInfo:
        found = await super().info()
        version = found.runtime_version.partition("://")[2]
        return dataclasses.replace(found, runtime_version=f"podman://{version}")

    def _df(self) -> dict[str, Any]:
        """Podman's compat `/system/df` sizes the volumes but leaves out their labels: they come
        from the list of this node's volumes (blocking: in the pool)."""
        api = self._engine.client.api
        df: dict[str, Any] = api.df()
        listed: dict[str, Any] = api.volumes(filters={"label": f"{lb.NODE}={self.node_name}"})
        labels = {str(v.get("Name")): v.get("Labels") or {} for v in listed.get("Volumes") or []}
        for vol in df.get("Volumes") or []:
            vol["Labels"] = vol.get("Labels") or labels.get(str(vol.get("Name")), {})
        return df

    def _seccomp_profile(self, config: ContainerConfig) -> str | None:
        """Podman reads `seccomp=` as a path on its host (this one): the profile's file, once
        it reads as a profile here."""
        if localhost_profile_json(config) is None or config.security.seccomp is None:
            return None
        return config.security.seccomp.localhost

    async def _apply_resources(self, container_id: str, resources: LinuxResources) -> None:
        await self._engine.call(libpod.update_container, self._engine.client.api, container_id, resources)
        self._applied[container_id] = resources

    def _start_failed(self, container_id: str, message: str) -> None:
        self._failed[container_id] = message

    def _with_applied(self, pod: PodRuntimeState) -> PodRuntimeState:
        if not (self._applied or self._failed):
            return pod
        containers = tuple(self._instance(c) for c in pod.containers)
        return dataclasses.replace(pod, containers=containers)

    def _instance(self, instance: ContainerInstance) -> ContainerInstance:
        failed = self._failed.get(instance.container_id)
        if failed is not None and instance.state == ContainerRunState.CREATED:
            # Podman leaves a container its runtime could not start "created", with no error:
            # a failed run, as Docker shows it.
            return dataclasses.replace(
                instance,
                state=ContainerRunState.EXITED,
                exit_code=start_exit_code(failed),
                error=failed,
                finished_at=instance.created_at,
            )
        applied = self._applied.get(instance.container_id)
        if applied is None:
            return instance
        if instance.state != ContainerRunState.RUNNING:
            del self._applied[instance.container_id]  # a started one gets the created limits
            return instance
        return dataclasses.replace(instance, resources=applied)

    async def remove_container(self, container_id: str) -> None:
        await super().remove_container(container_id)
        self._applied.pop(container_id, None)
        self._failed.pop(container_id, None)

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        return {uid: self._with_applied(pod) for uid, pod in (await super().list_pods()).items()}

    async def pod_state(self, uid: str) -> PodRuntimeState | None:
        pod = await super().pod_state(uid)
        return None if pod is None else self._with_applied(pod)
