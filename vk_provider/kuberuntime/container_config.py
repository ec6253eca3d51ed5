"""One container of a pod → its `ContainerConfig`, as the kubelet's generateContainerConfig makes it (pure).

What lives here: `ContainerLaunch` (what the pod workers resolved for one container instance:
its environment, `$(VAR)`-expanded command and args, attempt, sandbox and an ephemeral
container's target), `container_config(launch, ...)`: the image, the PID namespace (the pod's
with shareProcessNamespace, the host's with hostPID, else an ephemeral container's target, else
its own), terminal and stdin (`stdinOnce`), working directory, the resources
(`resources.linux_resources`, with the limits a container leaves out taken from the pod level:
`pod_resources.pod_level_limits`), the oom_score_adj (`oom.oom_score_adjust`), the resolved
securityContext (`security.container_security`, runAsNonRoot verified against the image's user),
the mounts (`mounts.container_mounts`), the termination message path and policy, the content of
the kubelet-managed /etc/hosts (unless the container mounts a volume there:
`hosts.pod_hosts_file`), whether the pod's resolv.conf goes over /etc/resolv.conf, and the spec
hash (`spec_hash`, without the resizable fields); and `container_field_path`.
Must not: call an engine or read files: the pod workers bring the image's user and the node's
/etc/hosts text.

Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go (generateContainerConfig),
kuberuntime_container_linux.go, pkg/kubelet/kubelet_pods.go (makeMounts, ensureHostsFile),
pkg/kubelet/container/helpers.go (HashContainer).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vk_common.objects import spec
from vk_provider.kuberuntime import hosts
from vk_provider.kuberuntime.dns import DEFAULT_CLUSTER_DOMAIN
from vk_provider.kuberuntime.mounts import container_mounts
from vk_provider.kuberuntime.oom import oom_score_adjust
from vk_provider.kuberuntime.pod_resources import pod_level_limits
from vk_provider.kuberuntime.resources import linux_resources
from vk_provider.kuberuntime.security import container_security
from vk_provider.runtime.configs import ETC_HOSTS, ETC_RESOLV_CONF, ContainerConfig, PidNamespace, PodMetadata
from vk_provider.runtime.types import ContainerRole, PodSandboxState, spec_list

DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
# What an in-place resize changes without recreating the container (the resize subresource's
# fields, pkg/registry/core/pod/strategy.go dropNonResizeUpdatesForContainers); upstream's
# HashContainer (pkg/kubelet/container/helpers.go) leaves them out as well.
RESIZABLE_FIELDS = ("resources", "resizePolicy")


@dataclass(frozen=True)
class ContainerLaunch:
    """One container to create and start, with everything the pod workers resolve.

    `pod` and `container` are the API objects as dicts (JSON shape). `command` and `args` are
    already `$(VAR)`-expanded and `env` already resolved (fieldRefs, ConfigMap and Secret keys),
    so nothing here needs an apiserver.
    """

    pod: Mapping[str, Any]
    container: Mapping[str, Any]
    role: ContainerRole
    attempt: int
    env: tuple[tuple[str, str], ...]
    command: tuple[str, ...] | None  # None: the image's entrypoint
    args: tuple[str, ...] | None  # None: the image's cmd
    sandbox: PodSandboxState
    # An ephemeral container's targetContainerName, running: the runtime id whose PID
    # namespace it joins (empty: the pod's own rules).
    target_container_id: str = ""
    memory_capacity: int = 0  # the node's memory capacity, for the oom_score_adj (0: not known)


def spec_hash(container: Mapping[str, Any]) -> str:
    """A stable hash of a container's spec without its resizable fields; a change means the
    container must be recreated (a resources change is an in-place resize, pods/resize.py)."""
    hashed = {k: v for k, v in container.items() if k not in RESIZABLE_FIELDS}
    data = json.dumps(hashed, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def container_field_path(pod: Mapping[str, Any], role: ContainerRole, name: str) -> str:
    key = spec_list(role)
    for i, c in enumerate(spec(pod).get(key) or []):
        if c.get("name") == name:
            return f"spec.{key}[{i}]"
    return f"spec.{key}[{name}]"


def _pid_namespace(pod: Mapping[str, Any], target: str) -> PidNamespace:
    if spec(pod).get("shareProcessNamespace"):
        return PidNamespace.POD
    if spec(pod).get("hostPID"):
        return PidNamespace.NODE
    if target:
        # Only where the pod has no shared or host PID namespace:
        # kuberuntime_container_linux.go (NamespaceMode_TARGET).
        return PidNamespace.TARGET
    return PidNamespace.CONTAINER


def _mounts_at(container: Mapping[str, Any], path: str) -> bool:
    return any(m.get("mountPath") == path for m in container.get("volumeMounts") or [])


def _hosts_file(launch: ContainerLaunch, cluster_domain: str, node_hosts_text: str) -> str | None:
    """makeHostsMount: none when the container mounts its own /etc/hosts, or for a sandbox with
    no IP on its own network (the engine's own file, with the host aliases, stays)."""
    host_network = bool(spec(launch.pod).get("hostNetwork"))
    if _mounts_at(launch.container, ETC_HOSTS) or not (launch.sandbox.ip or host_network):
        return None
    ips = [launch.sandbox.ip] if launch.sandbox.ip else []
    return hosts.pod_hosts_file(launch.pod, ips, cluster_domain, node_hosts_text)


def container_config(
    launch: ContainerLaunch,
    *,
    image_user: str | None = None,
    seccomp_root: str = "",
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
    node_hosts_text: str = "",
) -> ContainerConfig:
    """`image_user`: the image's `Config.User` where `security.needs_image_user` (runAsNonRoot
    is verified against it); `seccomp_root`: `docker.seccompProfileRoot`; `node_hosts_text`:
    the node's /etc/hosts, for a host-network pod. Raises ContainerConfigError."""
    pod, c = launch.pod, launch.container
    name = str(c["name"])
    field = container_field_path(pod, launch.role, name)
    return ContainerConfig(
        metadata=PodMetadata.of(pod),
        name=name,
        role=launch.role,
        attempt=launch.attempt,
        field=field,
        image=str(c.get("image", "")),
        spec_hash=spec_hash(c),
        sandbox=launch.sandbox,
        env=launch.env,
        command=launch.command,
        args=launch.args,
        working_dir=str(c.get("workingDir") or ""),
        tty=bool(c.get("tty")),
        stdin=bool(c.get("stdin")),
        stdin_once=bool(c.get("stdinOnce")),
        pid_namespace=_pid_namespace(pod, launch.target_container_id),
        target_container_id=launch.target_container_id,
        resources=linux_resources(c, field, pod_level_limits(pod)),
        oom_score_adj=oom_score_adjust(pod, c, launch.memory_capacity),
        security=container_security(pod, c, field, image_user, seccomp_root),
        mounts=container_mounts(pod, c, field, launch.env),
        termination_message_path=str(c.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH),
        termination_message_policy=str(c.get("terminationMessagePolicy") or ""),
        hosts_file=_hosts_file(launch, cluster_domain, node_hosts_text),
        mount_resolv_conf=not _mounts_at(c, ETC_RESOLV_CONF),
    )
