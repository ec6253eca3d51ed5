"""A container's resolved security → Docker's create options, and the host's security facts (pure).

What lives here: `host_security(info)`, what Docker's `info` `SecurityOptions` say the host
enforces (AppArmor, SELinux, userns-remap), and `security_kwargs(security, seccomp_json)`, one
`ContainerSecurity` as docker-py's `containers.create` arguments: `user`, `group_add`,
`cap_add` / `cap_drop`, `read_only`, `privileged` and `security_opt` (no-new-privileges,
seccomp (`unconfined`, or a Localhost profile's JSON text, read by the shell), apparmor, SELinux
`label=` options, `systempaths=unconfined`). Must not: decide anything about the pod: the
kuberuntime layer resolved it (`kuberuntime/security.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.runtime.configs import LOCALHOST, UNCONFINED, ContainerSecurity, HostSecurity


def host_security(info: Mapping[str, Any]) -> HostSecurity:
    """`SecurityOptions` entries look like `name=apparmor`, `name=seccomp,profile=builtin`."""
    names = set()
    for option in info.get("SecurityOptions") or []:
        for part in str(option).split(","):
            key, _, value = part.partition("=")
            if key == "name":
                names.add(value)
    return HostSecurity(apparmor="apparmor" in names, selinux="selinux" in names, userns="userns" in names)


def _security_opts(security: ContainerSecurity, seccomp_json: str | None) -> list[str]:
    opts = ["no-new-privileges"] if security.no_new_privileges else []
    seccomp = security.seccomp
    if seccomp is not None and seccomp.type == UNCONFINED:
        opts.append("seccomp=unconfined")
    elif seccomp is not None and seccomp.type == LOCALHOST and seccomp_json is not None:
        opts.append(f"seccomp={seccomp_json}")
    apparmor = security.apparmor
    if apparmor is not None and apparmor.type == UNCONFINED:
        opts.append("apparmor=unconfined")
    elif apparmor is not None and apparmor.type == LOCALHOST:
        opts.append(f"apparmor={apparmor.localhost}")
    # Docker applies SELinux labels on an SELinux host and ignores them elsewhere, as the CRI does.
    opts += [f"label={key}:{value}" for key, value in security.selinux]
    if security.unmasked_proc:
        opts.append("systempaths=unconfined")  # no masked nor read-only /proc paths
    return opts


def security_kwargs(security: ContainerSecurity, seccomp_json: str | None = None) -> dict[str, Any]:
    """`security` as create kwargs; `seccomp_json` is the text of its Localhost seccomp profile."""
    out: dict[str, Any] = {}
    if security.user:
        out["user"] = security.user
    if security.groups:
        out["group_add"] = list(security.groups)
    if security.read_only_rootfs:
        out["read_only"] = True
    if security.privileged:
        out["privileged"] = True
    if security.cap_add:
        out["cap_add"] = list(security.cap_add)
    if security.cap_drop:
        out["cap_drop"] = list(security.cap_drop)
    opts = _security_opts(security, seccomp_json)
    if opts:
        out["security_opt"] = opts
    return out
