"""A pod and its containers → Docker create arguments (pure).

What lives here: the security allowances check (`check_pod_allowed`, raising
`PodSpecRefused` naming the field), the sandbox's create kwargs (image, hostname, DNS,
host aliases, published hostPorts, network, sysctls), one container's create kwargs from
a `ContainerLaunch` (entrypoint/cmd, env, workdir, tty/stdin, namespaces joined from the
sandbox, resources by the kubelet's formulas, securityContext, volume mounts, the
termination message file), the pod's emptyDir volumes, and the container spec hash.
The kwargs are those of docker-py's `containers.create`. Must not: call Docker or touch
the filesystem; the shell passes in what it created (sandbox id, volume names, files).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.quantity import parse_quantity
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.protocol import ContainerLaunch
from vk_provider.runtime.types import API_VOLUME_TYPES, ContainerConfigError, ContainerRole, PodSpecRefused

# Upstream: pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares, MilliCPUToQuota).
MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
QUOTA_PERIOD = 100000
MIN_QUOTA_PERIOD = 1000
HOSTNAME_MAX = 63
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"


@dataclass(frozen=True)
class VolumeSpec:
    """A Docker volume backing one emptyDir of a pod."""

    pod_volume: str
    docker_name: str
    labels: dict[str, str]
    driver_opts: dict[str, str]


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("spec") or {}


def _containers(pod: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(field path, container) of init then app containers."""
    spec = _spec(pod)
    out = [(f"spec.initContainers[{i}]", c) for i, c in enumerate(spec.get("initContainers") or [])]
    out += [(f"spec.containers[{i}]", c) for i, c in enumerate(spec.get("containers") or [])]
    return out


def container_field_path(pod: Mapping[str, Any], role: ContainerRole, name: str) -> str:
    key = "initContainers" if role == ContainerRole.INIT else "containers"
    for i, c in enumerate(_spec(pod).get(key) or []):
        if c.get("name") == name:
            return f"spec.{key}[{i}]"
    return f"spec.{key}[{name}]"


def _refuse(field: str, what: str, allowance: str) -> PodSpecRefused:
    return PodSpecRefused(f"{field}: {what} are not allowed on this node (docker.allow.{allowance})")


def _cap_name(cap: str) -> str:
    upper = cap.upper()
    return upper[4:] if upper.startswith("CAP_") else upper


def check_pod_allowed(pod: Mapping[str, Any], allow: DockerAllow) -> None:
    """Refuse what the node's security allowances forbid (DESIGN §4, security defaults)."""
    spec = _spec(pod)
    if spec.get("hostNetwork") and not allow.host_network:
        raise _refuse("spec.hostNetwork", "pods using the host's network namespace", "hostNetwork")
    if spec.get("hostPID") and not allow.host_pid:
        raise _refuse("spec.hostPID", "pods using the host's PID namespace", "hostPID")
    if spec.get("hostIPC") and not allow.host_ipc:
        raise _refuse("spec.hostIPC", "pods using the host's IPC namespace", "hostIPC")
    for i, vol in enumerate(spec.get("volumes") or []):
        if "hostPath" in vol and not allow.host_path:
            raise _refuse(f"spec.volumes[{i}].hostPath", "hostPath volumes", "hostPath")
    allowed_caps = {_cap_name(c) for c in allow.capabilities}
    for path, c in _containers(pod):
        sc = c.get("securityContext") or {}
        if sc.get("privileged") and not allow.privileged:
            raise _refuse(f"{path}.securityContext.privileged", "privileged containers", "privileged")
        added = (sc.get("capabilities") or {}).get("add") or []
        for j, cap in enumerate(added):
            if "ALL" not in allowed_caps and _cap_name(cap) not in allowed_caps:
                raise PodSpecRefused(
                    f"{path}.securityContext.capabilities.add[{j}]: capability {cap} is not allowed "
                    "on this node (docker.allow.capabilities)"
                )


