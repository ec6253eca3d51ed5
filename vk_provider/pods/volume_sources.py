"""Which VolumeSource types this node mounts, and the error of the others (pure).

What lives here: `volume_type(volume)` (the VolumeSource field a volume sets) and
`unsupported_volumes(pod)`: volume name -> the error of each volume whose type the node
cannot mount (persistentVolumeClaim, csi, ephemeral, nfs, iscsi, ...), which the pod worker
reports as the FailedMount Event (`volumes.failed_mount_message`) while the pod stays
Pending in ContainerCreating, as a kubelet whose volume plugin cannot set a volume up
leaves it. Mounted here: emptyDir, hostPath, configMap, secret, downwardAPI, projected;
`image` volumes are refused at admission with the field path (`kuberuntime/admission.py`).
Must not: look at the filesystem or the engine.

Upstream: pkg/kubelet/volumemanager/volume_manager.go (WaitForAttachAndMount keeps the pod
waiting), pkg/volume/util/operationexecutor/operation_generator.go (the FailedMount Event).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.runtime.types import API_VOLUME_TYPES

MOUNTED_TYPES = frozenset((*API_VOLUME_TYPES, "emptyDir", "hostPath", "image"))


def volume_type(volume: Mapping[str, Any]) -> str:
    """The VolumeSource field the volume sets ("" when none: the API defaults it to emptyDir)."""
    return next((str(k) for k in volume if k != "name"), "")


def unsupported_volumes(pod: Mapping[str, Any]) -> dict[str, str]:
    """Volume name -> why it cannot be mounted here: a type not mounted."""
    out: dict[str, str] = {}
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        kind = volume_type(vol)
        if kind and kind not in MOUNTED_TYPES:
            out[str(vol.get("name", ""))] = (
                f"{kind} volumes are not supported on this node: it has no volume plugin for them"
            )
    return out
