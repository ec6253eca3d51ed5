"""A pod and its containers → Docker create arguments (pure).

What lives here: the security allowances check (`check_pod_allowed`, raising `PodSpecRefused` naming
the field; with reason `SysctlForbidden` for a sysctl outside the kubelet's allow-list,
`sysctls.forbidden_sysctl`; also for image volumes, which this runtime does not mount), the
sandbox's create kwargs (image, hostname (`hosts.kernel_hostname`), the DNS configuration
`kuberuntime/dns.py` formed (`dns_kwargs`, Docker's form of it only), host aliases, published
hostPorts, network, sysctls, the Memory emptyDirs it holds), one container's create kwargs from a
`ContainerLaunch` (entrypoint/cmd, env, workdir, tty/stdin, namespaces joined from the sandbox,
resources by the kubelet's formulas, the securityContext (`security.security_kwargs`: the effective
one, runAsNonRoot, profiles), volume mounts with their checked subPath/subPathExpr
(`paths.subpath_of`) and propagation (`mount_options`), the termination message file, the
managed /etc/hosts of `hosts`;
`linux_resources` and `update_kwargs`, the same resources as the limits Docker reports and as an in-
place `docker update`), the pod's emptyDir volumes (`emptydir_volumes`: the kubelet's mode and
fsGroup of their root, as tmpfs options or as the tar entry and helper container kwargs the shell
applies to a new disk volume), and the container spec hash (without the resizable fields). The
security admission beyond `docker.allow`'s switches is `security.check_security`.
The kwargs are those of docker-py's `containers.create`. Must not: call Docker or touch
the filesystem; the shell passes in what it created (sandbox id, volume names, files)
and the function that resolves a subPath on the host.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import tarfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vk_common.objects import pod_containers
from vk_common.quantity import parse_quantity
from vk_common.sysctls import SYSCTL_FORBIDDEN, forbidden_sysctl
from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.runtime.configs import ResolvConf
from vk_provider.runtime.docker import hosts
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.mount_options import bind_options
from vk_provider.runtime.docker.pod_resolv import ETC_RESOLV_CONF
from vk_provider.runtime.docker.security import cap_name, security_kwargs
from vk_provider.runtime.protocol import ContainerLaunch
from vk_provider.runtime.subpaths import subpath_of
from vk_provider.runtime.types import (
    API_VOLUME_TYPES,
    ContainerConfigError,
    ContainerRole,
    LinuxResources,
    PodRejected,
    PodSpecRefused,
    spec_list,
)

# Upstream: pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares, MilliCPUToQuota).
MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
QUOTA_PERIOD = 100000
MIN_QUOTA_PERIOD = 1000
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"


@dataclass(frozen=True)
class SubPathMount:
    """One volumeMount's sub-path, for the shell to turn into the host path the engine binds."""

    source: str  # the volume's directory on the engine's host
    sub: str  # checked: relative, no `..` (subpaths.subpath_of)
    volume: str
    container: str
    index: int  # of the mount in the container's volumeMounts
    writable: bool  # a volume pods can write (emptyDir, hostPath): its directories can be swapped


SubPathResolver = Callable[[SubPathMount], str]


# Upstream: pkg/volume/emptydir/empty_dir.go (setupDir: perm 0777) and pkg/volume/volume_linux.go
# (changeFilePermission: an fsGroup's directory gets group fsGroup, setgid, rwMask | execMask).
EMPTYDIR_MODE = 0o777
SETGID = 0o2000
# Where the runtime mounts a new disk emptyDir in the never-started container that sets its root.
VOLUME_ROOT_PATH = "vk-volume-root"
SANDBOX_MEMORY_PATH = "/vk-memory-volumes"  # where the sandbox holds the Memory emptyDirs


