"""`GET /pods`: a minimal PodList of what runs on this node, rebuilt from the runtime's labels.

What lives here: `pod_list`, pure: each pod's namespace, name and uid, its running
containers and the pod IP. The real kubelet answers from its pod manager (full specs);
this node has only what the runtime's labels record. Must not: do I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.runtime.types import ContainerRole, ContainerRunState, PodRuntimeState


def _pod(state: PodRuntimeState, node_name: str) -> dict[str, Any]:
    apps = [c for c in state.containers if c.role == ContainerRole.APP]
    latest = {c.name: c for c in sorted(apps, key=lambda c: c.attempt)}
    statuses: list[dict[str, Any]] = [
        {
            "name": c.name,
            "image": c.image,
            "imageID": c.image_id,
            "containerID": c.container_uri,
            "restartCount": c.attempt,
            "ready": c.state == ContainerRunState.RUNNING,
            "state": {"running": {}}
            if c.state == ContainerRunState.RUNNING
            else {"terminated": {"exitCode": c.exit_code or 0}},
        }
        for c in latest.values()
    ]
    status: dict[str, Any] = {"containerStatuses": statuses}
    if state.sandbox is not None and state.sandbox.ip:
        status["podIP"] = state.sandbox.ip
    return {
        "metadata": {"name": state.name, "namespace": state.namespace, "uid": state.uid},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": c.name, "image": c.image} for c in latest.values()],
        },
        "status": status,
    }


def pod_list(pods: Mapping[str, PodRuntimeState], node_name: str) -> dict[str, Any]:
    items = [_pod(s, node_name) for s in sorted(pods.values(), key=lambda s: (s.namespace, s.name))]
    return {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
