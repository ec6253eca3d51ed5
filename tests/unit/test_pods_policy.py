"""The kubelet rules of pods/policy.py: restart decisions, the default pull policy, when a
pod's containers are finished, and the helpers the Events and the sandbox check rely on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from vk_provider.pods.policy import (
    default_pull_policy,
    field_path,
    finished,
    in_sandbox,
    parse_time,
    restart_policy,
    should_restart,
)
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def pod(
    policy: str | None = None, apps: tuple[str, ...] = ("app",), inits: tuple[str, ...] = ()
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": n} for n in apps]}
    if inits:
        spec["initContainers"] = [{"name": n} for n in inits]
    if policy is not None:
        spec["restartPolicy"] = policy
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": spec}


def instance(
    name: str = "app",
    state: ContainerRunState = ContainerRunState.EXITED,
    exit_code: int | None = 0,
    role: ContainerRole = ContainerRole.APP,
    created_at: datetime | None = None,
) -> ContainerInstance:
    return ContainerInstance(
        name=name,
        role=role,
        attempt=0,
        container_id=f"id-{name}",
        image="vk-test/busybox:1",
        image_id="sha256:x",
        state=state,
        created_at=created_at,
        exit_code=exit_code if state == ContainerRunState.EXITED else None,
    )


def runtime_state(*containers: ContainerInstance) -> PodRuntimeState:
    return PodRuntimeState(uid="u1", namespace="default", name="p", containers=containers)


def test_restart_policy_defaults_to_always() -> None:
    assert restart_policy(pod()) == "Always"
    assert restart_policy({"metadata": {}}) == "Always"
    assert restart_policy(pod("OnFailure")) == "OnFailure"


@pytest.mark.parametrize(
    ("policy", "exit_code", "expected"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 1, True),
        ("OnFailure", 137, True),
        ("Never", 0, False),
        ("Never", 1, False),
    ],
)
def test_should_restart_an_exited_container(policy: str, exit_code: int, expected: bool) -> None:
    assert should_restart(pod(policy), instance(exit_code=exit_code)) is expected


def test_on_failure_restarts_a_container_that_did_not_exit() -> None:
    created = instance(state=ContainerRunState.CREATED)
    assert should_restart(pod("OnFailure"), created) is True
    assert should_restart(pod("Never"), created) is False


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("registry.local:5000/team/busybox", "Always"),
        ("registry.local:5000/team/busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("registry.local:5000/team/busybox:1", "IfNotPresent"),
        ("busybox@sha256:" + "a" * 64, "IfNotPresent"),
    ],
)
def test_default_pull_policy(image: str, expected: str) -> None:
    assert default_pull_policy(image) == expected


def test_field_path_names_the_container_list() -> None:
    assert field_path(ContainerRole.APP, "web") == "spec.containers{web}"
    assert field_path(ContainerRole.INIT, "setup") == "spec.initContainers{setup}"


def test_a_pod_is_finished_when_no_app_container_runs_again() -> None:
    done = runtime_state(instance("a", exit_code=0), instance("b", exit_code=3))
    assert finished(pod("Never", apps=("a", "b")), done) is True
    assert finished(pod("Always", apps=("a", "b")), done) is False
    # OnFailure: b failed, so it runs again.
    assert finished(pod("OnFailure", apps=("a", "b")), done) is False
    succeeded = runtime_state(instance("a", exit_code=0), instance("b", exit_code=0))
    assert finished(pod("OnFailure", apps=("a", "b")), succeeded) is True


def test_a_pod_is_not_finished_while_a_container_runs_or_never_ran() -> None:
    running = runtime_state(instance("a"), instance("b", state=ContainerRunState.RUNNING))
    assert finished(pod("Never", apps=("a", "b")), running) is False
    assert finished(pod("Never", apps=("a", "b")), runtime_state(instance("a"))) is False


def test_a_failed_init_container_finishes_a_never_pod_only() -> None:
    failed_init = runtime_state(instance("init", exit_code=1, role=ContainerRole.INIT))
    assert finished(pod("Never", inits=("init",)), failed_init) is True
    assert finished(pod("OnFailure", inits=("init",)), failed_init) is False
    ok_init = runtime_state(instance("init", exit_code=0, role=ContainerRole.INIT))
    assert finished(pod("Never", inits=("init",)), ok_init) is False


def test_in_sandbox_compares_creation_times() -> None:
    sandbox = PodSandboxState(container_id="s", running=True, created_at=T0)
    assert in_sandbox(instance(created_at=T0 + timedelta(seconds=1)), sandbox) is True
    assert in_sandbox(instance(created_at=T0 - timedelta(seconds=1)), sandbox) is False
    assert in_sandbox(instance(created_at=None), sandbox) is True
    assert in_sandbox(instance(created_at=T0), PodSandboxState(container_id="s", running=True)) is True


def test_parse_time() -> None:
    assert parse_time("2026-01-01T00:00:00Z") == T0.timestamp()
    assert parse_time("") is None
    assert parse_time(None) is None
    assert parse_time("not a time") is None
