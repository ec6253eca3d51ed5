"""A volumeMount's subPath: the kubelet's rules and the check of where it leads.

What lives here: `subpath_of(mount, env)` (a volumeMount's `subPath`, or its `subPathExpr`
expanded from the container's environment, refused when absolute or holding a `..` component,
with the kubelet's messages; `check_subpath`, `expand_subpath_expr`), and the blocking
`resolve_subpath(base, sub, …)`: where a subPath leads once every symlink is resolved, refused
(`SubPathError`, CreateContainerConfigError) when it leaves the volume's directory (a check
only: the path it returns can be swapped afterwards, so what a container gets is
`runtime.subpath_mounts`' bind of the opened path).
Must not: log, or act on anything outside the directory it was given.

Upstream: pkg/kubelet/kubelet_pods.go (makeMounts), pkg/volume/util/subpath/subpath_linux.go
(doBindSubPath, safeOpenSubPath), pkg/volume/validation/pv_validation.go
(ValidatePathNoBacksteps), pkg/kubelet/container/helpers.go (ExpandContainerVolumeMounts).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from vk_common.expansion import expand
from vk_common.guarded_paths import within
from vk_provider.runtime.types import ContainerConfigError


class SubPathError(ContainerConfigError):
    """A subPath that resolves outside its volume. `message` is the kubelet's (it names no
    host path); `detail` says where it led, for the log only."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


def check_subpath(sub: str) -> None:
    """makeMounts' checks: no absolute path, no `..` component (ValidatePathNoBacksteps)."""
    if sub.startswith("/"):
        raise ContainerConfigError(f"error SubPath `{sub}` must not be an absolute path")
    if ".." in sub.replace("\\", "/").split("/"):
        raise ContainerConfigError(f"unable to provision SubPath `{sub}`: must not contain '..'")


def expand_subpath_expr(expr: str, env: Sequence[tuple[str, str]]) -> str:
    """ExpandContainerVolumeMounts: `$(VAR)` from the container's environment; a missing or
    empty variable is an error naming every such variable."""
    values = dict(env)  # a later definition wins, as in envVarsToMap
    missing: set[str] = set()

    def lookup(name: str) -> str:
        value = values.get(name, "")
        if not value:
            missing.add(name)
        return value

    expanded = expand(expr, lookup)
    if missing:
        raise ContainerConfigError(f"missing value for {', '.join(sorted(missing))}")
    return expanded


def subpath_of(mount: Mapping[str, Any], env: Sequence[tuple[str, str]]) -> str:
    """The checked sub-path a volumeMount names ("" for the whole volume); subPathExpr wins."""
    sub = str(mount.get("subPath") or "")
    expr = str(mount.get("subPathExpr") or "")
    if expr:
        sub = expand_subpath_expr(expr, env)
    if sub:
        check_subpath(sub)
    return sub


def resolve_subpath(base: str, sub: str, volume: str, container: str) -> str:
    """The host path to bind for `sub` of the volume directory `base`, every symlink resolved.

    `sub` has passed `check_subpath`. A path that does not exist (yet) resolves as far as it
    exists. Refused with SubPathError when the result is not inside the resolved `base`.
    """
    real_base = os.path.realpath(base)
    real = os.path.realpath(os.path.join(real_base, sub))
    if not within(real, real_base):
        raise SubPathError(
            f'failed to prepare subPath for volumeMount "{volume}" of container "{container}"',
            f"subpath {os.path.join(base, sub)!r} resolves to {real!r}, not within volume path {real_base!r}",
        )
    return real
