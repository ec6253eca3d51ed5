"""A container's volumeMounts → resolved `Mount`s, as the kubelet's makeMounts makes them (pure).

What lives here: `container_mounts(pod, container, field, env)`: each volumeMount as a `Mount`
(a hostPath's node path, an emptyDir by name (Memory or disk), an API-backed volume (configMap,
secret, downwardAPI, projected: always read-only, as the kubelet mounts them), its read-only
flag, its `subPath` or `subPathExpr` expanded from the container's environment and checked
(`subpaths.subpath_of`: neither absolute nor holding `..`), and its propagation). A mount of a
volume the pod does not declare fails; volumes of other types (ephemeral claims and the like,
refused earlier by `pods/volume_sources.py`) are left out. `mountPropagation`: None → private,
HostToContainer, Bidirectional (only for a privileged container). `recursiveReadOnly`: the
runtime here cannot make a recursively read-only mount (`RUNTIME_SUPPORTS_RRO`), so `Enabled`
fails as the kubelet's makeMounts fails on such a runtime and `IfPossible` falls back to the
plain read-only mount. Errors are `ContainerConfigError`s with the kubelet's text. Which volume
types may propagate at all is `admission.check_pod_supported`'s.
Must not: call an engine or look at the filesystem: the runtime binds the sub-path safely on its
host when it starts the container.

Upstream: pkg/kubelet/kubelet_pods.go (makeMounts, translateMountPropagation,
resolveRecursiveReadOnly), pkg/apis/core/validation/validation.go (validateMountPropagation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vk_common.objects import spec
from vk_provider.runtime.configs import Mount, MountKind, Propagation
from vk_provider.runtime.subpaths import subpath_of
from vk_provider.runtime.types import API_VOLUME_TYPES, ContainerConfigError

PROPAGATION = {
    "None": Propagation.PRIVATE,
    "HostToContainer": Propagation.HOST_TO_CONTAINER,
    "Bidirectional": Propagation.BIDIRECTIONAL,
}
RRO_MODES = ("Disabled", "IfPossible", "Enabled")
RUNTIME_SUPPORTS_RRO = False  # Docker's Binds cannot carry ReadOnlyForceRecursive


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


def propagation_of(container: Mapping[str, Any], mount: Mapping[str, Any], where: str) -> Propagation:
    """The mount's propagation (at field path `where`), its recursive read-only mode checked."""
    _check_recursive_read_only(mount)
    propagation = mount.get("mountPropagation")
    if propagation is None:
        return Propagation.PRIVATE
    if propagation not in PROPAGATION:
        raise ContainerConfigError(f'invalid MountPropagation mode: "{propagation}"')
    if propagation == "Bidirectional" and not _privileged(container):
        raise ContainerConfigError(
            f"{where}.mountPropagation: Forbidden: Bidirectional mount propagation is available "
            "only to privileged containers"
        )
    return PROPAGATION[str(propagation)]


def _kind(vol: Mapping[str, Any]) -> tuple[MountKind, dict[str, Any]] | None:
    if "hostPath" in vol:
        return MountKind.HOST_PATH, {"host_path": str((vol["hostPath"] or {}).get("path", ""))}
    if "emptyDir" in vol:
        return MountKind.EMPTY_DIR, {"memory": (vol.get("emptyDir") or {}).get("medium") == "Memory"}
    api_type = next((t for t in API_VOLUME_TYPES if t in vol), None)
    if api_type is not None:
        return MountKind.API, {"api_type": api_type}
    return None


def container_mounts(
    pod: Mapping[str, Any], container: Mapping[str, Any], field: str, env: Sequence[tuple[str, str]] = ()
) -> tuple[Mount, ...]:
    """The container's volumeMounts (the container at field path `field`), resolved."""
    volumes = {str(v["name"]): v for v in spec(pod).get("volumes") or []}
    mounts = []
    for j, m in enumerate(container.get("volumeMounts") or []):
        where = f"{field}.volumeMounts[{j}]"
        vol = volumes.get(str(m.get("name")))
        if vol is None:
            raise ContainerConfigError(
                f'{where}.name: volume "{m.get("name")}" is not defined in spec.volumes'
            )
        sub = subpath_of(m, env)
        kind = _kind(vol)
        if kind is None:
            continue
        mount_kind, extra = kind
        mounts.append(
            Mount(
                kind=mount_kind,
                volume=str(vol["name"]),
                container_path=str(m.get("mountPath", "")),
                read_only=bool(m.get("readOnly")) or mount_kind == MountKind.API,
                index=j,
                field=where,
                sub_path=sub,
                propagation=propagation_of(container, m, where),
                **extra,
            )
        )
    return tuple(mounts)
