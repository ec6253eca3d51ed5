"""RestartAllContainers (kuberuntime/restart_all.py, with the plan and the status it drives): a
container exiting with a code whose rule says RestartAllContainers resets every init and app
container of its pod, the sandbox kept, the pod marked AllContainersRestarting meanwhile, then
the pod starts anew, each container one restart more."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.support import manifests
from tests.support.images import BUSYBOX_IMAGE
from tests.support.status_generation import generate
from vk_provider.kuberuntime.restart_all import (
    cleaned_up,
    containers_to_reset,
    restarting,
    restarting_condition,
    should_restart_all,
)
from vk_provider.pods.plan import PodSnapshot, Step, compute_pod_actions
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)
from vk_provider.status.cache import illegal_transition

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RULE = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}


def pod() -> dict[str, Any]:
    init = [{"name": "setup", "image": BUSYBOX_IMAGE}]
    app = [
        {"name": "main", "image": BUSYBOX_IMAGE, "restartPolicy": "Never", "restartPolicyRules": [RULE]},
        {"name": "side", "image": BUSYBOX_IMAGE},
    ]
    return manifests.pod("p", app, initContainers=init, uid="u1")


def instance(
    name: str, state: ContainerRunState, role: ContainerRole = ContainerRole.APP, code: int = 0
) -> ContainerInstance:
    exit_code = code if state == ContainerRunState.EXITED else None
    return ContainerInstance(
        name, role, 0, f"{name}-id", BUSYBOX_IMAGE, "sha256:x", state, exit_code=exit_code
    )


def runtime(*containers: ContainerInstance) -> PodRuntimeState:
    return PodRuntimeState("u1", "default", "p", PodSandboxState("sb", True, "10.0.0.2", T0), containers)


EXITED, RUNNING = ContainerRunState.EXITED, ContainerRunState.RUNNING
SETUP = instance("setup", EXITED, ContainerRole.INIT)


def test_an_exit_code_whose_rule_says_so_restarts_all_containers() -> None:
    triggered = runtime(SETUP, instance("main", EXITED, code=42), instance("side", RUNNING))
    other_code = runtime(SETUP, instance("main", EXITED, code=1), instance("side", RUNNING))
    assert restarting(pod(), triggered, None)
    assert not restarting(pod(), other_code, None)


def test_the_api_status_keeps_it_going_until_the_runtime_holds_no_container() -> None:
    marked = {"conditions": [{"type": "AllContainersRestarting", "status": "True"}]}
    assert should_restart_all(pod(), runtime(), marked)
    assert cleaned_up(pod(), runtime()) and not restarting(pod(), runtime(), marked)
    assert restarting_condition(pod(), runtime(), True, "Pending") == {
        "type": "AllContainersRestarting",
        "status": "False",
    }


def test_every_container_is_reset_the_ones_that_triggered_it_last() -> None:
    main = instance("main", EXITED, code=42)
    side = instance("side", RUNNING)
    state = runtime(SETUP, main, side)
    assert [i.name for _, i in containers_to_reset(pod(), state)] == ["side", "setup", "main"]
    actions = compute_pod_actions(PodSnapshot(pod(), state, restart_all=True))
    assert actions.sandbox is not None and not actions.create_sandbox
    assert [(a.step, a.name) for a in actions.containers] == [
        (Step.RESET, "side"),
        (Step.RESET, "setup"),
        (Step.RESET, "main"),
    ]


def test_once_reset_the_pod_starts_again_one_restart_more() -> None:
    counts = {"setup": 1, "main": 1, "side": 1}  # the status the reset published
    (start,) = compute_pod_actions(PodSnapshot(pod(), runtime(), restart_counts=counts)).containers
    assert (start.step, start.name, start.attempt) == (Step.START, "setup", 1)


def test_the_condition_is_true_while_containers_remain_and_false_once_the_pod_ends() -> None:
    state = runtime(SETUP, instance("main", EXITED, code=42), instance("side", RUNNING))
    condition = restarting_condition(pod(), state, should_restart_all(pod(), state, None), "Running")
    assert condition is not None and (condition["status"], condition["reason"]) == (
        "True",
        "RestartAllContainersStarted",
    )
    assert restarting_condition(pod(), state, True, "Failed") == {
        "type": "AllContainersRestarting",
        "status": "False",
        "reason": "PodFailed",
    }
    assert (
        restarting_condition(
            manifests.pod("plain", [{"name": "c", "image": BUSYBOX_IMAGE}]), state, False, "Running"
        )
        is None
    )


def test_a_removed_container_waits_as_restarting_all_containers() -> None:
    old = {
        "conditions": [{"type": "AllContainersRestarting", "status": "True"}],
        "containerStatuses": [
            {"name": "main", "state": {"terminated": {"exitCode": 42}}, "restartCount": 0},
            {"name": "side", "state": {"running": {}}, "restartCount": 2},
        ],
    }
    status = generate(pod(), runtime(), host_ip="10.0.0.1", now=T0, old_status=old)
    side = next(s for s in status["containerStatuses"] if s["name"] == "side")
    assert side["state"]["waiting"]["reason"] == "RestartingAllContainers"
    assert side["lastState"]["terminated"]["exitCode"] == 137 and side["restartCount"] == 3
    marked = next(c for c in status["conditions"] if c["type"] == "AllContainersRestarting")
    assert marked["status"] == "False"  # cleaned up: the pod starts anew


def test_a_never_pod_is_not_failed_by_the_containers_it_removed_to_restart() -> None:
    # getPhase: a last termination with reason RestartingAllContainers is restartable, for init
    # and app containers alike; with restartPolicy Never the pod would otherwise be Failed.
    never = pod()
    never["spec"]["restartPolicy"] = "Never"
    removed = {"reason": "RestartingAllContainers", "exitCode": 137}
    old = {
        "conditions": [{"type": "AllContainersRestarting", "status": "True"}],
        "initContainerStatuses": [{"name": "setup", "state": {"terminated": {"exitCode": 0}}}],
        "containerStatuses": [
            {"name": "main", "state": {"terminated": {"exitCode": 42}}, "restartCount": 0},
            {"name": "side", "state": {"running": {}}, "restartCount": 0},
        ],
    }
    status = generate(never, runtime(), host_ip="10.0.0.1", now=T0, old_status=old)
    assert status["phase"] == "Running"  # stopped, but every one of them runs again
    assert [s["lastState"]["terminated"]["reason"] for s in status["containerStatuses"]] == [
        removed["reason"],
        removed["reason"],
    ]
    assert status["initContainerStatuses"][0]["restartCount"] == 1


def test_a_container_started_again_shows_how_its_removed_run_ended() -> None:
    # convertToAPIContainerStatuses: no earlier instance is left in the runtime, so the old
    # status's end (another container ID) becomes the lastState, and the restart count stays.
    old = {
        "containerStatuses": [
            {
                "name": "side",
                "containerID": "docker://gone",
                "state": {"waiting": {"reason": "RestartingAllContainers"}},
                "lastState": {"terminated": {"reason": "RestartingAllContainers", "exitCode": 137}},
                "restartCount": 1,
            }
        ],
    }
    state = runtime(SETUP, instance("side", RUNNING))
    status = generate(pod(), state, host_ip="10.0.0.1", now=T0, old_status=old)
    side = next(s for s in status["containerStatuses"] if s["name"] == "side")
    assert side["restartCount"] == 1 and "running" in side["state"]
    assert side["lastState"]["terminated"]["reason"] == "RestartingAllContainers"


def test_a_pod_that_may_restart_in_place_lets_terminated_containers_come_back() -> None:
    never = pod()
    never["spec"]["restartPolicy"] = "Never"
    ended = {"containerStatuses": [{"name": "side", "state": {"terminated": {"exitCode": 0}}}]}
    back = {"containerStatuses": [{"name": "side", "state": {"running": {}}}]}
    assert illegal_transition(ended, back, never) is None
    del never["spec"]["containers"][0]["restartPolicyRules"]
    assert illegal_transition(ended, back, never) == "side"


def test_an_init_container_whose_rule_restarts_all_does_not_fail_a_never_pod() -> None:
    # ContainerShouldRestart is true for a RestartAllContainers rule (the pod restarts in place).
    never = pod()
    never["spec"]["restartPolicy"] = "Never"
    never["spec"]["initContainers"][0].update(restartPolicy="Never", restartPolicyRules=[RULE])
    state = runtime(instance("setup", EXITED, ContainerRole.INIT, code=42))
    status = generate(never, state, host_ip="10.0.0.1", now=T0)
    assert status["phase"] == "Pending"
