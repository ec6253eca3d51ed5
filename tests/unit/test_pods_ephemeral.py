"""Ephemeral containers: which to start, their PID target, their Docker kwargs and their status."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.support import docker_kwargs, manifests
from tests.support.launches import launch
from tests.support.status_generation import generate
from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.pods.ephemeral import ephemeral_target, ephemeral_to_start
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)
from vk_provider.status.fields import ContainerWaiting

NOW = datetime(2026, 12, 1, 19, 0, 0, tzinfo=UTC)


def _pod(*debuggers: dict[str, Any], **spec_fields: Any) -> dict[str, Any]:
    return {
        **manifests.pod(
            "web",
            [{"name": "c", "image": "vk-test/busybox:1"}],
            namespace="ns",
            uid="u1",
            ephemeralContainers=list(debuggers),
            **spec_fields,
        ),
        "status": {"phase": "Running"},
    }


def _instance(name: str, role: ContainerRole, state: ContainerRunState, **kw: Any) -> ContainerInstance:
    return ContainerInstance(
        name=name,
        role=role,
        attempt=0,
        container_id=f"id-{name}",
        container_uri=f"docker://id-{name}",
        image="vk-test/busybox:1",
        image_id="sha256:abc",
        state=state,
        started_at=NOW,
        **kw,
    )


def _state(*instances: ContainerInstance) -> PodRuntimeState:
    sandbox = PodSandboxState(container_id="sb", running=True, ip="10.0.0.2")
    return PodRuntimeState(uid="u1", namespace="ns", name="web", sandbox=sandbox, containers=instances)


DBG = {"name": "dbg", "image": "vk-test/busybox:1", "targetContainerName": "c"}


def test_an_ephemeral_container_is_started_once_and_never_again() -> None:
    pod = _pod(DBG, {"name": "other", "image": "vk-test/busybox:1"})
    running_c = _instance("c", ContainerRole.APP, ContainerRunState.RUNNING)
    assert [c["name"] for c in ephemeral_to_start(pod, _state(running_c))] == ["dbg", "other"]
    exited = _instance("dbg", ContainerRole.EPHEMERAL, ContainerRunState.EXITED, exit_code=1)
    assert [c["name"] for c in ephemeral_to_start(pod, _state(running_c, exited))] == ["other"]


def test_the_target_must_be_running() -> None:
    running_c = _instance("c", ContainerRole.APP, ContainerRunState.RUNNING)
    assert ephemeral_target(DBG, _state(running_c)) == ("id-c", "")
    exited_c = _instance("c", ContainerRole.APP, ContainerRunState.EXITED, exit_code=0)
    assert ephemeral_target(DBG, _state(exited_c)) == ("", "unable to find target container c")
    assert ephemeral_target({"name": "dbg"}, None) == ("", "")


def _launch(pod: dict[str, Any], target: str) -> ContainerLaunch:
    return launch(pod, role=ContainerRole.EPHEMERAL, ip="10.0.0.2", target=target)


def test_the_target_s_pid_namespace_unless_the_pod_shares_one() -> None:
    kw = docker_kwargs.container_create_kwargs(
        _launch(_pod(DBG), "id-c"), node_name="n", termination_file=None
    )
    assert kw["pid_mode"] == "container:id-c" and kw["network_mode"] == "container:sb"
    assert kw["labels"]["io.vk-provider.role"] == "ephemeral"
    shared = _pod(DBG, shareProcessNamespace=True)
    kw = docker_kwargs.container_create_kwargs(_launch(shared, "id-c"), node_name="n", termination_file=None)
    assert kw["pid_mode"] == "container:sb"
    kw = docker_kwargs.container_create_kwargs(_launch(_pod(DBG), ""), node_name="n", termination_file=None)
    assert "pid_mode" not in kw


def test_status_lists_ephemeral_containers_never_ready_and_not_in_the_phase() -> None:
    pod = _pod(DBG, {"name": "late", "image": "vk-test/busybox:1"})
    state = _state(
        _instance("c", ContainerRole.APP, ContainerRunState.RUNNING),
        _instance("dbg", ContainerRole.EPHEMERAL, ContainerRunState.EXITED, exit_code=3, finished_at=NOW),
    )
    waiting = {"late": ContainerWaiting("CreateContainerConfigError", "unable to find target container x")}
    status = generate(pod, state, host_ip="10.0.0.7", now=NOW, waiting=waiting)
    assert status["phase"] == "Running"
    dbg, late = status["ephemeralContainerStatuses"]
    assert dbg["name"] == "dbg" and dbg["state"]["terminated"]["exitCode"] == 3
    assert dbg["containerID"] == "docker://id-dbg" and dbg["ready"] is False and "started" not in dbg
    assert late["state"] == {
        "waiting": {"reason": "CreateContainerConfigError", "message": "unable to find target container x"}
    }
    assert [s["name"] for s in status["containerStatuses"]] == ["c"]
    assert "ephemeralContainerStatuses" not in generate(_pod(), state, host_ip="", now=NOW)