def spec_hash(container: Mapping[str, Any]) -> str:
    """A stable hash of a container's spec; a change means the container must be recreated."""
    data = json.dumps(container, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def pod_hostname(pod: Mapping[str, Any]) -> str:
    """spec.hostname or the pod name, truncated to 63 characters without a trailing - or .

    Upstream: pkg/kubelet/kubelet_pods.go (truncatePodHostnameIfNeeded).
    """
    name = str(_spec(pod).get("hostname") or (pod.get("metadata") or {}).get("name", ""))
    if len(name) <= HOSTNAME_MAX:
        return name
    return name[:HOSTNAME_MAX].rstrip("-.")


def dns_kwargs(pod: Mapping[str, Any]) -> dict[str, Any]:
    """DNS settings of the sandbox.

    There is no cluster DNS service behind a Docker node, so ClusterFirst (the default) and
    ClusterFirstWithHostNet fall back to Default, the engine's resolv.conf (the kubelet does
    the same when it has no clusterDNS). dnsConfig is applied on top; with policy None it is
    the whole configuration.
    """
    spec = _spec(pod)
    cfg = spec.get("dnsConfig") or {}
    out: dict[str, Any] = {}
    if cfg.get("nameservers"):
        out["dns"] = list(cfg["nameservers"])
    if cfg.get("searches"):
        out["dns_search"] = list(cfg["searches"])
    options = [
        f"{o['name']}:{o['value']}" if o.get("value") not in (None, "") else str(o["name"])
        for o in cfg.get("options") or []
        if o.get("name")
    ]
    if options:
        out["dns_opt"] = options
    if spec.get("dnsPolicy") == "None" and "dns_search" not in out:
        out["dns_search"] = ["."]  # no search domains at all, rather than the engine's
    return out


def published_ports(pod: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Every container's hostPort as a published port of the sandbox."""
    ports: dict[str, list[Any]] = {}
    for _, c in _containers(pod):
        for p in c.get("ports") or []:
            host_port = p.get("hostPort")
            if not host_port:
                continue
            key = f"{p['containerPort']}/{str(p.get('protocol') or 'TCP').lower()}"
            binding: Any = (p["hostIP"], int(host_port)) if p.get("hostIP") else int(host_port)
            ports.setdefault(key, []).append(binding)
    return ports


def sandbox_create_kwargs(
    pod: Mapping[str, Any], *, node_name: str, config: DockerConfig, attempt: int
) -> dict[str, Any]:
    spec = _spec(pod)
    kwargs: dict[str, Any] = {
        "image": config.sandbox_image,
        "name": lb.sandbox_name(pod, attempt),
        "labels": lb.sandbox_labels(node_name, pod, attempt, config.sandbox_image),
        "ipc_mode": "host" if spec.get("hostIPC") else "shareable",
        **dns_kwargs(pod),
    }
    if spec.get("hostNetwork"):
        kwargs["network_mode"] = "host"
    else:
        kwargs["network_mode"] = config.network
        kwargs["hostname"] = pod_hostname(pod)
        ports = published_ports(pod)
        if ports:
            kwargs["ports"] = ports
    if spec.get("hostPID"):
        kwargs["pid_mode"] = "host"
    aliases = [f"{h}:{a['ip']}" for a in spec.get("hostAliases") or [] for h in a.get("hostnames") or []]
    if aliases:
        kwargs["extra_hosts"] = aliases
    sysctls = {
        s["name"]: str(s.get("value", "")) for s in (spec.get("securityContext") or {}).get("sysctls") or []
    }
    if sysctls:
        kwargs["sysctls"] = sysctls
    return kwargs


def _milli_cpu(quantity: str) -> int:
    return math.ceil(parse_quantity(str(quantity)) * 1000)


def cpu_shares(milli_cpu: int) -> int:
    if milli_cpu == 0:
        return MIN_SHARES
    return max(MIN_SHARES, min(MAX_SHARES, milli_cpu * SHARES_PER_CPU // 1000))


def cpu_quota(milli_cpu: int, period: int = QUOTA_PERIOD) -> int:
    return max(MIN_QUOTA_PERIOD, milli_cpu * period // 1000)


def resource_kwargs(container: Mapping[str, Any], field: str) -> dict[str, Any]:
    """limits.memory → mem_limit (no extra swap), limits.cpu → quota, requests.cpu → shares."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    out: dict[str, Any] = {}
    try:
        if limits.get("memory") is not None:
            memory = math.ceil(parse_quantity(str(limits["memory"])))
            out["mem_limit"] = memory
            out["memswap_limit"] = memory
        if limits.get("cpu") is not None:
            out["cpu_quota"] = cpu_quota(_milli_cpu(limits["cpu"]))
            out["cpu_period"] = QUOTA_PERIOD
        # The API defaults requests to limits; with neither the kubelet gives the minimum.
        request = requests.get("cpu", limits.get("cpu"))
        out["cpu_shares"] = cpu_shares(_milli_cpu(request) if request is not None else 0)
    except ValueError as exc:
        raise ContainerConfigError(f"{field}.resources: {exc}") from exc
    return out


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def security_kwargs(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    """The container's securityContext over the pod's (runAsUser/Group, groups, caps, ro rootfs)."""
    pod_sc = _spec(pod).get("securityContext") or {}
    sc = container.get("securityContext") or {}
    out: dict[str, Any] = {}
    user = _int_or_none(sc.get("runAsUser", pod_sc.get("runAsUser")))
    group = _int_or_none(sc.get("runAsGroup", pod_sc.get("runAsGroup")))
    if user is not None:
        out["user"] = f"{user}:{group}" if group is not None else str(user)
    elif group is not None:
        out["user"] = f"0:{group}"  # the image's user cannot be combined with a group here
    groups = [str(g) for g in pod_sc.get("supplementalGroups") or []]
    if pod_sc.get("fsGroup") is not None:
        groups.append(str(pod_sc["fsGroup"]))
    if groups:
        out["group_add"] = groups
    if sc.get("readOnlyRootFilesystem"):
        out["read_only"] = True
    if sc.get("privileged"):
        out["privileged"] = True
    caps = sc.get("capabilities") or {}
    if caps.get("add"):
        out["cap_add"] = [_cap_name(c) for c in caps["add"]]
    if caps.get("drop"):
        out["cap_drop"] = [_cap_name(c) for c in caps["drop"]]
    if sc.get("allowPrivilegeEscalation") is False:
        out["security_opt"] = ["no-new-privileges"]
    return out


def emptydir_volumes(pod: Mapping[str, Any], node_name: str) -> list[VolumeSpec]:
    """One Docker volume per emptyDir, labelled like the pod's containers; Memory medium is tmpfs."""
    meta = pod.get("metadata") or {}
    out = []
    for vol in _spec(pod).get("volumes") or []:
        if "emptyDir" not in vol:
            continue
        ed = vol.get("emptyDir") or {}
        opts: dict[str, str] = {}
        if ed.get("medium") == "Memory":
            opts = {"type": "tmpfs", "device": "tmpfs"}
            if ed.get("sizeLimit"):
                opts["o"] = f"size={math.ceil(parse_quantity(str(ed['sizeLimit'])))}"
        out.append(
            VolumeSpec(
                pod_volume=str(vol["name"]),
                docker_name=f"k8s_{meta.get('uid', '')}_{vol['name']}",
                labels=lb.pod_labels(node_name, pod),
                driver_opts=opts,
            )
        )
    return out


def volume_binds(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    field: str,
    node_name: str,
    volumes_root: str | None = None,
) -> list[str]:
    """Docker bind strings for the container's volumeMounts.

    emptyDir volumes are Docker volumes, hostPath volumes bind the host path. The files of
    volumes whose content comes from the API (configMap, secret, projected, downwardAPI) were
    written by the pod worker under `volumes_root/<volume>`; they are always mounted
    read-only, as the kubelet does. A subPath of those binds what it names at start time
    (it follows no later update, as with the kubelet).
    """
    volumes = {str(v["name"]): v for v in _spec(pod).get("volumes") or []}
    emptydirs = {v.pod_volume: v.docker_name for v in emptydir_volumes(pod, node_name)}
    binds = []
    for j, m in enumerate(container.get("volumeMounts") or []):
        vol = volumes.get(str(m.get("name")))
        where = f"{field}.volumeMounts[{j}]"
        if vol is None:
            raise ContainerConfigError(
                f'{where}.name: volume "{m.get("name")}" is not defined in spec.volumes'
            )
        mode = "ro" if m.get("readOnly") else "rw"
        sub = str(m.get("subPath") or "")
        if "hostPath" in vol:
            source = str(vol["hostPath"].get("path", ""))
            if sub:
                source = f"{source.rstrip('/')}/{sub}"
        elif vol["name"] in emptydirs:
            if sub:
                raise ContainerConfigError(
                    f"{where}.subPath: subPath on emptyDir volumes is not supported yet"
                )
            source = emptydirs[vol["name"]]
        elif any(t in vol for t in API_VOLUME_TYPES):
            if volumes_root is None:
                continue  # no host directory (remote engine): the pod worker reports FailedMount
            source = f"{volumes_root}/{vol['name']}"
            if sub:
                source = f"{source}/{sub}"
            mode = "ro"
        else:
            continue
        binds.append(f"{source}:{m['mountPath']}:{mode}")
    return binds


def container_create_kwargs(
    launch: ContainerLaunch,
    *,
    node_name: str,
    termination_file: str | None,
    volumes_root: str | None = None,
) -> dict[str, Any]:
    """docker-py create kwargs for one container instance joining its pod's sandbox."""
    pod, c = launch.pod, launch.container
    name = str(c["name"])
    field = container_field_path(pod, launch.role, name)
    image = str(c.get("image", ""))
    spec = _spec(pod)
    sandbox = launch.sandbox.container_id
    kwargs: dict[str, Any] = {
        "image": image,
        "name": lb.container_name(pod, name, launch.attempt),
        "labels": lb.container_labels(node_name, pod, name, launch.role, launch.attempt, image, spec_hash(c)),
        "environment": [f"{k}={v}" for k, v in launch.env],
        "network_mode": f"container:{sandbox}",
        "ipc_mode": f"container:{sandbox}",
        "tty": bool(c.get("tty")),
        "stdin_open": bool(c.get("stdin")),
    }
    if spec.get("shareProcessNamespace"):
        kwargs["pid_mode"] = f"container:{sandbox}"
    elif spec.get("hostPID"):
        kwargs["pid_mode"] = "host"
    if launch.command is not None:
        kwargs["entrypoint"] = list(launch.command)
        kwargs["command"] = list(launch.args or ())
    elif launch.args is not None:
        kwargs["command"] = list(launch.args)
    if c.get("workingDir"):
        kwargs["working_dir"] = str(c["workingDir"])
    kwargs.update(resource_kwargs(c, field))
    kwargs.update(security_kwargs(pod, c))
    binds = volume_binds(pod, c, field, node_name, volumes_root)
    if termination_file:
        path = str(c.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH)
        binds.append(f"{termination_file}:{path}:rw")
        kwargs["labels"][lb.TERMINATION_MESSAGE_FILE] = termination_file
    if c.get("terminationMessagePolicy"):
        kwargs["labels"][lb.TERMINATION_MESSAGE_POLICY] = str(c["terminationMessagePolicy"])
    if binds:
        kwargs["volumes"] = binds
    return kwargs
