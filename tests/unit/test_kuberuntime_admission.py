"""The fields the Docker runtime refuses whatever the allowances: named by their path."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import manifests
from vk_provider.kuberuntime.admission import check_pod_supported
from vk_provider.runtime.types import PodSpecRefused


def _pod(**spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "c", "image": "x"}])
    return manifests.pod("p", containers, namespace=None, **spec)


def test_a_plain_pod_is_supported() -> None:
    check_pod_supported(_pod())


def test_pod_level_requests_alone_are_supported() -> None:
    # they only make the QoS class (vk_common/qos.py)
    check_pod_supported(_pod(resources={"requests": {"cpu": "500m", "memory": "64Mi"}}))


def test_pod_level_limits_need_the_runtimes_pod_cgroups() -> None:
    pod = _pod(resources={"limits": {"cpu": "1", "memory": "128Mi"}})
    check_pod_supported(pod, pod_cgroups=True)
    with pytest.raises(PodSpecRefused) as refused:
        check_pod_supported(pod, pod_cgroups=False)
    assert refused.value.message.startswith(
        "spec.resources.limits: pod-level resource limits are not supported on this node (no pod cgroup"
    )


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ({"resourceClaims": [{"name": "gpu"}]}, "spec.resourceClaims: resource claims"),
        (
            {"initContainers": [{"name": "i", "resources": {"claims": [{"name": "gpu"}]}}]},
            "spec.initContainers[0].resources.claims: resource claims",
        ),
        (
            {
                "ephemeralContainers": [
                    {"name": "d", "volumeDevices": [{"name": "v", "devicePath": "/dev/x"}]}
                ]
            },
            "spec.ephemeralContainers[0].volumeDevices: raw block devices are not supported on this node",
        ),
        (
            {"resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}},
            "spec.resources.limits: pod-level resource limits are not supported on this node",
        ),
        (
            {
                "volumes": [{"name": "scratch", "emptyDir": {}}],
                "initContainers": [
                    {
                        "name": "i",
                        "volumeMounts": [
                            {"name": "scratch", "mountPath": "/a"},
                            {"name": "scratch", "mountPath": "/b", "mountPropagation": "HostToContainer"},
                        ],
                    }
                ],
            },
            "spec.initContainers[0].volumeMounts[1].mountPropagation: HostToContainer propagation is "
            "supported on hostPath volumes only on this node",
        ),
    ],
)
def test_refused_with_the_field_path(spec: dict[str, Any], path: str) -> None:
    with pytest.raises(PodSpecRefused) as refused:
        check_pod_supported(_pod(**spec))
    assert refused.value.message.startswith(path) and refused.value.reason == "Forbidden"


def test_restart_all_containers_is_admitted() -> None:
    # the pod restarts all its containers in place (kuberuntime/restart_all.py)
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    container = {"name": "c", "restartPolicy": "Never", "restartPolicyRules": [rule]}
    check_pod_supported(_pod(containers=[container]))


def test_propagation_on_a_host_path_or_none_elsewhere_is_supported() -> None:
    volumes = [{"name": "host", "hostPath": {"path": "/srv"}}, {"name": "cm", "configMap": {"name": "c"}}]
    mounts = [
        {"name": "host", "mountPath": "/h", "mountPropagation": "Bidirectional"},
        {"name": "cm", "mountPath": "/c", "mountPropagation": "None"},
    ]
    check_pod_supported(_pod(volumes=volumes, containers=[{"name": "c", "volumeMounts": mounts}]))
