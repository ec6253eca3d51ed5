"""generate_pod_status and its parts against the kubelet's rules.

Upstream: pkg/kubelet/kubelet_pods.go (generateAPIPodStatus), pkg/kubelet/status/generate.go.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from tests.support.pod_status import cond
from tests.support.status_generation import generate
from vk_common.objects import format_time
from vk_common.qos import pod_qos_class
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)
from vk_provider.status.conditions import need_to_reconcile_pod_readiness
from vk_provider.status.fields import ContainerWaiting
from vk_provider.status.phase import get_phase

NOW = datetime(2026, 11, 30, 1, 2, 3, 456789, tzinfo=UTC)
T0 = datetime(2026, 11, 30, 1, 0, 0, tzinfo=UTC)
HOST = "10.0.0.7"


def make_pod(
    containers: list[str] | list[dict[str, Any]] = ("a", "b"),  # type: ignore[assignment]
    init: list[str] | list[dict[str, Any]] = (),  # type: ignore[assignment]
    policy: str = "Always",
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    def expand(items: Any) -> list[dict[str, Any]]:
        return [{"name": c, "image": "busybox"} if isinstance(c, str) else c for c in items]

    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "uid-1"},
        "spec": {
            "containers": expand(containers),
            "initContainers": expand(init),
            "restartPolicy": policy,
            **spec,
        },
        "status": status if status is not None else {"phase": "Pending"},
    }


def inst(
    name: str,
    state: ContainerRunState = ContainerRunState.RUNNING,
    *,
    role: ContainerRole = ContainerRole.APP,
    attempt: int = 0,
    exit_code: int | None = None,
    **kw: Any,
) -> ContainerInstance:
    if state == ContainerRunState.EXITED and exit_code is None:
        exit_code = 0
    return ContainerInstance(
        name=name,
        role=role,
        attempt=attempt,
        container_id=f"{name}-{attempt}",
        container_uri=f"docker://{name}-{attempt}",
        image="vk-test/busybox:1",
        image_id="sha256:abc",
        state=state,
        started_at=kw.pop("started_at", T0),
        finished_at=kw.pop(
            "finished_at", T0 + timedelta(seconds=5) if state == ContainerRunState.EXITED else None
        ),
        exit_code=exit_code,
        **kw,
    )


def runtime(*containers: ContainerInstance, ip: str = "172.17.0.9", running: bool = True) -> PodRuntimeState:
    return PodRuntimeState(
        uid="uid-1",
        namespace="default",
        name="p",
        sandbox=PodSandboxState("sb", running, ip),
        containers=containers,
    )


def gen(pod: dict[str, Any], state: PodRuntimeState | None, **kw: Any) -> dict[str, Any]:
    return generate(pod, state, **{"host_ip": HOST, "now": NOW, **kw})


def cstatus(status: dict[str, Any], name: str, key: str = "containerStatuses") -> dict[str, Any]:
    return next(s for s in status[key] if s["name"] == name)


def test_new_pod_without_runtime_state_waits_container_creating() -> None:
    status = gen(make_pod(), None)
    assert status["phase"] == "Pending"
    assert [s["state"] for s in status["containerStatuses"]] == [
        {"waiting": {"reason": "ContainerCreating"}}
    ] * 2
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert cond(status, "PodReadyToStartContainers")["status"] == "False"
    assert cond(status, "Initialized")["status"] == "True"
    ready = cond(status, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "ContainersNotReady",
        "containers with unready status: [a b]",
    )
    assert cond(status, "ContainersReady")["reason"] == "ContainersNotReady"
    assert cond(status, "PodScheduled")["status"] == "True"
    assert status["startTime"] == "2026-11-30T01:02:03Z"
    assert status["hostIP"] == HOST and status["hostIPs"] == [{"ip": HOST}]
    assert "podIP" not in status
    assert status["qosClass"] == "BestEffort"


def test_running_pod_with_init_done_is_running_and_ready() -> None:
    pod = make_pod(init=["setup"])
    state = runtime(
        inst("setup", ContainerRunState.EXITED, role=ContainerRole.INIT),
        inst("a"),
        inst("b"),
    )
    status = gen(pod, state)
    assert status["phase"] == "Running"
    assert status["podIP"] == "172.17.0.9" and status["podIPs"] == [{"ip": "172.17.0.9"}]
    for type_ in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"):
        assert cond(status, type_)["status"] == "True", type_
    init = cstatus(status, "setup", "initContainerStatuses")
    assert init["ready"] is True and init["started"] is False
    assert init["state"]["terminated"] == {
        "exitCode": 0,
        "reason": "Completed",
        "startedAt": "2026-11-30T01:00:00Z",
        "finishedAt": "2026-11-30T01:00:05Z",
        "containerID": "docker://setup-0",
    }
    a = cstatus(status, "a")
    assert a == {
        "name": "a",
        "state": {"running": {"startedAt": "2026-11-30T01:00:00Z"}},
        "lastState": {},
        "ready": True,
        "restartCount": 0,
        "image": "vk-test/busybox:1",
        "imageID": "sha256:abc",
        "containerID": "docker://a-0",
        "started": True,
    }


def test_init_running_means_pod_initializing_for_app_containers() -> None:
    pod = make_pod(init=["one", "two"])
    status = gen(pod, runtime(inst("one", role=ContainerRole.INIT)))
    assert status["phase"] == "Pending"
    assert cstatus(status, "a")["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert cstatus(status, "two", "initContainerStatuses")["state"] == {
        "waiting": {"reason": "PodInitializing"}
    }
    initialized = cond(status, "Initialized")
    assert (initialized["status"], initialized["reason"], initialized["message"]) == (
        "False",
        "ContainersNotInitialized",
        "containers with incomplete status: [one two]",
    )
    assert [s["name"] for s in status["initContainerStatuses"]] == ["one", "two"]


def test_statuses_of_regular_containers_sorted_by_name_init_in_spec_order() -> None:
    pod = make_pod(containers=["zeta", "alpha"], init=["z-init", "a-init"])
    status = gen(pod, None)
    assert [s["name"] for s in status["containerStatuses"]] == ["alpha", "zeta"]
    assert [s["name"] for s in status["initContainerStatuses"]] == ["z-init", "a-init"]


def test_restart_never_exit_1_is_failed_with_error() -> None:
    pod = make_pod(containers=["a"], policy="Never")
    status = gen(pod, runtime(inst("a", ContainerRunState.EXITED, exit_code=1, termination_message="boom")))
    assert status["phase"] == "Failed"
    term = cstatus(status, "a")["state"]["terminated"]
    assert (term["exitCode"], term["reason"], term["message"]) == (1, "Error", "boom")
    assert cond(status, "Ready")["reason"] == "PodFailed"
    assert cond(status, "ContainersReady") == {
        "type": "ContainersReady",
        "status": "False",
        "reason": "PodFailed",
        "lastTransitionTime": "2026-11-30T01:02:03Z",
        "lastProbeTime": None,
    }


def test_on_failure_exit_0_is_succeeded_and_completed() -> None:
    pod = make_pod(containers=["a"], policy="OnFailure")
    status = gen(pod, runtime(inst("a", ContainerRunState.EXITED, exit_code=0), running=False))
    assert status["phase"] == "Succeeded"
    assert cond(status, "Ready")["reason"] == "PodCompleted"
    assert cond(status, "Initialized")["status"] == "True"
    assert cond(status, "PodReadyToStartContainers")["status"] == "False"


def test_on_failure_exit_1_restarts_running() -> None:
    pod = make_pod(containers=["a"], policy="OnFailure")
    status = gen(pod, runtime(inst("a", ContainerRunState.EXITED, exit_code=1)))
    assert status["phase"] == "Running"


def test_crash_loop_waiting_keeps_last_state_and_restart_count() -> None:
    pod = make_pod(containers=["a"])
    state = runtime(
        inst("a", ContainerRunState.EXITED, attempt=2, exit_code=3),
        inst("a", ContainerRunState.EXITED, attempt=1, exit_code=3),
    )
    waiting = {"a": ContainerWaiting("CrashLoopBackOff", "back-off 20s restarting failed container=a")}
    status = gen(pod, state, waiting=waiting)
    a = cstatus(status, "a")
    assert a["state"] == {
        "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s restarting failed container=a"}
    }
    assert a["lastState"]["terminated"]["exitCode"] == 3
    assert a["lastState"]["terminated"]["containerID"] == "docker://a-2"
    assert a["restartCount"] == 2
    assert a["ready"] is False and a["started"] is False
    assert status["phase"] == "Running"  # waiting with a lastState counts as stopped; Always restarts


def test_previous_instance_becomes_last_state() -> None:
    pod = make_pod(containers=["a"])
    state = runtime(inst("a", attempt=1), inst("a", ContainerRunState.EXITED, attempt=0, exit_code=137))
    a = cstatus(gen(pod, state), "a")
    assert "running" in a["state"]
    assert a["lastState"]["terminated"]["exitCode"] == 137
    assert a["restartCount"] == 1


def test_image_pull_error_waiting_for_never_created_container() -> None:
    pod = make_pod(containers=["a"])
    status = gen(pod, runtime(), waiting={"a": ContainerWaiting("ErrImagePull", "pull failed")})
    a = cstatus(status, "a")
    assert a["state"] == {"waiting": {"reason": "ErrImagePull", "message": "pull failed"}}
    assert a["lastState"] == {}
    assert status["phase"] == "Pending"


def test_waiting_reason_ignored_when_policy_forbids_restart() -> None:
    pod = make_pod(containers=["a"], policy="Never")
    state = runtime(inst("a", ContainerRunState.EXITED, exit_code=1))
    status = gen(pod, state, waiting={"a": ContainerWaiting("CrashLoopBackOff")})
    assert "terminated" in cstatus(status, "a")["state"]


def test_waiting_reason_of_a_completed_init_container_that_runs_again_shows() -> None:
    """ShouldContainerBeRestarted: a non-sidecar init container that exited 0 in an Always pod
    is restarted (a new sandbox runs it again), so a reason the worker gave it shows. Changed by
    the unification: status/generate._should_restart kept it terminated."""
    pod = make_pod(init=["setup"], policy="Always")
    state = runtime(inst("setup", ContainerRunState.EXITED, role=ContainerRole.INIT, exit_code=0))
    status = gen(pod, state, waiting={"setup": ContainerWaiting("ErrImagePull", "pull failed")})
    setup = cstatus(status, "setup", "initContainerStatuses")
    assert setup["state"] == {"waiting": {"reason": "ErrImagePull", "message": "pull failed"}}
    assert setup["lastState"]["terminated"]["exitCode"] == 0
    on_failure = make_pod(init=["setup"], policy="OnFailure")
    status = gen(on_failure, state, waiting={"setup": ContainerWaiting("ErrImagePull", "pull failed")})
    assert "terminated" in cstatus(status, "setup", "initContainerStatuses")["state"]


def test_waiting_reason_ignored_once_the_pod_is_being_deleted() -> None:
    pod = make_pod(containers=["a"], policy="Always")
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T01:00:00Z"
    state = runtime(inst("a", ContainerRunState.EXITED, exit_code=1))
    status = gen(pod, state, waiting={"a": ContainerWaiting("CrashLoopBackOff")})
    assert "terminated" in cstatus(status, "a")["state"]


def test_oom_killed_reason() -> None:
    pod = make_pod(containers=["a"], policy="Never")
    status = gen(pod, runtime(inst("a", ContainerRunState.EXITED, exit_code=137, oom_killed=True)))
    assert cstatus(status, "a")["state"]["terminated"]["reason"] == "OOMKilled"


def test_start_error_reason_and_message() -> None:
    pod = make_pod(containers=["a"], policy="Never")
    state = runtime(
        inst("a", ContainerRunState.EXITED, exit_code=128, error="exec format error", started_at=None)
    )
    term = cstatus(gen(pod, state), "a")["state"]["terminated"]
    assert (term["reason"], term["message"]) == ("StartError", "exec format error")


def test_created_instance_waits_without_reason() -> None:
    status = gen(make_pod(containers=["a"]), runtime(inst("a", ContainerRunState.CREATED)))
    assert cstatus(status, "a")["state"] == {"waiting": {}}
    assert status["phase"] == "Pending"


def test_unknown_instance_after_running_is_terminated_unknown() -> None:
    pod = make_pod(containers=["a"])
    old = gen(pod, runtime(inst("a")))
    status = gen(pod, runtime(inst("a", ContainerRunState.UNKNOWN)), old_status=old)
    a = cstatus(status, "a")
    assert a["state"]["terminated"] == {
        "reason": "ContainerStatusUnknown",
        "message": "The container could not be located when the pod was terminated",
        "exitCode": 137,
    }
    assert a["restartCount"] == 1


def test_vanished_running_container_without_record_is_stopped_not_waiting() -> None:
    pod = make_pod(containers=["a"])
    old = gen(pod, runtime(inst("a")))
    status = gen(pod, runtime(), old_status=old)
    a = cstatus(status, "a")
    assert a["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert a["lastState"]["terminated"]["reason"] == "ContainerStatusUnknown"
    assert a["restartCount"] == 1
    assert status["phase"] == "Running"


def test_old_terminated_status_kept_when_containers_are_gone() -> None:
    pod = make_pod(containers=["a"], policy="Never")
    old = gen(pod, runtime(inst("a", ContainerRunState.EXITED, exit_code=0)))
    status = gen(pod, None, old_status=old)
    assert cstatus(status, "a") == cstatus(old, "a")
    assert status["phase"] == "Succeeded"
    assert status["podIP"] == "172.17.0.9"  # last known IP stays once the sandbox is gone


def test_readiness_probe_and_startup_probe_flags() -> None:
    pod = make_pod(
        containers=[
            {"name": "a", "image": "x", "readinessProbe": {"exec": {"command": ["true"]}}},
            {"name": "b", "image": "x", "startupProbe": {"exec": {"command": ["true"]}}},
        ]
    )
    state = runtime(inst("a"), inst("b"))
    status = gen(pod, state)
    assert (cstatus(status, "a")["ready"], cstatus(status, "a")["started"]) == (False, True)
    assert (cstatus(status, "b")["ready"], cstatus(status, "b")["started"]) == (False, False)
    assert cond(status, "Ready")["message"] == "containers with unready status: [a b]"
    status = gen(pod, state, readiness={"a": True}, started={"b": True})
    assert cstatus(status, "a")["ready"] is True and cstatus(status, "b")["ready"] is True
    assert cond(status, "Ready")["status"] == "True"


def test_init_failure_with_never_fails_pod() -> None:
    pod = make_pod(init=["setup"], policy="Never")
    state = runtime(inst("setup", ContainerRunState.EXITED, role=ContainerRole.INIT, exit_code=2))
    status = gen(pod, state)
    assert status["phase"] == "Failed"
    assert cstatus(status, "a")["state"] == {"waiting": {"reason": "PodInitializing"}}


def test_init_failure_with_on_failure_stays_pending_in_crash_loop() -> None:
    pod = make_pod(init=["setup"], policy="OnFailure")
    state = runtime(inst("setup", ContainerRunState.EXITED, role=ContainerRole.INIT, exit_code=2))
    status = gen(pod, state, waiting={"setup": ContainerWaiting("CrashLoopBackOff", "back-off")})
    setup = cstatus(status, "setup", "initContainerStatuses")
    assert setup["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert setup["lastState"]["terminated"]["exitCode"] == 2
    assert status["phase"] == "Pending"


def test_pod_is_terminal_decides_by_exit_codes_except_static() -> None:
    pod = make_pod(containers=["a", "b"], policy="Always")
    state = runtime(
        inst("a", ContainerRunState.EXITED, exit_code=0),
        inst("b", ContainerRunState.EXITED, exit_code=143),
    )
    assert gen(pod, state)["phase"] == "Running"
    assert gen(pod, state, pod_is_terminal=True)["phase"] == "Failed"
    static = make_pod(containers=["a", "b"])
    static["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
    assert gen(static, state, pod_is_terminal=True)["phase"] == "Running"
    ok = runtime(inst("a", ContainerRunState.EXITED), inst("b", ContainerRunState.EXITED))
    assert gen(pod, ok, pod_is_terminal=True)["phase"] == "Succeeded"


def test_terminal_phase_never_left() -> None:
    pod = make_pod(containers=["a"])
    old = {"phase": "Succeeded", "reason": "Done", "conditions": []}
    status = gen(pod, runtime(inst("a")), old_status=old)
    assert status["phase"] == "Succeeded" and status["reason"] == "Done"
    api_terminal = make_pod(containers=["a"], status={"phase": "Failed"})
    assert gen(api_terminal, runtime(inst("a")), old_status={"phase": "Running"})["phase"] == "Failed"


def test_reason_and_message_kept_while_phase_unchanged() -> None:
    pod = make_pod(containers=["a"])
    old = {"phase": "Running", "reason": "R", "message": "M"}
    status = gen(pod, runtime(inst("a")), old_status=old)
    assert (status["reason"], status["message"]) == ("R", "M")
    assert "reason" not in gen(pod, runtime(inst("a")), old_status={"phase": "Pending", "reason": "R"})


def test_terminal_reason_forces_failed() -> None:
    pod = make_pod(containers=["a"])
    status = gen(pod, runtime(inst("a")), terminal_reason=("DeadlineExceeded", "Pod was active too long"))
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed",
        "DeadlineExceeded",
        "Pod was active too long",
    )


def test_last_transition_time_kept_while_status_unchanged() -> None:
    pod = make_pod(containers=["a"])
    first = gen(pod, runtime(inst("a")), now=T0)
    later = NOW
    again = gen(pod, runtime(inst("a")), old_status=first, now=later)
    assert cond(again, "Ready")["lastTransitionTime"] == "2026-11-30T01:00:00Z"
    assert again["startTime"] == "2026-11-30T01:00:00Z"
    gone = gen(pod, runtime(inst("a", ContainerRunState.EXITED, exit_code=1)), old_status=first, now=later)
    assert cond(gone, "Ready")["lastTransitionTime"] == "2026-11-30T01:02:03Z"
    assert cond(gone, "Initialized")["lastTransitionTime"] == "2026-11-30T01:00:00Z"


def test_scheduler_pod_scheduled_time_is_kept() -> None:
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    pod = make_pod(status={"phase": "Pending", "conditions": [scheduled]})
    assert cond(gen(pod, None), "PodScheduled")["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_readiness_gates_and_foreign_conditions() -> None:
    gates = [{"conditionType": "example.com/gate"}, {"conditionType": "example.com/other"}]
    foreign = {"type": "example.com/gate", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    pod = make_pod(
        containers=["a"], readinessGates=gates, status={"phase": "Running", "conditions": [foreign]}
    )
    status = gen(pod, runtime(inst("a")))
    assert status["conditions"][0] == foreign
    ready = cond(status, "Ready")
    assert ready["reason"] == "ReadinessGatesNotReady"
    assert ready["message"] == (
        'the status of pod readiness gate "example.com/gate" is not "True", but False, '
        'corresponding condition of pod readiness gate "example.com/other" does not exist.'
    )
    assert cond(status, "ContainersReady")["status"] == "True"
    both = [dict(foreign, status="True"), {"type": "example.com/other", "status": "True"}]
    pod["status"]["conditions"] = both
    assert cond(gen(pod, runtime(inst("a"))), "Ready")["status"] == "True"


def test_host_network_pod_uses_host_ip() -> None:
    pod = make_pod(containers=["a"], hostNetwork=True)
    status = gen(pod, runtime(inst("a"), ip=""))
    assert status["podIP"] == HOST and status["podIPs"] == [{"ip": HOST}]
    assert cond(status, "PodReadyToStartContainers")["status"] == "True"


def test_get_phase_sidecar_running_counts_as_running() -> None:
    pod = make_pod(containers=["a"], init=[{"name": "side", "image": "x", "restartPolicy": "Always"}])
    statuses: list[dict[str, Any]] = [
        {"name": "side", "state": {"running": {}}, "started": True},
        {"name": "a", "state": {"running": {}}},
    ]
    assert get_phase(pod, statuses, False) == "Running"
    not_started: list[dict[str, Any]] = [
        {"name": "side", "state": {"running": {}}, "started": False},
        {"name": "a", "state": {"waiting": {}}},
    ]
    assert get_phase(pod, not_started, False) == "Pending"


def test_get_phase_unknown_container_is_pending() -> None:
    assert (
        get_phase(make_pod(containers=["a", "b"]), [{"name": "a", "state": {"running": {}}}], False)
        == "Pending"
    )


def res(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "image": "x", "resources": resources}


def test_qos_classes() -> None:
    assert pod_qos_class(make_pod(containers=[res()])) == "BestEffort"
    guaranteed = res({"cpu": "500m", "memory": "64Mi"}, {"cpu": "0.5", "memory": "67108864"})
    assert pod_qos_class(make_pod(containers=[guaranteed])) == "Guaranteed"
    assert pod_qos_class(make_pod(containers=[res(limits={"cpu": 1, "memory": "1Gi"})])) == "Guaranteed"
    assert pod_qos_class(make_pod(containers=[res({"cpu": "100m"})])) == "Burstable"
    assert (
        pod_qos_class(make_pod(containers=[res({"cpu": "100m"}, {"cpu": "200m", "memory": "1Gi"})]))
        == "Burstable"
    )
    assert pod_qos_class(make_pod(containers=[guaranteed, res()])) == "Burstable"
    assert pod_qos_class(make_pod(containers=[res({"ephemeral-storage": "1Gi"})])) == "BestEffort"


def test_qos_class_from_api_wins() -> None:
    pod = make_pod(containers=[res()], status={"phase": "Pending", "qosClass": "Burstable"})
    assert gen(pod, None)["qosClass"] == "Burstable"


def test_format_time() -> None:
    assert format_time(NOW) == "2026-11-30T01:02:03Z"
    assert format_time(datetime(2026, 1, 1, 2, 0, 0, 999999, tzinfo=timezone(timedelta(hours=2)))) == (
        "2026-01-01T00:00:00Z"
    )
    assert format_time(datetime(2026, 1, 1, 0, 0, 1)) == "2026-01-01T00:00:01Z"


def test_need_to_reconcile_pod_readiness() -> None:
    gates = [{"conditionType": "example.com/gate"}]
    pod = make_pod(containers=["a"], readinessGates=gates)
    status = gen(pod, runtime(inst("a")))
    pod["status"] = status
    assert cond(status, "Ready")["reason"] == "ReadinessGatesNotReady"
    assert not need_to_reconcile_pod_readiness(pod)
    status["conditions"].append({"type": "example.com/gate", "status": "True"})
    assert need_to_reconcile_pod_readiness(pod)
    assert not need_to_reconcile_pod_readiness(make_pod(containers=["a"]))


def test_waiting_reason_ignored_once_pod_is_deleted() -> None:
    pod = make_pod(containers=["a"])
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    state = runtime(inst("a", ContainerRunState.EXITED, exit_code=1))
    status = gen(pod, state, waiting={"a": ContainerWaiting("CrashLoopBackOff")})
    assert cstatus(status, "a")["state"]["terminated"]["exitCode"] == 1
