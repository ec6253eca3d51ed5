"""Sysctls: the kubelet's admission allow-list (pkg/kubelet/sysctl in Kubernetes v1.37.2).

What lives here: the safe set (`SAFE_SYSCTLS`), which sysctls are namespaced and in which
namespace, name normalisation, the `docker.allow.unsafeSysctls` pattern rule
(`sysctl_pattern_problem`) and the admission decision for a pod (`forbidden_sysctl`), with
the kubelet's reason and message prefix. Pure functions, shared by the config loader and
the Docker runtime. Must not: import the provider's layers or do I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

SYSCTL_FORBIDDEN = "SysctlForbidden"  # allowlist.go ForbiddenReason
POD_REJECTED = "Pod was rejected: "  # kubelet.go rejectPod: the status message of a rejected pod
# safe_sysctls.go safeSysctls: namespaced and isolated from other pods, so always allowed. The
# kubelet drops a commented one on a kernel older than the version that namespaced it
# (pkg/util/kernel/constants.go); the engines this provider drives run newer kernels.
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",  # 3.16
    "net.ipv4.tcp_keepalive_time",  # 4.5
    "net.ipv4.tcp_fin_timeout",  # 4.6
    "net.ipv4.tcp_keepalive_intvl",  # 4.5
    "net.ipv4.tcp_keepalive_probes",  # 4.5
    "net.ipv4.tcp_rmem",  # 4.15
    "net.ipv4.tcp_wmem",  # 4.15
    "net.ipv4.tcp_slow_start_after_idle",  # 4.15
    "net.ipv4.tcp_notsent_lowat",  # 4.6
)
# component-helpers node/util/sysctl/namespace.go: the sysctls known to be namespaced.
_SYSCTL_NAMESPACES = {
    "kernel.domainname": "UTS",
    "kernel.sem": "IPC",
    "kernel.shmall": "IPC",
    "kernel.shmmax": "IPC",
    "kernel.shmmni": "IPC",
    "kernel.shm_rmid_forced": "IPC",
    "kernel.shm": "IPC",
    "kernel.msgmax": "IPC",
    "kernel.msgmnb": "IPC",
    "kernel.msgmni": "IPC",
    "kernel.msg": "IPC",
}
_SYSCTL_PREFIX_NAMESPACES = {"net": "Net", "fs.mqueue": "IPC", "user": "User"}
# pkg/apis/policy/validation IsValidSysctlPattern (SysctlContainSlashPatternFmt, SysctlMaxLength).
SYSCTL_MAX_LENGTH = 253
_SYSCTL_PATTERN_FMT = r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"
_SYSCTL_PATTERN = re.compile(_SYSCTL_PATTERN_FMT)


def _go_quote(text: str) -> str:
    """Go's %q for the names that reach a message (printable text stays as it is)."""
    return json.dumps(text, ensure_ascii=False)


def normalize_sysctl(name: str) -> str:
    """NormalizeName: `net/ipv4/conf/eno2.100/rp_filter` -> `net.ipv4.conf.eno2/100.rp_filter`."""
    first = next((i for i, ch in enumerate(name) if ch in "./"), -1)
    if first == -1 or name[first] == ".":
        return name
    return name.translate(str.maketrans("./", "/."))


def sysctl_namespace(name: str) -> str:
    """The kernel namespace (`IPC`, `Net`, `UTS`, `User`) of a normalized sysctl; "" when unknown."""
    if name in _SYSCTL_NAMESPACES:
        return _SYSCTL_NAMESPACES[name]
    for prefix, namespace in _SYSCTL_PREFIX_NAMESPACES.items():
        if name.startswith(f"{prefix}."):
            return namespace
    return ""


def _allowlist_entry(pattern: str) -> tuple[str, str, bool]:
    """GetNamespace: (namespace, the sysctl or the prefix before its `*`, whether a prefix)."""
    name = normalize_sysctl(pattern)
    star = name.find("*")
    if star != -1:
        name = name[:star]
    return sysctl_namespace(name), name, star != -1


def sysctl_pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be an allowed unsafe sysctl (`--allowed-unsafe-sysctls`), or None.

    NewAllowlist: a sysctl or a pattern ending in `*` (`kernel.msg*`, `net.*`), in a kernel
    namespace the kubelet knows.
    """
    if len(pattern) > SYSCTL_MAX_LENGTH or not _SYSCTL_PATTERN.fullmatch(pattern):
        return (
            f"sysctl {_go_quote(pattern)} must have at most {SYSCTL_MAX_LENGTH} characters "
            f"and match regex {_SYSCTL_PATTERN_FMT}"
        )
    namespace, name, _ = _allowlist_entry(pattern)
    if not namespace:
        return f"the sysctls {_go_quote(name)} are not known to be namespaced"
    return None


def sysctl_problem(
    name: str, allowed_unsafe: Iterable[str], *, host_network: bool, host_ipc: bool, host_users: bool
) -> str | None:
    """validateSysctl: why sysctl `name` is not allowed, or None.

    Allowed are `SAFE_SYSCTLS` and the `allowed_unsafe` sysctls and patterns, except one of
    the network, IPC or user namespace when the pod shares that namespace with the host.
    """
    name = normalize_sysctl(name)
    exact: dict[str, str] = {}
    prefixes: dict[str, str] = {}
    for pattern in (*SAFE_SYSCTLS, *allowed_unsafe):
        namespace, entry, prefixed = _allowlist_entry(pattern)
        if namespace:  # the configuration refuses the others (sysctl_pattern_problem)
            (prefixes if prefixed else exact)[entry] = namespace
    found = exact.get(name)
    if found is None:
        found = next((ns for prefix, ns in prefixes.items() if name.startswith(prefix)), None)
    if found is None:
        return f"{_go_quote(name)} not allowlisted"
    shared = {"Net": host_network, "IPC": host_ipc, "User": host_users}
    if shared.get(found):
        return f"{_go_quote(name)} not allowed with host {found} enabled"
    return None


def forbidden_sysctl(pod: Mapping[str, Any], allowed_unsafe: Iterable[str]) -> str | None:
    """The kubelet's sysctl admission (allowlist.go Admit): for the first of the pod's
    `spec.securityContext.sysctls` not allowed, the rejection message
    (`forbidden sysctl: "kernel.msgmax" not allowlisted`); None when the pod is admitted.
    `spec.hostUsers` unset means the host's user namespace, as the kubelet reads it."""
    pod_spec = pod.get("spec") or {}
    sysctls = (pod_spec.get("securityContext") or {}).get("sysctls") or []
    allowed = tuple(allowed_unsafe)
    for item in sysctls:
        problem = sysctl_problem(
            str(item.get("name", "")) if isinstance(item, Mapping) else str(item),
            allowed,
            host_network=bool(pod_spec.get("hostNetwork")),
            host_ipc=bool(pod_spec.get("hostIPC")),
            host_users=pod_spec.get("hostUsers") is None or bool(pod_spec.get("hostUsers")),
        )
        if problem is not None:
            return f"forbidden sysctl: {problem}"
    return None
