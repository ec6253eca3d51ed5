"""What no allowance can turn on with this runtime: pod spec fields refused by their path (pure).

What lives here: `check_pod_supported`, raising `PodSpecRefused` for the first field the
Docker runtime cannot honour at all: dynamic resource allocation (`spec.resourceClaims`,
`resources.claims` of a container: no DRA driver serves this node, so the kubelet's
PrepareDynamicResources could never succeed), raw block devices (`volumeDevices`: they come
from block-mode PersistentVolumeClaims, which this node does not attach), the
RestartAllContainers action of a container's restartPolicyRules (the pod's containers are
not restarted together), `spec.runtimeClassName` (the engine's default runtime is the
only handler), pod-level limits (`spec.resources.limits`: each container has its own
cgroup and no pod cgroup could enforce them; pod-level requests only make the QoS
class, status/qos.py) and a `mountPropagation` other than None on a volume that is not a
hostPath (emptyDir and the API volumes are Docker volumes or provider-made directories: Docker
takes no propagation for a named volume; a hostPath's is `mount_options.bind_options`'). The security
allowances a node can grant are `spec.check_pod_allowed`'s.
Must not: call Docker, read configuration, or silently drop a field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_common.objects import pod_containers
from vk_provider.runtime.types import PodSpecRefused


def _check_propagation(spec: Mapping[str, Any], where: str, container: Mapping[str, Any]) -> None:
    host_paths = {v.get("name") for v in spec.get("volumes") or [] if "hostPath" in v}
    for j, mount in enumerate(container.get("volumeMounts") or []):
        propagation = mount.get("mountPropagation")
        if propagation not in (None, "None") and mount.get("name") not in host_paths:
            raise PodSpecRefused(
                f"{where}.volumeMounts[{j}].mountPropagation: {propagation} propagation is "
                "supported on hostPath volumes only on this node"
            )


def check_pod_supported(pod: Mapping[str, Any]) -> None:
    """Refuse the first field of `pod` this runtime cannot honour, naming its path."""
    spec: Mapping[str, Any] = pod.get("spec") or {}
    if spec.get("resourceClaims"):
        raise PodSpecRefused(
            "spec.resourceClaims: resource claims are not supported on this node "
            "(no dynamic resource allocation driver)"
        )
    for where, container in pod_containers(pod):
        if (container.get("resources") or {}).get("claims"):
            raise PodSpecRefused(
                f"{where}.resources.claims: resource claims are not supported on this node "
                "(no dynamic resource allocation driver)"
            )
        for j, rule in enumerate(container.get("restartPolicyRules") or []):
            if rule.get("action") == "RestartAllContainers":
                raise PodSpecRefused(
                    f"{where}.restartPolicyRules[{j}].action: RestartAllContainers is not "
                    "supported on this node"
                )
        _check_propagation(spec, where, container)
        if container.get("volumeDevices"):
            raise PodSpecRefused(f"{where}.volumeDevices: raw block devices are not supported on this node")
    if (spec.get("resources") or {}).get("limits"):
        # PodLevelResources (beta, on since 1.34): the kubelet sets them on the pod's cgroup
        # (pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod); a limit silently not
        # enforced would be worse than a refusal.
        raise PodSpecRefused(
            "spec.resources.limits: pod-level resource limits are not supported on this node "
            "(no pod cgroup; set limits on the containers)"
        )
    handler = spec.get("runtimeClassName")
    if handler:
        raise PodSpecRefused(
            f'spec.runtimeClassName: RuntimeClass "{handler}" is not supported on this node '
            "(the container engine's default runtime only)"
        )
