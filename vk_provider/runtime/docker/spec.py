"""Sandbox and container configurations → Docker create arguments (pure).

What lives here: the translation of what the kuberuntime layer resolved into docker-py's
`containers.create` kwargs, and nothing it decides: a `SandboxConfig`'s (image, name and labels,
hostname, Docker's form of its `ResolvConf` (`dns_kwargs`), host aliases as `extra_hosts`,
published hostPorts, network, sysctls, and the Memory emptyDirs the sandbox holds so that their
tmpfs lives as long as the pod); a `ContainerConfig`'s (entrypoint/cmd, env, workdir, tty/stdin,
the sandbox's namespaces joined, the PID namespace, resources as Docker's cgroup options
(`resource_kwargs`, also those of an in-place `docker update`), the security options
(`security_options.security_kwargs`), the binds of its mounts (`volume_binds`: a hostPath's path,
an emptyDir's Docker volume, an API volume's directory or shipped volume; a sub-path through the
shell's resolver), the termination message file, the managed /etc/hosts and resolv.conf files);
the Docker volumes of the pod's emptyDirs (`emptydir_volumes`, with the tar entry and helper
container that give a new disk volume's root its mode and group).
Must not: call Docker or touch the filesystem (the shell passes in what it created: sandbox id,
files, the function that binds a sub-path on the host), or hold a Kubernetes rule.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vk_provider.config import DockerConfig
from vk_provider.runtime.configs import (
    ETC_HOSTS,
    ETC_RESOLV_CONF,
    ContainerConfig,
    Mount,
    MountKind,
    PidNamespace,
    PortMapping,
    Propagation,
    ResolvConf,
    SandboxConfig,
)
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.security_options import security_kwargs
from vk_provider.runtime.types import ContainerConfigError, ContainerCreateError, LinuxResources

# Where the runtime mounts a new disk emptyDir in the never-started container that sets its root.
VOLUME_ROOT_PATH = "vk-volume-root"
SANDBOX_MEMORY_PATH = "/vk-memory-volumes"  # where the sandbox holds the Memory emptyDirs
PROPAGATION = {
    Propagation.PRIVATE: "",
    Propagation.HOST_TO_CONTAINER: ",rslave",
    Propagation.BIDIRECTIONAL: ",rshared",
}


@dataclass(frozen=True)
class SubPathMount:
    """One volumeMount's sub-path, for the shell to turn into the host path the engine binds."""

    source: str  # the volume's directory on the engine's host
    sub: str  # checked: relative, no `..` (runtime/subpaths.subpath_of)
    volume: str
    container: str
    index: int  # of the mount in the container's volumeMounts
    writable: bool  # a volume pods can write (emptyDir, hostPath): its directories can be swapped


SubPathResolver = Callable[[SubPathMount], str]


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
    mode: int = 0o777
    gid: int = 0

    @property
    def memory(self) -> bool:
        return self.driver_opts.get("type") == "tmpfs"


def dns_kwargs(dns: ResolvConf | None) -> dict[str, Any]:
    """The sandbox's resolver configuration as Docker's `dns`, `dns_search` and `dns_opt`. None
    gives none: Docker then copies its host's resolv.conf. Docker takes its host's value of each
    one left out, so empty searches are `.` (no search domains rather than the engine's); empty
    nameservers or options cannot be said and stay the engine's."""
    if dns is None:
        return {}
    out: dict[str, Any] = {"dns_search": list(dns.searches) or ["."]}
    if dns.servers:
        out["dns"] = list(dns.servers)
    if dns.options:
        out["dns_opt"] = list(dns.options)
    return out


def published_ports(mappings: tuple[PortMapping, ...]) -> dict[str, list[Any]]:
    """The hostPorts as published ports of the sandbox."""
    ports: dict[str, list[Any]] = {}
    for p in mappings:
        binding: Any = (p.host_ip, p.host_port) if p.host_ip else p.host_port
        ports.setdefault(f"{p.container_port}/{p.protocol.lower()}", []).append(binding)
    return ports


def emptydir_docker_prefix(uid: str) -> str:
    """What the Docker volume names of a pod's emptyDirs start with (then the volume's name)."""
    return f"k8s_{uid}_"


