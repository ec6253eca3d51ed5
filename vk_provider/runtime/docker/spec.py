"""A pod and its containers → Docker create arguments (pure).

What lives here: the security allowances check (`check_pod_allowed`, raising
`PodSpecRefused` naming the field; with reason `SysctlForbidden` for a sysctl outside the
kubelet's allow-list, `sysctls.forbidden_sysctl`), the sandbox's create kwargs (image,
hostname, DNS, host aliases, published hostPorts, network, sysctls, the Memory emptyDirs it
holds), one container's create kwargs from a `ContainerLaunch` (entrypoint/cmd, env, workdir,
tty/stdin, namespaces joined from the sandbox, resources by the kubelet's formulas,
securityContext, volume mounts with their checked subPath/subPathExpr (`paths.subpath_of`),
the termination message file), the pod's emptyDir volumes (`emptydir_volumes`: the kubelet's
mode and fsGroup of their root, as tmpfs options or as the tar entry and helper container
kwargs the shell applies to a new disk volume), and the container spec hash. The
securityContext is the kubelet's effective one (the container's over the pod's), and
runAsNonRoot is verified as the kubelet does against the image's user, which the shell
inspects when `needs_image_user` says so (`verify_run_as_non_root`: CreateContainerConfigError).
The kwargs are those of docker-py's `containers.create`. Must not: call Docker or touch
the filesystem; the shell passes in what it created (sandbox id, volume names, files)
and the function that resolves a subPath on the host.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import tarfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.hostpaths import subpath_of
from vk_provider.quantity import parse_quantity
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.protocol import ContainerLaunch
from vk_provider.runtime.types import (
    API_VOLUME_TYPES,
    ContainerConfigError,
    ContainerRole,
    PodSpecRefused,
    spec_list,
)
from vk_provider.sysctls import POD_REJECTED, SYSCTL_FORBIDDEN, forbidden_sysctl

# Upstream: pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares, MilliCPUToQuota).
MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
QUOTA_PERIOD = 100000
MIN_QUOTA_PERIOD = 1000
HOSTNAME_MAX = 63
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"


# (volume's host directory, checked sub-path, volume name, container name) -> host path to bind.
SubPathResolver = Callable[[str, str, str, str], str]


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


def _containers(pod: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(field path, container) of init, app, then ephemeral containers."""
    spec = _spec(pod)
    keys = ("initContainers", "containers", "ephemeralContainers")
    return [(f"spec.{key}[{i}]", c) for key in keys for i, c in enumerate(spec.get(key) or [])]


def container_field_path(pod: Mapping[str, Any], role: ContainerRole, name: str) -> str:
    key = spec_list(role)
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
    """Refuse what the node's security allowances forbid (docs/security.md: what is refused by default).

    Sysctls first, as the kubelet's admission: one outside the allow-list (the safe ones plus
    `allow.unsafe_sysctls`) fails the pod with reason SysctlForbidden and the kubelet's message.
    """
    sysctl = forbidden_sysctl(pod, allow.unsafe_sysctls)
    if sysctl is not None:
        raise PodSpecRefused(f"{POD_REJECTED}{sysctl}", SYSCTL_FORBIDDEN)
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


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


# pkg/securitycontext/util.go DetermineEffectiveSecurityContext: the pod's fields a container
# inherits, and the container's fields that replace them.
_POD_SC_FIELDS = ("seLinuxOptions", "windowsOptions", "runAsUser", "runAsGroup", "runAsNonRoot")
_CONTAINER_SC_FIELDS = (
    *_POD_SC_FIELDS,
    "capabilities",
    "privileged",
    "readOnlyRootFilesystem",
    "allowPrivilegeEscalation",
    "procMount",
)
MAX_USER_ID = 2**31 - 1  # apimachinery validation IsValidUserID: 0..math.MaxInt32
_NUMERIC_USER = re.compile(r"[+-]?[0-9]{1,19}")  # strconv.ParseInt(user, 10, 64)


