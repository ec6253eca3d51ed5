"""A pod → its `SandboxConfig`, as the kubelet's generatePodSandboxConfig makes it (pure).

What lives here: `sandbox_config(pod, dns, pod_cidrs, cluster_domain)`: the pod's identity, its
kernel hostname (`hosts.kernel_hostname`; none on the host's network), the host namespaces it
asks for, the resolver configuration `dns.pod_dns` formed, its hostAliases (for an engine that
keeps /etc/hosts itself), every container's hostPorts as port mappings, its sysctls, its
emptyDir volumes (`emptydir_volumes`: the kubelet's mode and fsGroup of their root, a Memory
one's size limit) and the Node's pod CIDRs.
Must not: call an engine or read anything: the pod workers bring the DNS settings and the Node.

Upstream: pkg/kubelet/kuberuntime/kuberuntime_sandbox.go (generatePodSandboxConfig),
pkg/volume/emptydir/empty_dir.go (setupDir), pkg/volume/volume_linux.go (SetVolumeOwnership).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from vk_common.objects import pod_containers, spec
from vk_common.qos import pod_qos_class
from vk_common.quantity import parse_quantity
from vk_provider.kuberuntime.hosts import kernel_hostname
from vk_provider.kuberuntime.pod_resources import Resources, pod_cgroup_resources
from vk_provider.runtime.configs import (
    EmptyDirVolume,
    PodCgroup,
    PodMetadata,
    PortMapping,
    ResolvConf,
    SandboxConfig,
)

# Upstream: pkg/volume/emptydir/empty_dir.go (setupDir: perm 0777) and pkg/volume/volume_linux.go
# (changeFilePermission: an fsGroup's directory gets group fsGroup, setgid, rwMask | execMask).
EMPTYDIR_MODE = 0o777
SETGID = 0o2000


def emptydir_root(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(mode, gid) of an emptyDir's root as the kubelet leaves it: 0777 root's, or with the
    pod's fsGroup 02777 that group's (the directory's rwx bits already hold rwMask | execMask)."""
    group = (spec(pod).get("securityContext") or {}).get("fsGroup")
    if group is None:
        return EMPTYDIR_MODE, 0
    return EMPTYDIR_MODE | SETGID, int(group)


def emptydir_volumes(pod: Mapping[str, Any]) -> tuple[EmptyDirVolume, ...]:
    """The pod's emptyDirs, each with its root's mode and group; a Memory one's sizeLimit in bytes."""
    mode, gid = emptydir_root(pod)
    out = []
    for vol in spec(pod).get("volumes") or []:
        if "emptyDir" not in vol:
            continue
        ed = vol.get("emptyDir") or {}
        memory = ed.get("medium") == "Memory"
        size = math.ceil(parse_quantity(str(ed["sizeLimit"]))) if memory and ed.get("sizeLimit") else None
        out.append(EmptyDirVolume(str(vol["name"]), memory, size, mode, gid))
    return tuple(out)


def port_mappings(pod: Mapping[str, Any]) -> tuple[PortMapping, ...]:
    """Every container's hostPort (init, sidecar and app containers alike)."""
    return tuple(
        PortMapping(
            container_port=int(p["containerPort"]),
            protocol=str(p.get("protocol") or "TCP"),
            host_port=int(p["hostPort"]),
            host_ip=str(p.get("hostIP") or ""),
        )
        for _, c in pod_containers(pod)
        for p in c.get("ports") or []
        if int(p.get("hostPort") or 0) > 0
    )


def sandbox_config(
    pod: Mapping[str, Any],
    dns: ResolvConf | None,
    pod_cidrs: Sequence[str],
    cluster_domain: str,
    *,
    runtime_handler: str = "",
    allocated: Resources | None = None,
) -> SandboxConfig:
    """`dns`: the pod's resolver configuration (None: the engine's copy of its host's);
    `cluster_domain` ends a setHostnameAsFQDN pod's hostname; `runtime_handler` is its
    RuntimeClass's handler ("": the default); `allocated` the containers' allocated resources by
    name (None: the spec's), for the pod cgroup's limits. Raises ContainerCreateError for an FQDN
    too long for the kernel."""
    pod_spec = spec(pod)
    host_network = bool(pod_spec.get("hostNetwork"))
    sysctls = (pod_spec.get("securityContext") or {}).get("sysctls") or []
    return SandboxConfig(
        metadata=PodMetadata.of(pod),
        hostname="" if host_network else kernel_hostname(pod, cluster_domain),
        host_network=host_network,
        host_pid=bool(pod_spec.get("hostPID")),
        host_ipc=bool(pod_spec.get("hostIPC")),
        dns=dns,
        host_aliases=tuple(
            (str(h), str(a.get("ip", "")))
            for a in pod_spec.get("hostAliases") or []
            for h in a.get("hostnames") or []
        ),
        port_mappings=port_mappings(pod),
        sysctls=tuple((str(s["name"]), str(s.get("value", ""))) for s in sysctls),
        empty_dirs=emptydir_volumes(pod),
        pod_cidrs=tuple(pod_cidrs),
        runtime_handler=runtime_handler,
        cgroup=PodCgroup(pod_qos_class(pod), pod_cgroup_resources(pod, allocated)),
    )
