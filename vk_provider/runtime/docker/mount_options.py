"""A volumeMount's propagation and recursive read-only mode → Docker bind options (pure).

What lives here: `bind_options(container, mount, where)`, the options a bind string gets after
its `ro`/`rw` for `mountPropagation` (None → Docker's default rprivate, HostToContainer →
`rslave`, Bidirectional → `rshared`, only for a privileged container) and the check of
`recursiveReadOnly`: this runtime creates binds through Docker's `Binds` (engine API 1.41 and
up), which cannot ask for a recursively read-only mount, so it does not support RRO: `Enabled`
fails as the kubelet's makeMounts fails on such a runtime, `IfPossible` falls back to the
plain (non-recursive) read-only bind. Errors are `ContainerConfigError` with the kubelet's text.
Which volume types may propagate at all is `unsupported.check_pod_supported`'s.
Must not: call Docker or look at the filesystem.

Upstream: pkg/kubelet/kubelet_pods.go (translateMountPropagation, resolveRecursiveReadOnly,
makeMounts), pkg/apis/core/validation/validation.go (validateMountPropagation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.runtime.types import ContainerConfigError

# v1.MountPropagationMode -> Docker's bind propagation ("": the default, rprivate).
PROPAGATION = {"None": "", "HostToContainer": "rslave", "Bidirectional": "rshared"}
RRO_MODES = ("Disabled", "IfPossible", "Enabled")
RUNTIME_SUPPORTS_RRO = False  # Binds cannot carry ReadOnlyForceRecursive (engine API >= 1.44 Mounts only)


def _privileged(container: Mapping[str, Any]) -> bool:
    return bool((container.get("securityContext") or {}).get("privileged"))


def _check_recursive_read_only(mount: Mapping[str, Any]) -> None:
    """kubelet_pods.go resolveRecursiveReadOnly with a runtime without RRO support."""
    mode = mount.get("recursiveReadOnly")
    if mode is None or mode == "Disabled":
        return
    name = mount.get("name")
    prefix = "failed to resolve recursive read-only mode: "
    if not mount.get("readOnly"):
        raise ContainerConfigError(
            f'{prefix}volume "{name}" requested recursive read-only mode, but it is not read-only'
        )
    propagation = mount.get("mountPropagation")
    if propagation not in (None, "None"):
        raise ContainerConfigError(
            f'{prefix}volume "{name}" requested recursive read-only mode, but it is not compatible '
            f'with propagation "{propagation}"'
        )
    if mode == "Enabled" and not RUNTIME_SUPPORTS_RRO:
        raise ContainerConfigError(
            f'{prefix}volume "{name}" requested recursive read-only mode, but it is not supported '
            "by the runtime"
        )
    if mode not in RRO_MODES:
        raise ContainerConfigError(f'{prefix}unknown recursive read-only mode "{mode}"')


def bind_options(container: Mapping[str, Any], mount: Mapping[str, Any], where: str) -> str:
    """What the bind string of `mount` (at field path `where`) adds after its mode: "" or
    ",rslave" / ",rshared"."""
    _check_recursive_read_only(mount)
    propagation = mount.get("mountPropagation")
    if propagation is None:
        return ""
    if propagation not in PROPAGATION:
        raise ContainerConfigError(f'invalid MountPropagation mode: "{propagation}"')
    if propagation == "Bidirectional" and not _privileged(container):
        raise ContainerConfigError(
            f"{where}.mountPropagation: Forbidden: Bidirectional mount propagation is available "
            "only to privileged containers"
        )
    option = PROPAGATION[str(propagation)]
    return f",{option}" if option else ""
