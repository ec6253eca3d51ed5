"""Which VolumeSource types this node mounts, and the error of the others (pure).

What lives here: `volume_type(volume)` (the VolumeSource field a volume sets) and
`unsupported_volumes(pod)`: volume name -> the error of each volume whose type the node
cannot mount (persistentVolumeClaim, csi, ephemeral, nfs, iscsi, ...) and of each projected
volume with a podCertificate source (on in v1.37, so it reaches the node; this provider does
not issue PodCertificateRequests, and a projection is never written without one of its
sources), which the pod worker
reports as the FailedMount Event (`volumes.failed_mount_message`) while the pod stays
Pending in ContainerCreating, as a kubelet whose volume plugin cannot set a volume up
leaves it. Mounted here: emptyDir, hostPath, configMap, secret, downwardAPI, projected;
`image` volumes are refused by the runtime with the field path (`runtime/docker/spec.py`).
Must not: look at the filesystem or the engine.

Upstream: pkg/kubelet/volumemanager/volume_manager.go (WaitForAttachAndMount keeps the pod
waiting), pkg/volume/util/operationexecutor/operation_generator.go (the FailedMount Event).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.runtime.types import API_VOLUME_TYPES

MOUNTED_TYPES = frozenset((*API_VOLUME_TYPES, "emptyDir", "hostPath", "image"))
UNSUPPORTED_PROJECTIONS = ("podCertificate",)


def volume_type(volume: Mapping[str, Any]) -> str:
    """The VolumeSource field the volume sets ("" when none: the API defaults it to emptyDir)."""
    return next((str(k) for k in volume if k != "name"), "")


def _unsupported_projection(volume: Mapping[str, Any]) -> str:
    """The error of the first projection source of `volume` the node cannot write ("": none)."""
    for j, source in enumerate((volume.get("projected") or {}).get("sources") or []):
        kind = next((k for k in UNSUPPORTED_PROJECTIONS if source.get(k) is not None), "")
        if kind:
            return f"projected.sources[{j}].{kind}: {kind} projections are not supported on this node"
    return ""


def unsupported_volumes(pod: Mapping[str, Any]) -> dict[str, str]:
    """Volume name -> why it cannot be mounted here: a type not mounted, or a projection source
    not written."""
    out: dict[str, str] = {}
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        kind = volume_type(vol)
        if kind and kind not in MOUNTED_TYPES:
            out[str(vol.get("name", ""))] = (
                f"{kind} volumes are not supported on this node: it has no volume plugin for them"
            )
        error = _unsupported_projection(vol)
        if error:
            out[str(vol.get("name", ""))] = error
    return out
