"""The status of a pod past spec.activeDeadlineSeconds: generate_pod_status with the pod workers'
DEADLINE_EXCEEDED (the kubelet's ShouldEvict in generateAPIPodStatus), then the status
manager's cache and write-back rules that keep it Failed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support.pod_status import cond
from tests.support.status_generation import generate
from vk_provider.pods.policy import DEADLINE_EXCEEDED
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)
from vk_provider.status.cache import update_status
from vk_provider.status.writeback import could_have_running_containers, merge_pod_status, status_patch

T0 = datetime(2026, 11, 30, 1, 0, 0, tzinfo=UTC)
NOW = T0 + timedelta(seconds=30)
HOST = "10.0.0.7"
MESSAGE = "Pod was active on the node longer than the specified deadline"


def make_pod(status: dict[str, Any] | None = None, static: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "uid": "uid-1"}
    if static:
        meta["annotations"] = {"kubernetes.io/config.source": "file"}
    return {
        "metadata": meta,
        "spec": {
            "containers": [{"name": "a", "image": "busybox"}],
            "restartPolicy": "Always",
            "activeDeadlineSeconds": 5,
        },
        "status": status if status is not None else {"phase": "Pending"},
    }


def app(state: ContainerRunState, exit_code: int | None = None) -> ContainerInstance:
    return ContainerInstance(
        name="a",
        role=ContainerRole.APP,
        attempt=0,
        container_id="a-0",
        image="busybox",
        image_id="sha256:abc",
        state=state,
        started_at=T0,
        finished_at=NOW if state == ContainerRunState.EXITED else None,
        exit_code=exit_code,
    )


def runtime(instance: ContainerInstance | None, sandbox_running: bool = True) -> PodRuntimeState:
    return PodRuntimeState(
        uid="uid-1",
        namespace="default",
        name="p",
        sandbox=PodSandboxState("sb", sandbox_running, "172.17.0.9"),
        containers=(instance,) if instance is not None else (),
    )


def gen(pod: dict[str, Any], state: PodRuntimeState | None, **kw: Any) -> dict[str, Any]:
    """test_status_generate's `gen` at this module's NOW, for a pod past its deadline."""
    return generate(pod, state, **{"host_ip": HOST, "now": NOW, "terminal_reason": DEADLINE_EXCEEDED, **kw})


def running_status() -> dict[str, Any]:
    return gen(make_pod(), runtime(app(ContainerRunState.RUNNING)), terminal_reason=None, now=T0)


def test_a_running_pod_past_its_deadline_is_failed_with_the_kubelets_reason() -> None:
    old = running_status()
    assert old["phase"] == "Running"
    status = gen(make_pod(), runtime(app(ContainerRunState.RUNNING)), old_status=old)
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "DeadlineExceeded", MESSAGE)
    assert status["startTime"] == old["startTime"]
    assert cond(status, "Ready")["status"] == "False"


def test_the_terminal_status_after_the_kill() -> None:
    old = running_status()
    killed = runtime(app(ContainerRunState.EXITED, exit_code=137), sandbox_running=False)
    status = gen(make_pod(), killed, old_status=old, pod_is_terminal=True)
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "DeadlineExceeded", MESSAGE)
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")
    assert status["podIP"] == "172.17.0.9"


def test_a_pod_that_never_started_a_container_fails_too() -> None:
    status = gen(make_pod(status={"phase": "Pending", "startTime": "2026-11-30T00:00:00Z"}), None)
    assert (status["phase"], status["reason"]) == ("Failed", "DeadlineExceeded")
    assert status["startTime"] == "2026-11-30T00:00:00Z"


def test_a_static_pod_fails_with_the_same_reason() -> None:
    killed = runtime(app(ContainerRunState.EXITED, exit_code=137), sandbox_running=False)
    status = gen(make_pod(static=True), killed, pod_is_terminal=True)
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "DeadlineExceeded", MESSAGE)


def test_the_failed_phase_and_its_reason_are_never_left() -> None:
    failed = gen(make_pod(), runtime(app(ContainerRunState.RUNNING)), old_status=running_status())
    # A later status without the deadline reason (and a container running again) keeps it.
    again = gen(make_pod(), runtime(app(ContainerRunState.RUNNING)), old_status=failed, terminal_reason=None)
    assert (again["phase"], again["reason"], again["message"]) == ("Failed", "DeadlineExceeded", MESSAGE)
    api_failed = make_pod(status={**failed})
    from_api = gen(api_failed, runtime(app(ContainerRunState.RUNNING)), terminal_reason=None)
    assert (from_api["phase"], from_api["reason"]) == ("Failed", "DeadlineExceeded")


def test_a_terminal_phase_already_in_the_api_wins_over_the_deadline() -> None:
    done = runtime(app(ContainerRunState.EXITED, exit_code=0), sandbox_running=False)
    pod = make_pod(status={"phase": "Succeeded", "startTime": "2026-11-30T00:00:00Z"})
    assert gen(pod, done, pod_is_terminal=True)["phase"] == "Succeeded"


def test_the_cache_keeps_it_failed_and_the_write_waits_for_the_containers() -> None:
    pod = make_pod(status={"phase": "Running"})
    entry, why = update_status(None, pod, running_status(), force=False, finished=False, now=T0)
    assert entry is not None, why
    failed = gen(make_pod(), runtime(app(ContainerRunState.RUNNING)), old_status=entry.status)
    entry, why = update_status(entry, pod, failed, force=False, finished=False, now=NOW)
    assert entry is not None, why
    running_again = running_status()
    kept, _ = update_status(entry, pod, running_again, force=True, finished=False, now=NOW)
    assert kept is not None
    assert (kept.status["phase"], kept.status["reason"], kept.status["message"]) == (
        "Failed",
        "DeadlineExceeded",
        MESSAGE,
    )
    # Withheld while the container still runs (mergePodStatus)...
    api_status = running_status()
    could_run = could_have_running_containers(entry.status, pod_is_finished=False)
    assert could_run is True
    assert merge_pod_status(api_status, entry.status, could_run, NOW)["phase"] == "Running"
    # ...published once it was killed, Ready forced False with PodFailed.
    killed = runtime(app(ContainerRunState.EXITED, exit_code=137), sandbox_running=False)
    final = gen(make_pod(), killed, old_status=entry.status, pod_is_terminal=True)
    entry, why = update_status(entry, pod, final, force=True, finished=True, now=NOW)
    assert entry is not None, why
    merged = merge_pod_status(api_status, entry.status, False, NOW)
    assert (merged["phase"], merged["reason"], merged["message"]) == ("Failed", "DeadlineExceeded", MESSAGE)
    assert (cond(merged, "Ready")["status"], cond(merged, "Ready")["reason"]) == ("False", "PodFailed")
    patch = status_patch("uid-1", api_status, merged)
    assert patch is not None
    assert patch["metadata"] == {"uid": "uid-1"}
    body = patch["status"]
    assert (body["phase"], body["reason"], body["message"]) == ("Failed", "DeadlineExceeded", MESSAGE)