def emptydir_volumes(
    config: SandboxConfig, node_name: str, podman_page_size: int | None = None
) -> list[VolumeSpec]:
    """One Docker volume per emptyDir, labelled like the pod's containers; a Memory one is a
    tmpfs whose mount options give its root its mode and group, and its size limit as `size`.
    On Podman (`podman_page_size`: this host's page size) the size limit is the same in pages
    (`nr_blocks`: Podman's local driver takes a `size` for a disk quota and refuses it where
    there is none), and a disk one names its root's owner, root and the pod's group
    (`o=uid=0,gid=...`): else Podman gives an empty volume's root the owner and mode of the
    first container's user or of the image's directory it is mounted over."""
    out = []
    for vol in config.empty_dirs:
        opts: dict[str, str] = {}
        if vol.memory:
            options = [f"mode={vol.mode:o}", "uid=0", f"gid={vol.gid}"]
            if vol.size_limit and podman_page_size:
                options.insert(0, f"nr_blocks={-(-vol.size_limit // podman_page_size)}")
            elif vol.size_limit:
                options.insert(0, f"size={vol.size_limit}")
            opts = {"type": "tmpfs", "device": "tmpfs", "o": ",".join(options)}
        elif podman_page_size:
            opts = {"o": f"uid=0,gid={vol.gid}"}
        out.append(
            VolumeSpec(
                pod_volume=vol.name,
                docker_name=emptydir_docker_prefix(config.metadata.uid) + vol.name,
                labels=lb.pod_labels(node_name, config.metadata),
                driver_opts=opts,
                mode=vol.mode,
                gid=vol.gid,
            )
        )
    return out


def engine_runtime(docker: DockerConfig, handler: str) -> str:
    """The engine runtime that runs RuntimeClass handler `handler` (`docker.runtimes`; "": the
    engine's default). A handler the node lacks fails as containerd's RunPodSandbox does."""
    if not handler:
        return ""
    runtime = docker.runtimes.get(handler)
    if runtime is None:
        raise ContainerCreateError(f'failed to get sandbox runtime: no runtime for "{handler}" is configured')
    return runtime


def sandbox_create_kwargs(
    config: SandboxConfig,
    *,
    node_name: str,
    docker: DockerConfig,
    attempt: int,
    network: str = "",
    cgroup_parent: str = "",
) -> dict[str, Any]:
    """`network` is the one the sandbox joins (`pod_network`: the node's pod network; empty:
    `docker.network`); `cgroup_parent` the pod cgroup it runs in ("": none)."""
    kwargs: dict[str, Any] = {
        "image": docker.sandbox_image,
        "name": lb.sandbox_name(config.metadata, attempt),
        "labels": lb.sandbox_labels(
            node_name, config.metadata, attempt, docker.sandbox_image, config.runtime_handler
        ),
        "ipc_mode": "host" if config.host_ipc else "shareable",
        **dns_kwargs(config.dns),
    }
    runtime = engine_runtime(docker, config.runtime_handler)
    if runtime:
        kwargs["runtime"] = runtime
    if cgroup_parent:
        kwargs["cgroup_parent"] = cgroup_parent
    if config.host_network:
        kwargs["network_mode"] = "host"
    else:
        kwargs["network_mode"] = network or docker.network
        kwargs["hostname"] = config.hostname
        # With no network (CNI mode), the portmap plugin publishes them.
        ports = published_ports(config.port_mappings) if kwargs["network_mode"] != "none" else {}
        if ports:
            kwargs["ports"] = ports
    if config.host_pid:
        kwargs["pid_mode"] = "host"
    # Docker's own /etc/hosts (a host-network pod's, or where the shell has no managed file).
    if config.host_aliases:
        kwargs["extra_hosts"] = [f"{host}:{ip}" for host, ip in config.host_aliases]
    if config.sysctls:
        kwargs["sysctls"] = dict(config.sysctls)
    # Docker unmounts a tmpfs volume when no container holds it, and its files go: the sandbox
    # holds the pod's Memory emptyDirs, so they live as long as the pod, as the kubelet's do.
    memory = [
        f"{v.docker_name}:{SANDBOX_MEMORY_PATH}/{v.pod_volume}:rw,nocopy"
        for v in emptydir_volumes(config, node_name)
        if v.memory
    ]
    if memory:
        kwargs["volumes"] = memory
    return kwargs