@dataclass(frozen=True)
class VolumeSpec:
    """A Docker volume backing one emptyDir of a pod, and the mode and group of its root.

    A Memory one is a tmpfs mounted with that mode and group; a disk one gets them once, when
    it is created (`root_entry_tar`).
    """

    pod_volume: str
    docker_name: str
    labels: dict[str, str]
    driver_opts: dict[str, str]
    mode: int = EMPTYDIR_MODE
    gid: int = 0

    @property
    def memory(self) -> bool:
        return self.driver_opts.get("type") == "tmpfs"


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("spec") or {}


def container_field_path(pod: Mapping[str, Any], role: ContainerRole, name: str) -> str:
    key = spec_list(role)
    for i, c in enumerate(_spec(pod).get(key) or []):
        if c.get("name") == name:
            return f"spec.{key}[{i}]"
    return f"spec.{key}[{name}]"


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


# What an in-place resize changes without recreating the container (the resize subresource's
# fields, pkg/registry/core/pod/strategy.go dropNonResizeUpdatesForContainers); upstream's
# HashContainer (pkg/kubelet/container/helpers.go) leaves them out as well.
RESIZABLE_FIELDS = ("resources", "resizePolicy")


def spec_hash(container: Mapping[str, Any]) -> str:
    """A stable hash of a container's spec without its resizable fields; a change means the
    container must be recreated (a resources change is an in-place resize, pods/resize.py)."""
    hashed = {k: v for k, v in container.items() if k not in RESIZABLE_FIELDS}
    data = json.dumps(hashed, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def dns_kwargs(dns: ResolvConf | None) -> dict[str, Any]:
    """The sandbox's resolver configuration (kuberuntime/dns.py's, already formed) as Docker's
    `dns`, `dns_search` and `dns_opt`. None gives none: Docker then copies its host's
    resolv.conf. Docker takes its host's value of each one left out, so empty searches are
    `.` (no search domains rather than the engine's); empty nameservers or options cannot be
    said and stay the engine's."""
    if dns is None:
        return {}
    out: dict[str, Any] = {"dns_search": list(dns.searches) or ["."]}
    if dns.servers:
        out["dns"] = list(dns.servers)
    if dns.options:
        out["dns_opt"] = list(dns.options)
    return out


def published_ports(pod: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Every container's hostPort as a published port of the sandbox."""
    ports: dict[str, list[Any]] = {}
    for _, c in pod_containers(pod):
        for p in c.get("ports") or []:
            host_port = p.get("hostPort")
            if not host_port:
                continue
            key = f"{p['containerPort']}/{str(p.get('protocol') or 'TCP').lower()}"
            binding: Any = (p["hostIP"], int(host_port)) if p.get("hostIP") else int(host_port)
            ports.setdefault(key, []).append(binding)
    return ports


def sandbox_create_kwargs(
    pod: Mapping[str, Any],
    *,
    node_name: str,
    config: DockerConfig,
    attempt: int,
    dns: ResolvConf | None,
    cluster_domain: str,
    network: str = "",
) -> dict[str, Any]:
    """`dns` is the pod's resolver configuration (`dns_kwargs`); `cluster_domain` ends the
    FQDN of a setHostnameAsFQDN pod's hostname; `network` is the one the sandbox joins
    (`pod_network`: the node's pod network; empty: `docker.network`)."""
    spec = _spec(pod)
    kwargs: dict[str, Any] = {
        "image": config.sandbox_image,
        "name": lb.sandbox_name(pod, attempt),
        "labels": lb.sandbox_labels(node_name, pod, attempt, config.sandbox_image),
        "ipc_mode": "host" if spec.get("hostIPC") else "shareable",
        **dns_kwargs(dns),
    }
    if spec.get("hostNetwork"):
        kwargs["network_mode"] = "host"
    else:
        kwargs["network_mode"] = network or config.network
        kwargs["hostname"] = hosts.kernel_hostname(pod, cluster_domain)
        ports = published_ports(pod) if kwargs["network_mode"] != "none" else {}  # none: CNI's portmap
        if ports:
            kwargs["ports"] = ports
    if spec.get("hostPID"):
        kwargs["pid_mode"] = "host"
    # Docker's own /etc/hosts (a host-network pod's, or where the shell has no managed file).
    aliases = [f"{h}:{a['ip']}" for a in spec.get("hostAliases") or [] for h in a.get("hostnames") or []]
    if aliases:
        kwargs["extra_hosts"] = aliases
    sysctls = {
        s["name"]: str(s.get("value", "")) for s in (spec.get("securityContext") or {}).get("sysctls") or []
    }
    if sysctls:
        kwargs["sysctls"] = sysctls
    # Docker unmounts a tmpfs volume when no container holds it, and its files go: the sandbox
    # holds the pod's Memory emptyDirs, so they live as long as the pod, as the kubelet's do.
    memory = [
        f"{v.docker_name}:{SANDBOX_MEMORY_PATH}/{v.pod_volume}:rw,nocopy"
        for v in emptydir_volumes(pod, node_name)
        if v.memory
    ]
    if memory:
        kwargs["volumes"] = memory
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


def linux_resources(container: Mapping[str, Any], field: str) -> LinuxResources:
    """The cgroup limits `resource_kwargs` gives the container, as Docker reports them back."""
    kw = resource_kwargs(container, field)
    return LinuxResources(
        cpu_shares=kw["cpu_shares"],
        cpu_quota=kw.get("cpu_quota", 0),
        cpu_period=kw.get("cpu_period", 0),
        memory_limit=kw.get("mem_limit", 0),
    )


def update_kwargs(container: Mapping[str, Any], field: str) -> dict[str, Any]:
    """docker-py's `update_container` arguments applying the container's resources in place.

    The memory swap limit moves with the memory limit (no extra swap, as at create); a limit
    Docker has none of stays unset.
    """
    kw = resource_kwargs(container, field)
    out: dict[str, Any] = {"cpu_shares": kw["cpu_shares"]}
    if "cpu_quota" in kw:
        out["cpu_quota"], out["cpu_period"] = kw["cpu_quota"], kw["cpu_period"]
    if "mem_limit" in kw:
        out["mem_limit"], out["memswap_limit"] = kw["mem_limit"], kw["memswap_limit"]
    return out


def emptydir_root(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(mode, gid) of an emptyDir's root as the kubelet leaves it: 0777 root's, or with the
    pod's fsGroup 02777 that group's (the directory's rwx bits already hold rwMask | execMask)."""
    group = (_spec(pod).get("securityContext") or {}).get("fsGroup")
    if group is None:
        return EMPTYDIR_MODE, 0
    return EMPTYDIR_MODE | SETGID, int(group)


def emptydir_docker_prefix(uid: str) -> str:
    """What the Docker volume names of a pod's emptyDirs start with (then the volume's name)."""
    return f"k8s_{uid}_"


def emptydir_volumes(pod: Mapping[str, Any], node_name: str) -> list[VolumeSpec]:
    """One Docker volume per emptyDir, labelled like the pod's containers; Memory medium is a
    tmpfs whose mount options give its root the kubelet's mode and group."""
    meta = pod.get("metadata") or {}
    mode, gid = emptydir_root(pod)
    out = []
    for vol in _spec(pod).get("volumes") or []:
        if "emptyDir" not in vol:
            continue
        ed = vol.get("emptyDir") or {}
        opts: dict[str, str] = {}
        if ed.get("medium") == "Memory":
            options = [f"mode={mode:o}", "uid=0", f"gid={gid}"]
            if ed.get("sizeLimit"):
                options.insert(0, f"size={math.ceil(parse_quantity(str(ed['sizeLimit'])))}")
            opts = {"type": "tmpfs", "device": "tmpfs", "o": ",".join(options)}
        out.append(
            VolumeSpec(
                pod_volume=str(vol["name"]),
                docker_name=emptydir_docker_prefix(str(meta.get("uid", ""))) + str(vol["name"]),
                labels=lb.pod_labels(node_name, pod),
                driver_opts=opts,
                mode=mode,
                gid=gid,
            )
        )
    return out


def root_entry_tar(vol: VolumeSpec) -> bytes:
    """A tar of one directory entry, `VOLUME_ROOT_PATH` with the volume's mode, owner root and
    its group: extracted at `/` of a container that mounts the volume there, Docker applies
    them to the existing directory, the volume's root."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entry = tarfile.TarInfo(VOLUME_ROOT_PATH)
        entry.type = tarfile.DIRTYPE
        entry.mode = vol.mode
        entry.uid, entry.gid = 0, vol.gid
        tar.addfile(entry)
    return buf.getvalue()


def volume_root_kwargs(vol: VolumeSpec, image: str) -> dict[str, Any]:
    """create kwargs of the container, never started, through which a new disk emptyDir's root
    gets its mode (`root_entry_tar`); labelled with the pod, so removing the pod removes it."""
    return {
        "image": image,
        "labels": dict(vol.labels),
        "network_disabled": True,
        "volumes": [f"{vol.docker_name}:/{VOLUME_ROOT_PATH}:rw,nocopy"],
    }


def _api_type(vol: Mapping[str, Any]) -> str:
    return next(t for t in API_VOLUME_TYPES if t in vol)


def volume_binds(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    field: str,
    node_name: str,
    volumes_root: str | None = None,
    env: Sequence[tuple[str, str]] = (),
    resolve_subpath: SubPathResolver | None = None,
    emptydir_dirs: Mapping[str, str] | None = None,
) -> list[str]:
    """Docker bind strings for the container's volumeMounts.

    emptyDir volumes are Docker volumes (`nocopy`: not filled from the image), hostPath
    volumes bind the host path. The files of
    volumes whose content comes from the API (configMap, secret, projected, downwardAPI) were
    written by the pod worker under `volumes_root/<volume>`, or, with no `volumes_root` (an
    engine that does not share our filesystem), shipped into the Docker volume
    `labels.volume_name` (`shipped_volumes`); they are always mounted read-only, as the
    kubelet does. A subPath of those binds what it names at start time (it follows no later
    update, as with the kubelet); a subPath of a shipped one is refused (ContainerConfigError).

    An emptyDir mounted with a subPath is bound from the host directory of its Docker volume,
    `emptydir_dirs[volume]` (the local driver's Mountpoint, when this process sees it): Docker
    before API 1.45 cannot mount part of a named volume. Without it the mount is refused
    (ContainerConfigError), as it is for a Memory emptyDir, whose tmpfs is only mounted while
    a container mounts the volume itself.

    `subPath` (or `subPathExpr`, expanded from `env`) may not be absolute nor hold `..`
    (ContainerConfigError, whatever the volume type). `resolve_subpath(SubPathMount)` gives
    the host path to bind, one a pod cannot swap (the shell's `subpath_mounts.bind_subpath`
    on a local engine); without it (an engine on another host) a subPath is refused, since
    nothing on the engine's host would check it. `mountPropagation` and `recursiveReadOnly`
    are `mount_options.bind_options`'.
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
        sub = subpath_of(m, env)
        writable = True
        if "hostPath" in vol:
            source = str(vol["hostPath"].get("path", ""))
        elif vol["name"] in emptydirs and sub:
            host_dir = (emptydir_dirs or {}).get(str(vol["name"]))
            if host_dir is None:
                raise ContainerConfigError(
                    f"{where}.subPath: subPath on emptyDir volume {vol['name']!r} needs its Docker "
                    "volume's directory on this host (a local engine whose data root the provider "
                    "sees; not a Memory emptyDir)"
                )
            source = host_dir
        elif vol["name"] in emptydirs:
            source = emptydirs[vol["name"]]
            # An emptyDir starts empty: no copy of the image's directory (nor its owner and mode).
            mode += ",nocopy"
        elif any(t in vol for t in API_VOLUME_TYPES):
            mode, writable = "ro", False
            if volumes_root is None:  # an engine without our filesystem: the shipped Docker volume
                if sub:
                    raise ContainerConfigError(
                        f"{where}.subPath: subPath on a {_api_type(vol)} volume needs a local "
                        "engine (docker.engineLocation)"
                    )
                source = lb.volume_name(pod, str(vol["name"]))
                mode = "ro,nocopy"
            else:
                source = f"{volumes_root}/{vol['name']}"
        else:
            continue
        if sub:
            if resolve_subpath is None:
                raise ContainerConfigError(
                    f"{where}.subPath: subPath on volume {vol['name']!r} needs a local engine "
                    "(docker.engineLocation): the provider checks and binds it on the engine's host"
                )
            source = resolve_subpath(
                SubPathMount(source, sub, str(vol["name"]), str(container.get("name", "")), j, writable)
            )
        mode += bind_options(container, m, where)
        binds.append(f"{source}:{m['mountPath']}:{mode}")
    return binds


def container_create_kwargs(
    launch: ContainerLaunch,
    *,
    node_name: str,
    termination_file: str | None,
    volumes_root: str | None = None,
    image_user: str | None = None,
    resolve_subpath: SubPathResolver | None = None,
    seccomp_json: str | None = None,
    hosts_file: str | None = None,
    emptydir_dirs: Mapping[str, str] | None = None,
    resolv_file: str | None = None,
) -> dict[str, Any]:
    """docker-py create kwargs for one container instance joining its pod's sandbox.

    `hosts_file` is the pod's managed /etc/hosts (hosts.pod_hosts_file) the shell wrote, mounted
    unless the container mounts a volume there; `resolv_file` the pod's resolv.conf
    (`pod_resolv.resolv_file`), mounted over /etc/resolv.conf.

    `image_user` is the image's `Config.User`, looked up by the shell when `needs_image_user`;
    `resolve_subpath` is volume_binds'; `seccomp_json` the text of the container's Localhost
    seccomp profile (`security.seccomp_localhost_file`), read by the shell.
    """
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
    if c.get("stdin") and not c.get("stdinOnce"):
        # docker-py sets StdinOnce (the engine closes the container's stdin when the first
        # attach session's stdin ends) to `stdin_open and not detach`: only for `stdinOnce`,
        # as the CRI's ContainerConfig.stdin_once (pkg/kubelet/kuberuntime/kuberuntime_container.go).
        kwargs["detach"] = True
    if spec.get("shareProcessNamespace"):
        kwargs["pid_mode"] = f"container:{sandbox}"
    elif spec.get("hostPID"):
        kwargs["pid_mode"] = "host"
    elif launch.target_container_id:
        # An ephemeral container's target, only where the pod has no shared or host PID
        # namespace: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go (NamespaceMode_TARGET).
        kwargs["pid_mode"] = f"container:{launch.target_container_id}"
    if launch.command is not None:
        kwargs["entrypoint"] = list(launch.command)
        kwargs["command"] = list(launch.args or ())
    elif launch.args is not None:
        kwargs["command"] = list(launch.args)
    if c.get("workingDir"):
        kwargs["working_dir"] = str(c["workingDir"])
    kwargs.update(resource_kwargs(c, field))
    kwargs.update(security_kwargs(pod, c, field, image_user, seccomp_json))
    binds = volume_binds(pod, c, field, node_name, volumes_root, launch.env, resolve_subpath, emptydir_dirs)
    if termination_file:
        path = str(c.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH)
        binds.append(f"{termination_file}:{path}:rw")
        kwargs["labels"][lb.TERMINATION_MESSAGE_FILE] = termination_file
    if hosts_file and not hosts.mounts_own_hosts(c):
        binds.append(f"{hosts_file}:{hosts.ETC_HOSTS}:rw")
    if resolv_file:
        binds.append(f"{resolv_file}:{ETC_RESOLV_CONF}:rw")
    if c.get("terminationMessagePolicy"):
        kwargs["labels"][lb.TERMINATION_MESSAGE_POLICY] = str(c["terminationMessagePolicy"])
    if binds:
        kwargs["volumes"] = binds
    return kwargs
