"""The kubelet rules of pods/policy.py: when a pod's containers are finished, and the helpers
the Events and the sandbox check rely on (the shared rules are tested in test_kube_objects)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support import manifests
from vk_provider.pods.policy import field_path, finished, in_sandbox
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
    spec: dict[str, Any] = {}
    if inits:
        spec["initContainers"] = [{"name": n} for n in inits]
    if policy is not None:
        spec["restartPolicy"] = policy
    return manifests.pod("p", [{"name": n} for n in apps], uid="u1", **spec)


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
