"""In-place resize of the pod-level `spec.resources` (InPlacePodLevelResourcesVerticalScaling),
the pure parts and the resizer against a fake runtime: what the containers inherit, what the
plan does when the pod level changes, the allocation and its conditions, the pod memory check,
and the pod-level `resources` / `allocatedResources` in the status."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

from tests.support.instances import running
from tests.support.status_generation import generate
from vk_provider.kuberuntime.oom import node_memory_capacity, oom_score_adjust
from vk_provider.kuberuntime.pod_resources import pod_level_limits
from vk_provider.kuberuntime.resources import linux_resources
from vk_provider.node.build import DECLARED_FEATURES
from vk_provider.pods.deps import SyncDeps
from vk_provider.pods.plan import PodSnapshot, Step, compute_pod_actions
from vk_provider.pods.resize import PodResizer, with_pod_level
from vk_provider.runtime.configs import HostSecurity, PodCgroup
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerStats,
    LinuxResources,
    PodRuntimeState,
    PodSandboxState,
)
from vk_provider.status.fields import POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING
from vk_provider.status.pod_level import pod_level_status
from vk_sandbox.api.pod_requests import pod_requests
from vk_sandbox.api.validation.resize import resize_update, undeclared_features, validate_pod_resize

MI = 1024 * 1024
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _level(cpu: str, memory: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def _pod(level: dict[str, Any] | None, *containers: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "containers": list(containers) or [{"name": "c1", "image": "busybox:1"}],
        "nodeName": "n",
    }
    if level is not None:
        pod_spec["resources"] = level
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u", "generation": generation},
        "spec": pod_spec,
        "status": {"qosClass": "Guaranteed", "phase": "Running"},
    }


def test_a_container_without_its_own_limits_runs_with_the_pod_levels() -> None:
    pod = _pod(_level("500m", "128Mi"))
    bare = {"name": "c1"}
    assert linux_resources(bare, "f", pod_level_limits(pod)) == LinuxResources(512, 50000, 100000, 128 * MI)
    # its own limits win; a pod without pod-level resources leaves it unlimited
    own = {"name": "c1", "resources": {"limits": {"cpu": "200m"}, "requests": {"cpu": "100m"}}}
    assert linux_resources(own, "f", pod_level_limits(pod)) == LinuxResources(102, 20000, 100000, 128 * MI)
    assert pod_level_limits(_pod(None)) is None
    assert linux_resources(bare, "f", pod_level_limits(_pod(None))) == LinuxResources(cpu_shares=2)


def _plan(pod: dict[str, Any], *instances: ContainerInstance) -> list[tuple[Step, str]]:
    sandbox = PodSandboxState("sb", running=True, ip="10.0.0.2")
    state = PodRuntimeState("u", "default", "p", sandbox=sandbox, containers=instances)
    allocated = {c["name"]: dict(c.get("resources") or {}) for c in pod["spec"]["containers"]}
    actions = compute_pod_actions(PodSnapshot(pod, state, allocated=allocated))
    return [(a.step, a.name) for a in actions.containers]


def test_a_pod_level_change_resizes_or_restarts_the_containers_that_inherit_it() -> None:
    was = LinuxResources(512, 50000, 100000, 128 * MI)
    restart_on_cpu = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]
    pod = _pod(
        _level("1", "128Mi"),
        {"name": "c1", "image": "busybox:1"},
        {"name": "c2", "image": "busybox:1", "resizePolicy": restart_on_cpu},
        {"name": "own", "image": "busybox:1", "resources": _level("100m", "32Mi")},
    )
    own = running(LinuxResources(102, 10000, 100000, 32 * MI), "own")
    assert _plan(pod, running(was, "c1"), running(was, "c2"), own) == [
        (Step.RESIZE, "c1"),
        (Step.REPLACE, "c2"),
    ]
    # the allocation, not the desired spec, is what the plan holds the containers to
    allocated = with_pod_level(pod, _level("500m", "128Mi"))
    assert _plan(allocated, running(was, "c1"), running(was, "c2"), own) == []


def test_a_memory_request_change_alone_restarts_a_container_whose_memory_policy_says_so() -> None:
    # No cgroup v1 file holds a memory request: the plan compares it with the request the
    # instance was started with, as the kubelet compares with its actuated resources.
    restart_on_memory = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    limits = {"cpu": "200m", "memory": "64Mi"}
    was = LinuxResources(102, 20000, 100000, 64 * MI)
    pod = _pod(
        None,
        {"name": "c1", "resources": {"requests": {"cpu": "100m", "memory": "48Mi"}, "limits": limits}},
        {
            "name": "c2",
            "resizePolicy": restart_on_memory,
            "resources": {"requests": {"cpu": "100m", "memory": "48Mi"}, "limits": limits},
        },
    )
    sandbox = PodSandboxState("sb", running=True, ip="10.0.0.2")
    state = PodRuntimeState(
        "u", "default", "p", sandbox=sandbox, containers=(running(was, "c1"), running(was, "c2"))
    )
    allocated = {c["name"]: dict(c["resources"]) for c in pod["spec"]["containers"]}

    def plan(started_with: dict[str, int]) -> list[tuple[Step, str]]:
        snap = PodSnapshot(pod, state, allocated=allocated, memory_requests=started_with)
        return [(a.step, a.name) for a in compute_pod_actions(snap).containers]

    assert plan({"c1-0": 32 * MI, "c2-0": 32 * MI}) == [(Step.RESIZE, "c1"), (Step.REPLACE, "c2")]
    assert plan({"c1-0": 48 * MI, "c2-0": 48 * MI}) == []
    assert plan({}) == []  # not known (the provider restarted): the cgroup decides


class FakeRuntime:
    def __init__(self, usage: int) -> None:
        self.usage = usage
        self.pod_writes: list[LinuxResources] = []
        self.container_writes: list[LinuxResources] = []

    def host_security(self) -> HostSecurity:
        return HostSecurity(pod_cgroups=True)

    async def update_pod_resources(self, uid: str, cgroup: PodCgroup) -> None:
        self.pod_writes.append(cgroup.resources)

    async def update_resources(self, container_id: str, resources: LinuxResources) -> None:
        self.container_writes.append(resources)

    async def pod_state(self, uid: str) -> PodRuntimeState:
        return PodRuntimeState(uid, "default", "p", containers=(running(LinuxResources(2), "c1"),))

    async def container_stats(self, ids: list[str]) -> list[ContainerStats | None]:
        return [ContainerStats(0, self.usage, self.usage) for _ in ids]


def _resizer(usage: int = 4 * MI, allocatable_cpu: str = "4") -> tuple[PodResizer, FakeRuntime, list[str]]:
    runtime, events = FakeRuntime(usage), []
    deps = SimpleNamespace(
        runtime=runtime,
        recorder=SimpleNamespace(event=lambda pod, kind, reason, message, **kw: events.append(reason)),
        node_allocatable=lambda: {"cpu": allocatable_cpu, "memory": "8Gi"},
    )
    return PodResizer(cast(SyncDeps, deps)), runtime, events


async def test_a_pod_level_resize_is_allocated_actuated_and_completed() -> None:
    resizer, runtime, events = _resizer()
    first = _pod(_level("500m", "128Mi"))
    assert resizer.allocate("u", first) is None
    resizer.pod_cgroup_set("u", LinuxResources(512, 50000, 100000, 128 * MI))
    assert resizer.state("u").conditions() == [] and events == []  # creation is no resize

    resized = _pod(_level("1", "256Mi"), generation=2)
    resizer.allocate("u", resized)
    assert [c["type"] for c in resizer.state("u").conditions()] == [POD_RESIZE_IN_PROGRESS]
    assert events == ["ResizeStarted"]
    assert pod_level_limits(resizer.allocated_pod("u", resized)) == {"cpu": "1", "memory": "256Mi"}
    # widened before the containers, set after
    assert await resizer.pod_cgroup("u", resized, lift=True)
    assert await resizer.pod_cgroup("u", resized, lift=False)
    assert runtime.pod_writes == [LinuxResources(1024, 100000, 100000, 256 * MI)]
    resizer.finish("u", resized, True)
    assert resizer.state("u").conditions() == [] and events[-1] == "ResizeCompleted"


async def test_a_pod_level_resize_that_does_not_fit_is_deferred() -> None:
    resizer, _, events = _resizer(allocatable_cpu="1")
    resizer.allocate("u", _pod(_level("500m", "128Mi")))
    assert resizer.allocate("u", _pod(_level("2", "128Mi"), generation=2)) is not None
    (pending,) = resizer.state("u").conditions()
    assert pending["type"] == POD_RESIZE_PENDING and pending["reason"] == "Deferred"
    assert pending["message"].startswith("Node didn't have enough resource: cpu, requested: 2000")
    assert events == ["ResizeDeferred"]
    # the containers keep running with the old pod level meanwhile
    assert pod_level_limits(resizer.allocated_pod("u", _pod(_level("2", "128Mi")))) == {
        "cpu": "500m",
        "memory": "128Mi",
    }


async def test_a_pod_memory_limit_below_the_pods_usage_stays_in_progress_with_the_error() -> None:
    resizer, runtime, events = _resizer(usage=20 * MI)
    resizer.allocate("u", _pod(_level("500m", "128Mi")))
    resizer.pod_cgroup_set("u", LinuxResources(512, 50000, 100000, 128 * MI))
    tiny = _pod(_level("500m", "10Ki"), generation=2)
    resizer.allocate("u", tiny)
    assert not await resizer.check_memory("u", tiny, [])
    (condition,) = resizer.state("u").conditions()
    assert condition["type"] == POD_RESIZE_IN_PROGRESS and condition["reason"] == "Error"
    assert condition["message"] == (
        "cannot decrease memory limits: attempting to set pod memory limit (10240) "
        f"below current usage ({20 * MI})"
    )
    assert re.search(r"memory limit \(\d+\) below current usage", condition["message"])
    assert runtime.pod_writes == [] and events == ["ResizeStarted", "ResizeError"]
    # a container that inherits the limit is checked too, the errors aggregated
    c1 = running(LinuxResources(512, 50000, 100000, 128 * MI), "c1")
    assert not await resizer.check_memory("u", tiny, [(tiny["spec"]["containers"][0], c1)])
    assert resizer.state("u").conditions()[0]["message"] == (
        "cannot decrease memory limits: [attempting to set pod memory limit (10240) below current usage "
        f'({20 * MI}), attempting to set container "c1" memory limit (10240) below current usage ({20 * MI})]'
    )


def test_pod_level_status_is_the_allocation_and_what_the_pod_cgroup_was_set_to() -> None:
    pod = _pod({"requests": {"cpu": "5m"}, "limits": {"cpu": "25m"}}, {"name": "c1"})
    containers = {"c1": {"requests": {"cpu": "2m"}, "limits": {"cpu": "10m"}}}
    # not running (or the cgroup not known): the allocated pod level, requests and limits as
    # PodRequests / PodLimits
    assert pod_level_status(pod, containers, None, running=False) == (
        {"requests": {"cpu": "5m"}, "limits": {"cpu": "25m"}},
        {"cpu": "5m"},
    )
    # running: the cgroup's values, the allocated spelling where they agree, floors kept
    set_to = LinuxResources(cpu_shares=5, cpu_quota=2500, cpu_period=100000)
    assert pod_level_status(pod, containers, set_to, running=True)[0] == {
        "requests": {"cpu": "5m"},
        "limits": {"cpu": "25m"},
    }
    lagging = LinuxResources(cpu_shares=204, cpu_quota=20000, cpu_period=100000, memory_limit=64 * MI)
    assert pod_level_status(pod, containers, lagging, running=True)[0] == {
        "requests": {"cpu": "200m"},
        "limits": {"cpu": "200m", "memory": "64Mi"},
    }
    # without pod-level resources: the containers' requests added up
    plain = _pod(None, {"name": "a"}, {"name": "b"})
    both = {"a": {"requests": {"cpu": "100m", "memory": "16Mi"}}, "b": {"requests": {"cpu": "150m"}}}
    assert pod_level_status(plain, both, None, running=False)[1] == {"cpu": "250m", "memory": "16Mi"}


def test_the_generated_status_carries_the_pod_level_resources() -> None:
    pod = _pod(_level("500m", "10m"))
    status = generate(pod, None, host_ip="", now=NOW, allocated={"c1": {}}, allocated_pod=pod)
    assert status["allocatedResources"] == {"cpu": "500m", "memory": "10m"}  # as the spec spells it
    assert status["resources"] == _level("500m", "10m")
    assert "resources" not in generate(pod, None, host_ip="", now=NOW)


def test_the_node_declares_pod_level_resize() -> None:
    assert "InPlacePodLevelResourcesVerticalScaling" in DECLARED_FEATURES
    assert list(DECLARED_FEATURES) == sorted(DECLARED_FEATURES)


def test_oom_score_adj_follows_the_qos_class() -> None:
    capacity = 8 * 1024 * MI
    burstable = _pod(None, {"name": "c1", "resources": {"requests": {"memory": "1Gi"}}})
    assert oom_score_adjust(burstable, burstable["spec"]["containers"][0], capacity) == 875
    best_effort = _pod(None, {"name": "c1"})
    assert oom_score_adjust(best_effort, {"name": "c1"}, capacity) == 1000
    # Guaranteed (-997) needs CAP_SYS_RESOURCE the engine may lack: the engine's default stays
    assert oom_score_adjust(_pod(_level("1", "1Gi")), {"name": "c1"}, capacity) is None
    assert oom_score_adjust(burstable, burstable["spec"]["containers"][0], 0) is None
    # the pod-level memory request the containers leave over is shared out among them
    level = {"requests": {"memory": "2Gi"}}
    shared = _pod(level, {"name": "c1"}, {"name": "c2"})
    assert oom_score_adjust(shared, {"name": "c1"}, capacity) == 875
    assert node_memory_capacity({"status": {"capacity": {"memory": "8Gi"}}}) == capacity


def test_the_emulators_resize_takes_the_pod_level_resources() -> None:
    old = _pod({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "500m", "memory": "128Mi"}})
    new = _pod({"limits": {"cpu": "1", "memory": "128Mi"}})
    stored = resize_update(old, new)
    # requests default to the new limits (DefaultPodLevelResources)
    assert stored["spec"]["resources"] == {
        "limits": {"cpu": "1", "memory": "128Mi"},
        "requests": {"cpu": "1", "memory": "128Mi"},
    }
    assert validate_pod_resize(old, stored) == []
    assert pod_requests(stored)[0] == 1
    gone = {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    messages = [c["message"] for c in validate_pod_resize(old, _pod(gone))]
    assert messages[1:] == [
        "Forbidden: pod-level resource requests cannot be removed",
        "Forbidden: pod-level resource limits cannot be removed",
    ]
    assert messages[0].endswith("Pod QOS Class may not change as a result of resizing")  # now Burstable
    node = {"status": {"declaredFeatures": ["InPlacePodVerticalScalingInitContainers"]}}
    assert undeclared_features(old, stored, node) == ["InPlacePodLevelResourcesVerticalScaling"]
