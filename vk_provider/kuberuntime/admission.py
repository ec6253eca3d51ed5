"""What the node admits of a pod's spec before anything is made for it (pure).

What lives here: `admit_pod(pod, docker, host)`, the one admission of what the runtime can
honour and what the node's allowances permit, in the order the kubelet's checks run:
`check_pod_allowed` (the security allowances: sysctls outside the kubelet's allow-list first,
with reason `SysctlForbidden` and the kubelet's message (`vk_common.sysctls`), then the host
namespaces, hostPath volumes, privileged containers and added capabilities against
`docker.allow`; image volumes, which no engine here mounts), `check_pod_supported` (what no
allowance turns on: dynamic resource allocation (`spec.resourceClaims`, `resources.claims`: no
DRA driver serves this node), raw block devices (`volumeDevices`), pod-level limits
(`spec.resources.limits`) where the runtime keeps no pod cgroup to enforce them
(`HostSecurity.pod_cgroups`) and a
`mountPropagation` other than None on a volume that is not a hostPath (emptyDir and the API
volumes are engine volumes or provider-made directories, which take no propagation; a hostPath's
is `mounts.propagation_of`')), and `security.check_security` (the securityContext fields).
Each raises `PodSpecRefused` naming the field (a `PodRejected` with the kubelet's reason where
the kubelet's admission rejects). The kubelet's own admit handlers over the node's state (host
ports, resources) are `pods/admission.py`'s.
Must not: call an engine, read configuration files, or silently drop a field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_common.objects import pod_containers
from vk_common.sysctls import SYSCTL_FORBIDDEN, forbidden_sysctl
from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.kuberuntime.security import cap_name, check_security
from vk_provider.runtime.configs import HostSecurity
from vk_provider.runtime.types import PodRejected, PodSpecRefused


def _check_propagation(spec: Mapping[str, Any], where: str, container: Mapping[str, Any]) -> None:
    host_paths = {v.get("name") for v in spec.get("volumes") or [] if "hostPath" in v}
    for j, mount in enumerate(container.get("volumeMounts") or []):
        propagation = mount.get("mountPropagation")
        if propagation not in (None, "None") and mount.get("name") not in host_paths:
            raise PodSpecRefused(
                f"{where}.volumeMounts[{j}].mountPropagation: {propagation} propagation is "
                "supported on hostPath volumes only on this node"
            )


def check_pod_supported(pod: Mapping[str, Any], pod_cgroups: bool = False) -> None:
    """Refuse the first field of `pod` this runtime cannot honour, naming its path; `pod_cgroups`:
    the runtime keeps a cgroup per pod (pod-level limits go there)."""
    spec: Mapping[str, Any] = pod.get("spec") or {}
    if spec.get("resourceClaims"):
        raise PodSpecRefused(
            "spec.resourceClaims: resource claims are not supported on this node "
            "(no dynamic resource allocation driver)"
        )
    for where, container in pod_containers(pod):
        if (container.get("resources") or {}).get("claims"):
            raise PodSpecRefused(
                f"{where}.resources.claims: resource claims are not supported on this node "
                "(no dynamic resource allocation driver)"
            )
        _check_propagation(spec, where, container)
        if container.get("volumeDevices"):
            raise PodSpecRefused(f"{where}.volumeDevices: raw block devices are not supported on this node")
    if (spec.get("resources") or {}).get("limits") and not pod_cgroups:
        # PodLevelResources (beta, on since 1.34): the kubelet sets them on the pod's cgroup
        # (pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod); a limit silently not
        # enforced would be worse than a refusal.
        raise PodSpecRefused(
            "spec.resources.limits: pod-level resource limits are not supported on this node "
            "(no pod cgroup: the engine is not on this host or docker.podCgroups is off; "
            "set limits on the containers)"
        )


def _refuse(field: str, what: str, allowance: str) -> PodSpecRefused:
    return PodSpecRefused(f"{field}: {what} are not allowed on this node (docker.allow.{allowance})")


def check_pod_allowed(pod: Mapping[str, Any], allow: DockerAllow) -> None:
    """Refuse what the node's security allowances forbid (docs/security.md: what is refused by default).

    Sysctls first, as the kubelet's admission: one outside the allow-list (the safe ones plus
    `allow.unsafe_sysctls`) fails the pod with reason SysctlForbidden and the kubelet's message.
    """
    sysctl = forbidden_sysctl(pod, allow.unsafe_sysctls)
    if sysctl is not None:
        raise PodRejected(SYSCTL_FORBIDDEN, sysctl)
    spec: Mapping[str, Any] = pod.get("spec") or {}
    if spec.get("hostNetwork") and not allow.host_network:
        raise _refuse("spec.hostNetwork", "pods using the host's network namespace", "hostNetwork")
    if spec.get("hostPID") and not allow.host_pid:
        raise _refuse("spec.hostPID", "pods using the host's PID namespace", "hostPID")
    if spec.get("hostIPC") and not allow.host_ipc:
        raise _refuse("spec.hostIPC", "pods using the host's IPC namespace", "hostIPC")
    for i, vol in enumerate(spec.get("volumes") or []):
        if "hostPath" in vol and not allow.host_path:
            raise _refuse(f"spec.volumes[{i}].hostPath", "hostPath volumes", "hostPath")
        if "image" in vol:
            # Mounts of type image need Docker Engine API 1.48 (Docker 28); not used here.
            raise PodSpecRefused(
                f"spec.volumes[{i}].image: image volumes are not supported on this node "
                "(the Docker runtime does not mount images as volumes)"
            )
    allowed_caps = {cap_name(c) for c in allow.capabilities}
    for path, c in pod_containers(pod):
        sc = c.get("securityContext") or {}
        if sc.get("privileged") and not allow.privileged:
            raise _refuse(f"{path}.securityContext.privileged", "privileged containers", "privileged")
        added = (sc.get("capabilities") or {}).get("add") or []
        for j, cap in enumerate(added):
            if "ALL" not in allowed_caps and cap_name(cap) not in allowed_caps:
                raise PodSpecRefused(
                    f"{path}.securityContext.capabilities.add[{j}]: capability {cap} is not allowed "
                    "on this node (docker.allow.capabilities)"
                )


def admit_pod(pod: Mapping[str, Any], docker: DockerConfig, host: HostSecurity) -> None:
    """Everything above, in the order the runtime used to check it before making the sandbox."""
    check_pod_supported(pod, host.pod_cgroups)
    check_pod_allowed(pod, docker.allow)
    check_security(pod, docker, host)
