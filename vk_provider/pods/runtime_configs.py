"""The pod workers' way into the kuberuntime layer: admit, then compile, with what only they can read.

What lives here: `allowed_host_paths` (the hostPath volumes the runtime sets up: none for a pod
the allowances refuse), `admit_sandbox`, the pod admitted against what the runtime can honour
and the node allows (`kuberuntime.admission.admit_pod`, the host's security facts from the
runtime) before the pod sync compiles its sandbox (`kuberuntime.sandbox_config`); and
`container_config_for`, one container compiled into its `ContainerConfig`, with the
image's user looked up through the runtime where runAsNonRoot or a runAsGroup needs it, and the
node's /etc/hosts read for a host-network pod (an ephemeral container, added after its pod was
admitted, is admitted again first).
Must not: decide a pod rule (kuberuntime does) or call an engine other than through the Runtime.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vk_common.hostpath_types import host_path_volumes
from vk_common.logging import get_logger, pod_fields
from vk_common.objects import spec
from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.kuberuntime.admission import admit_pod, check_pod_allowed
from vk_provider.kuberuntime.container_config import ContainerLaunch, container_config
from vk_provider.kuberuntime.security import needs_image_user
from vk_provider.runtime.configs import ETC_HOSTS, ContainerConfig
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerRole, PodSpecRefused

log = get_logger("pods")


def allowed_host_paths(pod: Mapping[str, Any], allow: DockerAllow) -> tuple[tuple[str, str, str], ...]:
    """The pod's hostPath volumes (name, path, type) to set up; none for a pod the allowances
    refuse (its sandbox is refused: nothing is made on the host for it)."""
    try:
        check_pod_allowed(pod, allow)
    except PodSpecRefused:
        return ()
    return tuple(host_path_volumes(pod))


def admit_sandbox(runtime: Runtime, docker: DockerConfig, pod: Mapping[str, Any]) -> None:
    """The pod admitted against what the runtime can honour and the node allows, before its
    sandbox is compiled (`kuberuntime.sandbox_config`); raises PodSpecRefused (PodRejected)."""
    admit_pod(pod, docker, runtime.host_security())


async def _node_hosts(pod: Mapping[str, Any]) -> str:
    """The node's /etc/hosts (a host-network pod's is that file with a header and its aliases)."""
    try:
        return await asyncio.to_thread(Path(ETC_HOSTS).read_text, errors="replace")
    except OSError as exc:
        log.warning("cannot read the node's /etc/hosts", extra=pod_fields(pod, err=str(exc)))
        return ""


async def container_config_for(
    runtime: Runtime, docker: DockerConfig, launch: ContainerLaunch, cluster_domain: str
) -> ContainerConfig:
    """Raises RuntimeFailure: PodSpecRefused, ContainerConfigError (runAsNonRoot, mounts, ...)."""
    pod, container = launch.pod, launch.container
    if launch.role == ContainerRole.EPHEMERAL:
        admit_pod(pod, docker, runtime.host_security())
    image_user = None
    if needs_image_user(pod, container):
        image_user = await runtime.image_user(str(container.get("image", "")))
    return container_config(
        launch,
        image_user=image_user,
        seccomp_root=docker.seccomp_profile_root,
        cluster_domain=cluster_domain,
        node_hosts_text=await _node_hosts(pod) if spec(pod).get("hostNetwork") else "",
    )