def effective_security_context(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    """The kubelet's effective securityContext of a container: the container's over the pod's."""
    pod_sc = _spec(pod).get("securityContext")
    sc = container.get("securityContext")
    if pod_sc is None:
        return dict(sc or {})
    out = {k: pod_sc[k] for k in _POD_SC_FIELDS if pod_sc.get(k) is not None}
    out.update({k: (sc or {})[k] for k in _CONTAINER_SC_FIELDS if (sc or {}).get(k) is not None})
    return out


def needs_image_user(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    """Whether the image's user matters: no runAsUser, and runAsNonRoot or a runAsGroup."""
    sc = effective_security_context(pod, container)
    return sc.get("runAsUser") is None and (
        sc.get("runAsNonRoot") is True or sc.get("runAsGroup") is not None
    )


def image_user_id(image_user: str | None) -> tuple[int | None, str]:
    """(uid, user name) of an image's `Config.User`, as the kubelet gets it from the CRI.

    The part before `:`; numeric is a uid, anything else a user name; none at all is root
    (containerd's getUserFromImage, then kuberuntime's getImageUser).
    """
    user = (image_user or "").split(":")[0]
    if not user:
        return 0, ""
    if _NUMERIC_USER.fullmatch(user) and -(2**63) <= int(user) < 2**63:
        return int(user), ""
    return None, user


def verify_run_as_non_root(
    pod: Mapping[str, Any], container: Mapping[str, Any], image_user: str | None
) -> str | None:
    """The kubelet's verifyRunAsNonRoot: why the container must not run, or None.

    Upstream: pkg/kubelet/kuberuntime/security_context_others.go. `image_user` is the image's
    `Config.User` ("" when unset: root; None when it was not looked up: taken as root too).
    """
    sc = effective_security_context(pod, container)
    if sc.get("runAsNonRoot") is not True:
        return None
    meta = pod.get("metadata") or {}
    pod_name = f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"  # format.Pod
    where = f"(pod: {json.dumps(pod_name)}, container: {container.get('name', '')})"  # %q of it
    if sc.get("runAsUser") is not None:
        if int(sc["runAsUser"]) == 0:
            return f"container's runAsUser breaks non-root policy {where}"
        return None
    uid, username = image_user_id(image_user)
    if uid is None:
        return (
            f"container has runAsNonRoot and image has non-numeric user ({username}), "
            f"cannot verify user is non-root {where}"
        )
    if uid == 0:
        return f"container has runAsNonRoot and image will run as root {where}"
    if not 0 <= uid <= MAX_USER_ID:
        return (
            f"container has runAsNonRoot and image has an invalid user id ({uid}). "
            f"(Must be 1-({MAX_USER_ID})): must be between 0 and {MAX_USER_ID}, inclusive {where}"
        )
    return None


def security_kwargs(
    pod: Mapping[str, Any], container: Mapping[str, Any], image_user: str | None = None
) -> dict[str, Any]:
    """The effective securityContext (runAsUser/Group, groups, caps, ro rootfs) as create kwargs.

    Raises ContainerConfigError when runAsNonRoot forbids the user. A runAsGroup without a
    runAsUser goes with the image's user (`image_user`), as the kubelet sets it.
    """
    problem = verify_run_as_non_root(pod, container, image_user)
    if problem is not None:
        raise ContainerConfigError(problem)
    pod_sc = _spec(pod).get("securityContext") or {}
    sc = container.get("securityContext") or {}
    effective = effective_security_context(pod, container)
    out: dict[str, Any] = {}
    user = _int_or_none(effective.get("runAsUser"))
    group = _int_or_none(effective.get("runAsGroup"))
    if user is not None:
        out["user"] = f"{user}:{group}" if group is not None else str(user)
    elif group is not None:
        uid, username = image_user_id(image_user)
        out["user"] = f"{uid if uid is not None else username}:{group}"
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


def emptydir_root(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(mode, gid) of an emptyDir's root as the kubelet leaves it: 0777 root's, or with the
    pod's fsGroup 02777 that group's (the directory's rwx bits already hold rwMask | execMask)."""
    group = (_spec(pod).get("securityContext") or {}).get("fsGroup")
    if group is None:
        return EMPTYDIR_MODE, 0
    return EMPTYDIR_MODE | SETGID, int(group)


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
                docker_name=f"k8s_{meta.get('uid', '')}_{vol['name']}",
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


def volume_binds(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    field: str,
    node_name: str,
    volumes_root: str | None = None,
    env: Sequence[tuple[str, str]] = (),
    resolve_subpath: SubPathResolver | None = None,
) -> list[str]:
    """Docker bind strings for the container's volumeMounts.

    emptyDir volumes are Docker volumes (`nocopy`: not filled from the image), hostPath
    volumes bind the host path. The files of
    volumes whose content comes from the API (configMap, secret, projected, downwardAPI) were
    written by the pod worker under `volumes_root/<volume>`; they are always mounted
    read-only, as the kubelet does. A subPath of those binds what it names at start time
    (it follows no later update, as with the kubelet).

    `subPath` (or `subPathExpr`, expanded from `env`) may not be absolute nor hold `..`
    (ContainerConfigError, whatever the volume type). `resolve_subpath(volume dir, sub,
    volume, container)` gives the host path to bind once symlinks are resolved, refusing one
    outside the volume (the shell passes `paths.resolve_subpath` for a local engine); without
    it the sub-path is joined as written.
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
        if "hostPath" in vol:
            source = str(vol["hostPath"].get("path", ""))
        elif vol["name"] in emptydirs:
            if sub:
                raise ContainerConfigError(
                    f"{where}.subPath: subPath on emptyDir volumes is not supported yet"
                )
            source = emptydirs[vol["name"]]
            # An emptyDir starts empty: no copy of the image's directory (nor its owner and mode).
            mode += ",nocopy"
        elif any(t in vol for t in API_VOLUME_TYPES):
            if volumes_root is None:
                continue  # no host directory (remote engine): the pod worker reports FailedMount
            source = f"{volumes_root}/{vol['name']}"
            mode = "ro"
        else:
            continue
        if sub:
            if resolve_subpath is None:
                source = f"{source.rstrip('/')}/{sub}"
            else:
                source = resolve_subpath(source, sub, str(vol["name"]), str(container.get("name", "")))
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
) -> dict[str, Any]:
    """docker-py create kwargs for one container instance joining its pod's sandbox.

    `image_user` is the image's `Config.User`, looked up by the shell when `needs_image_user`;
    `resolve_subpath` is volume_binds'.
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
    kwargs.update(security_kwargs(pod, c, image_user))
    binds = volume_binds(pod, c, field, node_name, volumes_root, launch.env, resolve_subpath)
    if termination_file:
        path = str(c.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH)
        binds.append(f"{termination_file}:{path}:rw")
        kwargs["labels"][lb.TERMINATION_MESSAGE_FILE] = termination_file
    if c.get("terminationMessagePolicy"):
        kwargs["labels"][lb.TERMINATION_MESSAGE_POLICY] = str(c["terminationMessagePolicy"])
    if binds:
        kwargs["volumes"] = binds
    return kwargs