def resource_kwargs(resources: LinuxResources) -> dict[str, Any]:
    """The memory limit (no extra swap), the CFS quota and period, the CPU shares: create kwargs,
    and docker-py's `update_container` arguments of an in-place resize (the swap limit moves
    with the memory limit; a limit Docker has none of stays unset)."""
    out: dict[str, Any] = {}
    if resources.memory_limit:
        out["mem_limit"] = out["memswap_limit"] = resources.memory_limit
    if resources.cpu_quota:
        out["cpu_quota"], out["cpu_period"] = resources.cpu_quota, resources.cpu_period
    out["cpu_shares"] = resources.cpu_shares
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


def _source(
    config: ContainerConfig,
    m: Mount,
    volumes_root: str | None,
    emptydir_dirs: Mapping[str, str],
) -> tuple[str, str]:
    """(what Docker binds, its mode) for a mount before its sub-path."""
    mode = "ro" if m.read_only else "rw"
    if m.kind == MountKind.HOST_PATH:
        return m.host_path, mode
    if m.kind == MountKind.EMPTY_DIR and m.sub_path:
        host_dir = emptydir_dirs.get(m.volume)
        if host_dir is None:
            raise ContainerConfigError(
                f"{m.field}.subPath: subPath on emptyDir volume {m.volume!r} needs its Docker "
                "volume's directory on this host (a local engine whose data root the provider "
                "sees; not a Memory emptyDir)"
            )
        return host_dir, mode
    if m.kind == MountKind.EMPTY_DIR:
        # An emptyDir starts empty: no copy of the image's directory (nor its owner and mode).
        return emptydir_docker_prefix(config.metadata.uid) + m.volume, mode + ",nocopy"
    if volumes_root is None:  # an engine without our filesystem: the shipped Docker volume
        if m.sub_path:
            raise ContainerConfigError(
                f"{m.field}.subPath: subPath on a {m.api_type} volume needs a local engine "
                "(docker.engineLocation)"
            )
        return lb.volume_name(config.metadata, m.volume), "ro,nocopy"
    return f"{volumes_root}/{m.volume}", "ro"


def volume_binds(
    config: ContainerConfig,
    volumes_root: str | None = None,
    resolve_subpath: SubPathResolver | None = None,
    emptydir_dirs: Mapping[str, str] | None = None,
) -> list[str]:
    """Docker bind strings for the container's mounts.

    emptyDir volumes are Docker volumes (`nocopy`: not filled from the image), hostPath volumes
    bind the host path. The files of API-backed volumes were written by the pod worker under
    `volumes_root/<volume>`, or, with no `volumes_root` (an engine that does not share our
    filesystem), shipped into the Docker volume `labels.volume_name` (`shipped_volumes`); a
    sub-path of those binds what it names at start time (it follows no later update, as with
    the kubelet); a sub-path of a shipped one is refused (ContainerConfigError).

    An emptyDir mounted with a sub-path is bound from the host directory of its Docker volume,
    `emptydir_dirs[volume]` (the local driver's Mountpoint, when this process sees it): Docker
    before API 1.45 cannot mount part of a named volume. Without it the mount is refused, as it
    is for a Memory emptyDir, whose tmpfs is only mounted while a container mounts the volume
    itself. `resolve_subpath(SubPathMount)` gives the host path to bind, one a pod cannot swap
    (the shell's `subpath_mounts.bind_subpath` on a local engine); without it (an engine on
    another host) a sub-path is refused, since nothing on the engine's host would check it.
    """
    binds = []
    for m in config.mounts:
        source, mode = _source(config, m, volumes_root, emptydir_dirs or {})
        if m.sub_path:
            if resolve_subpath is None:
                raise ContainerConfigError(
                    f"{m.field}.subPath: subPath on volume {m.volume!r} needs a local engine "
                    "(docker.engineLocation): the provider checks and binds it on the engine's host"
                )
            writable = m.kind != MountKind.API
            source = resolve_subpath(
                SubPathMount(source, m.sub_path, m.volume, config.name, m.index, writable)
            )
        binds.append(f"{source}:{m.container_path}:{mode}{PROPAGATION[m.propagation]}")
    return binds


