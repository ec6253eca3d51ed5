"""Builders of the Pod manifests tests create: `pod`, `sh` (a busybox container), `static_pod_dir`.

`pod(name, containers, **spec)` is a Pod in `default` (`namespace=None` leaves the namespace out,
as a static pod file may; `uid`, `labels` and `annotations` add those, as the API would have them);
the spec fields come as keywords (`nodeName`, `restartPolicy`, ...). `static_pod_dir` writes one
as `<name>.yaml` into a static pod directory.
`by_uid` indexes pods by uid, as the provider's pod maps are. `kubelet_node` is the Ready Node
whose kubelet (a test's own) listens on 127.0.0.1, for the apiserver's node proxy to reach.
Must not: talk to an API server, or read what the provider wrote back
(tests/support/pod_status.py reads statuses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support.images import BUSYBOX_IMAGE

NAMESPACE = "default"


def pod(
    name: str,
    containers: list[dict[str, Any]],
    *,
    namespace: str | None = NAMESPACE,
    uid: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Pod manifest named `name` running `containers`, with the other spec fields of `spec`."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if uid is not None:
        metadata["uid"] = uid
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": containers, **spec},
    }


def sh(name: str, script: str, **extra: Any) -> dict[str, Any]:
    """A busybox container running `script` with sh -c."""
    return {"name": name, "image": BUSYBOX_IMAGE, "command": ["sh", "-c", script], **extra}


BURN = "while true; do i=0; while [ $i -lt 500 ]; do i=$((i+1)); done; sleep 0.2; done"


def burner(name: str = "burn", **extra: Any) -> dict[str, Any]:
    """A busybox container that burns a little CPU, limited to 100m and 64Mi (metrics tests)."""
    limits = {"limits": {"cpu": "100m", "memory": "64Mi"}}
    return sh(name, BURN, resources=limits, **extra)


def static_pod_dir(directory: Path, name: str, containers: list[dict[str, Any]], **spec: Any) -> Path:
    """A static pod directory `directory/manifests` holding `<name>.yaml`, a Pod in `default`."""
    static_dir = directory / "manifests"
    static_dir.mkdir(exist_ok=True)
    (static_dir / f"{name}.yaml").write_text(yaml.safe_dump(pod(name, containers, **spec)))
    return static_dir


def by_uid(*pods: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["uid"]: p for p in pods}


def kubelet_node(name: str, kubelet_port: int) -> dict[str, Any]:
    """A Ready Node at 127.0.0.1 whose kubelet listens on `kubelet_port`."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
