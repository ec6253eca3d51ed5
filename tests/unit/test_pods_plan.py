"""The pod sync's plan (pods/plan.py): what a pod's snapshot makes the node do, before it acts.

Each case is a pod and what the runtime holds for it; the plan is what the kubelet's
computePodActions would do with them: a new sandbox or none, which containers start, restart,
are replaced, resized or killed, and in which order.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support import manifests
from tests.support.images import BUSYBOX_IMAGE
from vk_provider.kuberuntime.container_config import spec_hash
from vk_provider.pods.plan import PodSnapshot, Step, compute_pod_actions
from vk_provider.probes.manager import ProbeFailure
from vk_provider.probes.spec import ProbeType
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    LinuxResources,
    PodRuntimeState,
    PodSandboxState,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUNNING, EXITED = ContainerRunState.RUNNING, ContainerRunState.EXITED
APP, INIT = ContainerRole.APP, ContainerRole.INIT


def box(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": BUSYBOX_IMAGE, **extra}


def instance(
    name: str,
    state: ContainerRunState = RUNNING,
    *,
    role: ContainerRole = APP,
    attempt: int = 0,
    exit_code: int | None = None,
    created: datetime = T0 + timedelta(seconds=1),
    spec_hash: str = "",
    resources: LinuxResources | None = None,
) -> ContainerInstance:
    return ContainerInstance(
        name,
        role,
        attempt,
        f"{name}-{attempt}",
        BUSYBOX_IMAGE,
        "sha256:x",
        state,
        created_at=created,
        exit_code=exit_code,
        spec_hash=spec_hash,
        resources=resources,
    )


def runtime(*containers: ContainerInstance, sandbox_running: bool = True) -> PodRuntimeState:
    return PodRuntimeState(
        "u1", "default", "p", PodSandboxState("s1", sandbox_running, "10.0.0.2", T0), containers
    )


def plan(pod: dict[str, Any], state: PodRuntimeState | None, **snap: Any) -> list[tuple[Step, str, int]]:
    actions = compute_pod_actions(PodSnapshot(pod, state, **snap))
    return [(a.step, a.name, a.attempt) for a in actions.containers]


def test_a_new_pod_gets_a_sandbox_then_its_containers() -> None:
    pod = manifests.pod("p", [box("a"), box("b")])
    actions = compute_pod_actions(PodSnapshot(pod, None))
    assert actions.create_sandbox and actions.sandbox is None
    assert [(a.step, a.name) for a in actions.containers] == [(Step.START, "a"), (Step.START, "b")]


def test_a_dead_sandbox_stops_what_ran_in_it_and_is_made_again() -> None:
    pod = manifests.pod("p", [box("a")])
    actions = compute_pod_actions(PodSnapshot(pod, runtime(instance("a"), sandbox_running=False)))
    assert actions.create_sandbox
    assert [c.name for c in actions.stop] == ["a"]


def test_a_never_pod_whose_sandbox_died_gets_no_new_one() -> None:
    pod = manifests.pod("p", [box("a")], restartPolicy="Never")
    actions = compute_pod_actions(PodSnapshot(pod, runtime(instance("a"), sandbox_running=False)))
    assert not actions.create_sandbox and not actions.runs
    assert [c.name for c in actions.stop] == ["a"]
    assert actions.containers == ()


def test_a_finished_pod_gets_no_sandbox_and_no_action() -> None:
    pod = manifests.pod("p", [box("a")], restartPolicy="Never")
    state = runtime(instance("a", EXITED, exit_code=0), sandbox_running=False)
    actions = compute_pod_actions(PodSnapshot(pod, state))
    assert not actions.runs and actions.stop == () and actions.containers == ()


def test_init_containers_run_one_at_a_time_before_the_app_containers() -> None:
    pod = manifests.pod("p", [box("app")], initContainers=[box("i1"), box("i2")])
    assert plan(pod, runtime()) == [(Step.START, "i1", 0)]
    done = instance("i1", EXITED, role=INIT, exit_code=0)
    assert plan(pod, runtime(done)) == [(Step.START, "i2", 0)]
    both = (done, instance("i2", EXITED, role=INIT, exit_code=0))
    assert plan(pod, runtime(*both)) == [(Step.START, "app", 0)]


def test_a_sidecar_without_a_startup_probe_is_started_and_the_next_init_container_with_it() -> None:
    sidecar = box("side", restartPolicy="Always")
    pod = manifests.pod("p", [box("app")], initContainers=[sidecar, box("i1")])
    actions = compute_pod_actions(PodSnapshot(pod, runtime()))
    assert [(a.step, a.name, a.gate) for a in actions.containers] == [
        (Step.START, "side", True),
        (Step.START, "i1", True),
    ]


def test_the_app_containers_wait_for_a_sidecar_until_its_startup_probe_passes() -> None:
    probe = {"exec": {"command": ["true"]}}
    pod = manifests.pod(
        "p", [box("app")], initContainers=[box("side", restartPolicy="Always", startupProbe=probe)]
    )
    side = instance("side", role=INIT)
    assert plan(pod, runtime(side)) == []
    assert plan(pod, runtime(side), started=frozenset({side.container_id})) == [(Step.START, "app", 0)]


def test_init_containers_run_again_in_a_new_sandbox() -> None:
    pod = manifests.pod("p", [box("app")], initContainers=[box("i1")])
    ran_before = instance("i1", EXITED, role=INIT, exit_code=0, created=T0 - timedelta(seconds=5))
    assert plan(pod, runtime(ran_before)) == [(Step.START, "i1", 1)]


def test_a_failed_init_container_of_a_never_pod_stops_the_pod() -> None:
    pod = manifests.pod("p", [box("app")], initContainers=[box("i1")], restartPolicy="Never")
    assert plan(pod, runtime(instance("i1", EXITED, role=INIT, exit_code=1))) == []


def test_an_exited_container_restarts_by_the_restart_policy() -> None:
    crashed = instance("a", EXITED, exit_code=3)
    succeeded = instance("a", EXITED, exit_code=0)
    always = manifests.pod("p", [box("a")])
    on_failure = manifests.pod("p", [box("a")], restartPolicy="OnFailure")
    assert plan(always, runtime(succeeded)) == [(Step.RESTART, "a", 1)]
    assert plan(on_failure, runtime(crashed)) == [(Step.RESTART, "a", 1)]
    assert plan(on_failure, runtime(succeeded)) == []


def test_a_running_container_whose_spec_changed_is_replaced() -> None:
    container = box("a")
    pod = manifests.pod("p", [container])
    same = instance("a", spec_hash=spec_hash(container))
    changed = instance("a", spec_hash="an-older-hash")
    assert plan(pod, runtime(same)) == []
    (action,) = compute_pod_actions(PodSnapshot(pod, runtime(changed))).containers
    assert (action.step, action.attempt) == (Step.REPLACE, 1)
    assert action.message == "Container a definition changed, will be restarted"


def test_a_container_that_failed_its_liveness_probe_is_killed_with_the_probes_grace() -> None:
    pod = manifests.pod("p", [box("a")], terminationGracePeriodSeconds=30)
    running = instance("a")
    failures = {running.container_id: ProbeFailure(ProbeType.LIVENESS, 5)}
    (action,) = compute_pod_actions(PodSnapshot(pod, runtime(running), failed_probes=failures)).containers
    assert (action.step, action.grace) == (Step.KILL, 5)
    assert action.message == "Container a failed liveness probe, will be restarted"


def test_a_resized_container_is_updated_in_place_or_restarted_by_its_resize_policy() -> None:
    limits = {"limits": {"cpu": "500m", "memory": "64Mi"}}
    before = LinuxResources(cpu_shares=102, cpu_quota=10000, cpu_period=100000, memory_limit=64 * 2**20)
    running = instance("a", resources=before)
    in_place = manifests.pod("p", [box("a", resources=limits)])
    restart = manifests.pod(
        "p",
        [
            box(
                "a",
                resources=limits,
                resizePolicy=[{"resourceName": "cpu", "restartPolicy": "RestartContainer"}],
            )
        ],
    )
    assert plan(in_place, runtime(running)) == [(Step.RESIZE, "a", 0)]
    assert plan(restart, runtime(running)) == [(Step.REPLACE, "a", 1)]


def test_an_ephemeral_container_whose_target_does_not_run_is_blocked() -> None:
    debug = {"name": "dbg", "image": BUSYBOX_IMAGE, "targetContainerName": "a"}
    pod = manifests.pod("p", [box("a")], ephemeralContainers=[debug])
    (blocked, start) = compute_pod_actions(PodSnapshot(pod, runtime())).containers
    assert (blocked.step, blocked.message) == (Step.BLOCKED, "unable to find target container a")
    assert (start.step, start.name) == (Step.START, "a")
    running = instance("a")
    (ephemeral,) = compute_pod_actions(PodSnapshot(pod, runtime(running))).containers
    assert (ephemeral.step, ephemeral.target) == (Step.START, running.container_id)