def _pid_mode(config: ContainerConfig) -> str | None:
    return {
        PidNamespace.POD: f"container:{config.sandbox.container_id}",
        PidNamespace.NODE: "host",
        PidNamespace.TARGET: f"container:{config.target_container_id}",
    }.get(config.pid_namespace)


def container_create_kwargs(
    config: ContainerConfig,
    *,
    node_name: str,
    termination_file: str | None,
    volumes_root: str | None = None,
    resolve_subpath: SubPathResolver | None = None,
    seccomp_json: str | None = None,
    hosts_file: str | None = None,
    emptydir_dirs: Mapping[str, str] | None = None,
    resolv_file: str | None = None,
    runtime: str = "",
) -> dict[str, Any]:
    """docker-py create kwargs for one container instance joining its pod's sandbox.

    `hosts_file` is the file the shell wrote the config's managed /etc/hosts to; `resolv_file`
    the pod's resolv.conf (`pod_resolv.resolv_file`), mounted over /etc/resolv.conf when the
    config asks; `seccomp_json` the text of its Localhost seccomp profile, read by the shell;
    `resolve_subpath` is volume_binds'; `runtime` the engine runtime of its sandbox's handler
    (`engine_runtime`; "": the default).
    """
    sandbox = config.sandbox.container_id
    kwargs: dict[str, Any] = {
        "image": config.image,
        "name": lb.container_name(config.metadata, config.name, config.attempt),
        "labels": lb.container_labels(
            node_name,
            config.metadata,
            config.name,
            config.role,
            config.attempt,
            config.image,
            config.spec_hash,
        ),
        "environment": [f"{k}={v}" for k, v in config.env],
        "network_mode": f"container:{sandbox}",
        "ipc_mode": f"container:{sandbox}",
        "tty": config.tty,
        "stdin_open": config.stdin,
    }
    if runtime:
        kwargs["runtime"] = runtime
    if config.sandbox.cgroup_parent:  # the pod cgroup its sandbox runs in
        kwargs["cgroup_parent"] = config.sandbox.cgroup_parent
    if config.stdin and not config.stdin_once:
        # docker-py sets StdinOnce (the engine closes the container's stdin when the first
        # attach session's stdin ends) to `stdin_open and not detach`: only for `stdinOnce`,
        # as the CRI's ContainerConfig.stdin_once.
        kwargs["detach"] = True
    pid_mode = _pid_mode(config)
    if pid_mode is not None:
        kwargs["pid_mode"] = pid_mode
    if config.command is not None:
        kwargs["entrypoint"] = list(config.command)
        kwargs["command"] = list(config.args or ())
    elif config.args is not None:
        kwargs["command"] = list(config.args)
    if config.working_dir:
        kwargs["working_dir"] = config.working_dir
    kwargs.update(resource_kwargs(config.resources))
    if config.oom_score_adj is not None:
        kwargs["oom_score_adj"] = config.oom_score_adj
    kwargs.update(security_kwargs(config.security, seccomp_json))
    binds = volume_binds(config, volumes_root, resolve_subpath, emptydir_dirs)
    if termination_file:
        binds.append(f"{termination_file}:{config.termination_message_path}:rw")
        kwargs["labels"][lb.TERMINATION_MESSAGE_FILE] = termination_file
    if hosts_file and config.hosts_file is not None:
        binds.append(f"{hosts_file}:{ETC_HOSTS}:rw")
    if resolv_file and config.mount_resolv_conf:
        binds.append(f"{resolv_file}:{ETC_RESOLV_CONF}:rw")
    if config.termination_message_policy:
        kwargs["labels"][lb.TERMINATION_MESSAGE_POLICY] = config.termination_message_policy
    if binds:
        kwargs["volumes"] = binds
    return kwargs
