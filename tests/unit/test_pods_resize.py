"""In-place pod resize, the pure parts: what counts as a resize, what it needs, what the node
allows, what the status shows, and what the sandbox's pods/resize keeps and refuses."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.instances import running
from tests.support.status_generation import generate
from vk_provider.kuberuntime.container_config import spec_hash
from vk_provider.kuberuntime.pod_resources import pod_requests
from vk_provider.kuberuntime.resources import linux_resources
from vk_provider.pods.resize import ResizeAction, fit_message, resize_action, summary, widened
from vk_provider.runtime.docker import labels, spec
from vk_provider.runtime.types import (
    ContainerRole,
    LinuxResources,
    PodRuntimeState,
    PodSandboxState,
)
from vk_provider.status.resources import format_bytes, status_resources
from vk_sandbox.api.validation.resize import (
    allocatable_refusal,
    resize_update,
    undeclared_features,
    validate_pod_resize,
)

MI = 1024 * 1024
RES = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _container(**extra: Any) -> dict[str, Any]:
    return {"name": "main", "image": "busybox:1", "resources": RES, **extra}


def _pod(*containers: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u", "generation": 1, **meta},
        "spec": {"containers": list(containers) or [_container()], "nodeName": "n"},
        "status": {"qosClass": "Burstable"},
    }


def test_spec_hash_leaves_the_resizable_fields_out() -> None:
    base = spec_hash(_container())
    resized = _container(resources={"limits": {"cpu": "1"}}, resizePolicy=[{"resourceName": "cpu"}])
    assert spec_hash(resized) == base
    assert spec_hash(_container(image="busybox:2")) != base


def test_docker_update_and_reported_limits_follow_the_create_formulas() -> None:
    assert spec.resource_kwargs(linux_resources(_container(), "spec.containers[0]")) == {
        "cpu_shares": 102,
        "cpu_quota": 20000,
        "cpu_period": 100000,
        "mem_limit": 64 * MI,
        "memswap_limit": 64 * MI,
    }
    assert spec.resource_kwargs(
        linux_resources({"name": "x", "resources": {"requests": {"cpu": "1"}}}, "f")
    ) == {"cpu_shares": 1024}
    assert linux_resources(_container(), "f") == LinuxResources(102, 20000, 100000, 64 * MI)
    inspect = {
        "Id": "c1",
        "Config": {"Labels": {labels.CONTAINER_NAME: "main"}},
        "State": {"Status": "running", "Running": True},
        "HostConfig": {"CpuShares": 102, "CpuQuota": 20000, "CpuPeriod": 100000, "Memory": 64 * MI},
    }
    assert labels.instance_from_inspect(inspect).resources == linux_resources(_container(), "f")


@pytest.mark.parametrize(
    ("policy", "cpu", "memory", "action"),
    [
        ([], True, True, ResizeAction.UPDATE),
        ([], False, False, ResizeAction.NONE),
        ([{"resourceName": "memory", "restartPolicy": "RestartContainer"}], True, False, ResizeAction.UPDATE),
        (
            [{"resourceName": "memory", "restartPolicy": "RestartContainer"}],
            False,
            True,
            ResizeAction.RESTART,
        ),
        ([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}], True, True, ResizeAction.RESTART),
        ([{"resourceName": "cpu", "restartPolicy": "NotRequired"}], True, False, ResizeAction.UPDATE),
    ],
)
def test_the_resize_policy_of_a_changed_resource_decides(
    policy: list[dict[str, str]], cpu: bool, memory: bool, action: ResizeAction
) -> None:
    assert resize_action(_container(resizePolicy=policy), cpu, memory) == action


def test_fit_message_is_the_predicate_handlers() -> None:
    pod = _pod(_container(name="a"), _container(name="b"))
    assert pod_requests(pod, {"a": RES, "b": {"limits": {"cpu": "1", "memory": "1Gi"}}}) == (
        1100,
        32 * MI + 1024 * MI,
    )
    allocatable = {"cpu": "2", "memory": "1Gi", "pods": "110"}
    assert fit_message((1000, MI), (1000, 0), allocatable) == ""
    assert fit_message((1500, MI), (1000, 0), allocatable) == (
        "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"
    )
    assert fit_message((0, 1024 * MI), (0, 1), allocatable) == (
        f"Node didn't have enough resource: memory, requested: {1024 * MI}, used: 1, capacity: {1024 * MI}"
    )


def test_event_summary_is_upstreams_json() -> None:
    pod = _pod()
    resources = {
        "main": {"requests": {"memory": "100", "cpu": "100m"}, "limits": {"memory": "100", "cpu": "100m"}}
    }
    # pkg/kubelet/events/resize_test.go, "simple running container"
    assert summary(pod, resources, 1) == (
        '{"containers":[{"name":"main","resources":{"limits":{"cpu":"100m","memory":"100"},'
        '"requests":{"cpu":"100m","memory":"100"}}}],"generation":1}'
    )
    assert summary(pod, {"main": {}}, 3) == '{"containers":[{"name":"main","resources":{}}],"generation":3}'
    assert summary(pod, {"main": {}}, 1, "oops").endswith('"generation":1,"error":"oops"}')


def test_status_resources_are_what_runs_in_the_allocated_spelling() -> None:
    same = status_resources(RES, running(LinuxResources(102, 20000, 100000, 64 * MI)))
    assert same == RES
    moved = status_resources(RES, running(LinuxResources(153, 30000, 100000, 96 * MI)))
    assert moved == {
        "requests": {"cpu": "150m", "memory": "32Mi"},
        "limits": {"cpu": "300m", "memory": "96Mi"},
    }
    assert status_resources(RES, running(None)) == RES
    assert (
        format_bytes(96 * MI) == "96Mi"
        and format_bytes(1000) == "1000"
        and format_bytes(3 * 1024**3) == "3Gi"
    )


def test_generated_status_carries_resources_allocation_and_resize_conditions() -> None:
    pod = _pod()
    state = PodRuntimeState(
        uid="u",
        namespace="default",
        name="p",
        sandbox=PodSandboxState("sb", True, "10.0.0.2"),
        containers=(running(LinuxResources(102, 20000, 100000, 64 * MI)),),
    )
    pending = {"type": "PodResizePending", "status": "True", "reason": "Deferred", "observedGeneration": 2}
    status = generate(
        pod,
        state,
        host_ip="10.0.0.1",
        now=NOW,
        allocated={"main": RES},
        resize_conditions=[pending],
    )
    main = status["containerStatuses"][0]
    assert main["resources"] == RES and main["allocatedResources"] == RES["requests"]
    cond = next(c for c in status["conditions"] if c["type"] == "PodResizePending")
    assert cond["reason"] == "Deferred" and cond["observedGeneration"] == 2
    # a stale resize condition in the API copy is the kubelet's own: it is not kept
    pod["status"]["conditions"] = [{"type": "PodResizeInProgress", "status": "True"}]
    again = generate(pod, state, host_ip="10.0.0.1", now=NOW, allocated={"main": RES})
    assert not [c for c in again["conditions"] if c["type"].startswith("PodResize")]


def test_a_running_init_container_shows_its_resources_and_allocation() -> None:
    # kubelet_pods.go convertToAPIContainerStatuses: every container with a runtime record
    # (init ones too) gets resources and allocatedResources; the resize spec waits for them
    pod = _pod()
    pod["spec"]["initContainers"] = [{"name": "init", "image": "busybox:1", "resources": RES}]
    init = running(LinuxResources(153, 30000, 100000, 96 * MI), "init", ContainerRole.INIT)
    sandbox = PodSandboxState("sb", True, "10.0.0.2")
    state = PodRuntimeState(uid="u", namespace="default", name="p", sandbox=sandbox, containers=(init,))
    grown = {"requests": {"cpu": "150m", "memory": "32Mi"}, "limits": {"cpu": "300m", "memory": "96Mi"}}
    status = generate(pod, state, host_ip="10.0.0.1", now=NOW, allocated={"init": grown, "main": RES})
    shown = status["initContainerStatuses"][0]
    assert shown["resources"] == grown and shown["allocatedResources"] == grown["requests"]
    assert "resources" not in status["containerStatuses"][0]  # not created yet


def test_sandbox_resize_keeps_everything_but_resources_and_policy() -> None:
    old = _pod()
    new = json.loads(json.dumps(old))
    new["spec"]["containers"][0].update(image="busybox:2", resources={"limits": {"cpu": "1"}})
    new["spec"]["containers"][0]["resizePolicy"] = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    new["metadata"]["labels"] = {"dropped": "yes"}
    new["status"] = {"phase": "Failed"}
    kept = resize_update(old, new)
    assert kept["spec"]["containers"][0]["image"] == "busybox:1"
    assert kept["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
    assert kept["spec"]["containers"][0]["resizePolicy"][0]["resourceName"] == "cpu"
    assert "labels" not in kept["metadata"] and kept["status"] == old["status"]


def _resized(resources: dict[str, Any], **meta: Any) -> list[dict[str, str]]:
    old = _pod(**meta)
    new = json.loads(json.dumps(old))
    new["spec"]["containers"][0]["resources"] = resources
    return validate_pod_resize(old, resize_update(old, new))


def test_sandbox_resize_validation_messages() -> None:
    assert (
        _resized({"requests": {"cpu": "150m", "memory": "32Mi"}, "limits": {"cpu": "300m", "memory": "64Mi"}})
        == []
    )
    removed = _resized({"requests": {"cpu": "150m", "memory": "32Mi"}, "limits": {"cpu": "300m"}})
    assert [c["message"] for c in removed] == ["Forbidden: resource limits cannot be removed"]
    assert removed[0]["field"] == "spec.containers[0].resources.limits"
    guaranteed = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert [c["message"] for c in _resized(guaranteed)] == [
        'Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing'
    ]
    other = {**RES, "limits": {**RES["limits"], "ephemeral-storage": "1Gi"}}
    assert [c["message"] for c in _resized(other)] == ["Forbidden: only cpu and memory resources are mutable"]
    static = _resized(RES, annotations={"kubernetes.io/config.mirror": "x"})
    assert [c["message"] for c in static] == ["Forbidden: static pods cannot be resized"]


def test_sandbox_resize_admission_against_allocatable() -> None:
    node = {
        "metadata": {"name": "n", "labels": {"kubernetes.io/os": "linux"}},
        "status": {"allocatable": {"cpu": "2", "memory": "1Gi"}},
    }
    assert allocatable_refusal(_pod(), node) == ("", "")
    big = _pod(_container(resources={"requests": {"cpu": "3", "memory": "2Gi"}}))
    assert allocatable_refusal(big, node) == (
        "node didn't have enough allocatable resources: cpu, requested: 3000, allocatable: 2000; "
        f"memory, requested: {2048 * MI}, allocatable: {1024 * MI}",
        "NodeCapacity",
    )


def _with_init(sidecar: bool = False, **extra: Any) -> dict[str, Any]:
    pod = _pod()
    init = {"name": "init", "image": "busybox:1", "resources": RES, **extra}
    if sidecar:
        init["restartPolicy"] = "Always"
    pod["spec"]["initContainers"] = [init]
    return pod


def test_sandbox_resize_of_init_containers_validation_and_declared_features() -> None:
    old = _with_init()
    new = json.loads(json.dumps(old))
    grown = {"requests": {"cpu": "150m", "memory": "32Mi"}, "limits": {"cpu": "300m", "memory": "64Mi"}}
    new["spec"]["initContainers"][0]["resources"] = grown
    resized = resize_update(old, new)
    assert resized["spec"]["initContainers"][0]["resources"] == grown
    assert validate_pod_resize(old, resized) == []
    node = {"metadata": {"name": "n"}, "status": {}}
    # the real apiserver: `pod update requires features ... which are not available on node "n"`
    assert undeclared_features(old, resized, node) == ["InPlacePodVerticalScalingInitContainers"]
    node["status"]["declaredFeatures"] = ["InPlacePodVerticalScalingInitContainers"]
    assert undeclared_features(old, resized, node) == []
    sidecar = _with_init(sidecar=True)
    assert undeclared_features(sidecar, resize_update(sidecar, new | {"spec": sidecar["spec"]}), {}) == []

    new["spec"]["initContainers"][0]["resources"] = {"requests": RES["requests"]}
    removed = validate_pod_resize(old, resize_update(old, new))
    assert [(c["field"], c["message"]) for c in removed] == [
        ("spec.initContainers[0].resources.limits", "Forbidden: resource limits cannot be removed")
    ]
    new["spec"]["initContainers"][0]["resources"] = {
        **RES,
        "limits": {**RES["limits"], "ephemeral-storage": "1"},
    }
    assert [c["message"] for c in validate_pod_resize(old, resize_update(old, new))] == [
        "Forbidden: only cpu and memory resources for init or sidecar containers are mutable"
    ]
    restart = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]
    old = _with_init(resizePolicy=restart)
    new = json.loads(json.dumps(old))
    new["spec"]["initContainers"][0]["resources"] = grown
    assert [c["message"] for c in validate_pod_resize(old, resize_update(old, new))] == [
        "Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"
    ]


def test_sandbox_resize_admission_counts_sidecars_as_the_scheduler_does() -> None:
    node = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "2", "memory": "1Gi"}}}
    pod = _with_init(sidecar=True, resources={"requests": {"cpu": "1500m"}})
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "600m"}}
    # the sidecar runs beside the app: 2100m, above the node's 2 cpus
    assert allocatable_refusal(pod, node)[0] == (
        "node didn't have enough allocatable resources: cpu, requested: 2100, allocatable: 2000"
    )


def test_a_request_that_is_no_quantity_counts_as_none() -> None:
    # such a container never starts (CreateContainerConfigError): the allocation must not fail
    huge = {"requests": {"memory": "1e1000000"}, "limits": {"cpu": "x"}}
    pod = _pod(_container(name="a"), _container(name="b"))
    assert pod_requests(pod, {"a": huge, "b": {"requests": {"cpu": "100m"}}}) == (100, 0)


def _requests(cpu: str, memory: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}}


def test_pod_requests_count_the_init_phase_peak_and_the_sidecars_beside_the_app() -> None:
    # component-helpers resource.PodRequests: max(app + sidecars, each init + the sidecars before it)
    pod = _pod(_container(name="app"))
    pod["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox:1"},
        {"name": "proxy", "image": "busybox:1", "restartPolicy": "Always"},
        {"name": "migrate", "image": "busybox:1"},
    ]
    resources = {
        "setup": _requests("2", "64Mi"),
        "proxy": _requests("200m", "16Mi"),
        "migrate": _requests("500m", "256Mi"),
        "app": _requests("1", "32Mi"),
    }
    # cpu: setup alone (2000) beats app + proxy (1200); memory: migrate + proxy (272Mi) wins
    assert pod_requests(pod, resources) == (2000, 272 * MI)
    resources["setup"] = _requests("100m", "1Mi")
    assert pod_requests(pod, resources) == (1200, 272 * MI)
    # a RuntimeClass's overhead (spec.overhead, set by its admission plugin) counts on top
    pod["spec"]["overhead"] = {"cpu": "250m", "memory": "120Mi"}
    assert pod_requests(pod, resources) == (1450, 392 * MI)


def test_the_pod_cgroup_is_widened_before_its_containers_are_resized() -> None:
    old = LinuxResources(cpu_shares=204, cpu_quota=20000, cpu_period=100000, memory_limit=64 * MI)
    new = LinuxResources(cpu_shares=307, cpu_quota=30000, cpu_period=100000, memory_limit=32 * MI)
    assert widened(old, new) == LinuxResources(307, 30000, 100000, 64 * MI)
    # no limit is the largest; an unknown old one lifts the limits while the containers change
    assert widened(LinuxResources(204), new) == LinuxResources(cpu_shares=307)
    assert widened(None, new) == LinuxResources(cpu_shares=307)
