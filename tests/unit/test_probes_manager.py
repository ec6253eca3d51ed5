"""ProbeManager and its workers over an in-memory runtime (exec results) and status cache."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, cast

from tests.support import manifests
from tests.support.polling import eventually
from vk_provider.probes.manager import ProbeFailure, ProbeManager
from vk_provider.probes.spec import ProbeType
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerInstance, ContainerRole, ContainerRunState, PodRuntimeState


class ExecRuntime:
    """exec_in_container answers with the exit code set per container id."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.calls: list[tuple[str, list[str]]] = []

    async def exec_in_container(
        self, container_id: str, command: list[str], timeout_seconds: float
    ) -> tuple[int, bytes]:
        self.calls.append((container_id, command))
        return self.codes.get(container_id, 1), b"not yet\n"


class Statuses:
    def __init__(self) -> None:
        self.cache: dict[str, dict[str, Any]] = {}
        self.flags: list[tuple[str, str, str, bool]] = []

    def get_pod_status(self, uid: str) -> dict[str, Any] | None:
        return self.cache.get(uid)

    def _set(self, uid: str, name: str, flag: str, value: bool) -> None:
        self.flags.append((uid, name, flag, value))
        for cstatus in self.cache[uid]["containerStatuses"]:
            if cstatus["name"] == name:
                cstatus[flag] = value

    def set_container_readiness(self, uid: str, container_name: str, ready: bool) -> None:
        self._set(uid, container_name, "ready", ready)

    def set_container_startup(self, uid: str, container_name: str, started: bool) -> None:
        self._set(uid, container_name, "started", started)


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []

    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, field_path: str = ""
    ) -> None:
        self.seen.append((type_, reason, message, field_path))


def pod(**container: Any) -> dict[str, Any]:
    return manifests.pod("p", [{"name": "c", "image": "busybox", **container}], uid="u1")


def running_status(container_id: str, started: bool) -> dict[str, Any]:
    return {
        "phase": "Running",
        "podIP": "10.0.0.5",
        "containerStatuses": [
            {
                "name": "c",
                "containerID": f"docker://{container_id}",
                "state": {"running": {"startedAt": "2020-01-01T00:00:00Z"}},
                "ready": False,
                "started": started,
            }
        ],
    }


def runtime_state(container_id: str) -> PodRuntimeState:
    inst = ContainerInstance(
        "c", ContainerRole.APP, 0, container_id, "busybox", "", ContainerRunState.RUNNING
    )
    return PodRuntimeState("u1", "default", "p", None, (inst,))


WITHIN = 10.0  # polls of the fakes
POLL = 0.01
EXEC = {"exec": {"command": ["test", "-f", "/tmp/ready"]}, "periodSeconds": 1}


async def test_readiness_follows_the_exec_probe() -> None:
    runtime, statuses, events, changes = ExecRuntime(), Statuses(), Events(), []
    manager = ProbeManager(cast(Runtime, runtime), statuses, events, changes.append)
    the_pod = pod(readinessProbe={**EXEC, "failureThreshold": 1})
    statuses.cache["u1"] = running_status("abc", started=True)
    manager.add_pod(the_pod)
    manager.add_pod(the_pod)  # idempotent
    try:
        await eventually(lambda: len(runtime.calls) >= 1, within=WITHIN, interval=POLL)
        assert manager.pod_results(the_pod, runtime_state("abc")) == ({"c": False}, {})
        assert (
            "Warning",
            "Unhealthy",
            "Readiness probe failed: not yet\n",
            "spec.containers{c}",
        ) in events.seen
        runtime.codes["abc"] = 0
        await eventually(lambda: ("u1", "c", "ready", True) in statuses.flags, within=WITHIN, interval=POLL)
        assert manager.pod_results(the_pod, runtime_state("abc")) == ({"c": True}, {})
        assert "u1" in changes
        # A new instance has no result yet: left out (not ready) until probed.
        assert manager.pod_results(the_pod, runtime_state("def")) == ({}, {})
        assert manager.failed_probe("u1", "c", "abc") is None
    finally:
        await manager.stop()
    assert manager.pod_results(the_pod, runtime_state("abc")) == ({}, {})


async def test_startup_gates_and_liveness_fails_after_threshold() -> None:
    runtime, statuses, events, changes = ExecRuntime(), Statuses(), Events(), []
    manager = ProbeManager(cast(Runtime, runtime), statuses, events, changes.append)
    the_pod = pod(
        startupProbe={**EXEC, "failureThreshold": 30},
        livenessProbe={
            "exec": {"command": ["live"]},
            "periodSeconds": 1,
            "failureThreshold": 2,
            "terminationGracePeriodSeconds": 3,
        },
    )
    statuses.cache["u1"] = running_status("abc", started=False)
    manager.add_pod(the_pod)
    try:
        await eventually(lambda: len(runtime.calls) >= 2, within=WITHIN, interval=POLL)
        # Only the startup probe ran while the container was not started.
        assert {c[1][0] for c in runtime.calls} == {"test"}
        assert manager.pod_results(the_pod, runtime_state("abc")) == ({}, {"c": False})
        runtime.codes["abc"] = 0
        await eventually(lambda: ("u1", "c", "started", True) in statuses.flags, within=WITHIN, interval=POLL)
        assert manager.pod_results(the_pod, runtime_state("abc")) == ({}, {"c": True})
        # The liveness probe now runs (the same fake code 0 answers it: alive).
        await eventually(lambda: any(c[1][0] == "live" for c in runtime.calls), within=WITHIN, interval=POLL)
        assert manager.failed_probe("u1", "c", "abc") is None
        runtime.codes["abc"] = 1
        await eventually(
            lambda: manager.failed_probe("u1", "c", "abc") is not None, within=WITHIN, interval=POLL
        )
        assert manager.failed_probe("u1", "c", "abc") == ProbeFailure(ProbeType.LIVENESS, 3)
        assert manager.failed_probe("u1", "c", "other") is None
        assert (
            "Warning",
            "Unhealthy",
            "Liveness probe failed: not yet\n",
            "spec.containers{c}",
        ) in events.seen
    finally:
        await manager.stop()


async def test_workers_end_with_a_terminal_pod() -> None:
    runtime, statuses, events = ExecRuntime(), Statuses(), Events()
    manager = ProbeManager(cast(Runtime, runtime), statuses, events, lambda uid: None)
    the_pod = pod(readinessProbe=EXEC)
    statuses.cache["u1"] = {**running_status("abc", started=True), "phase": "Succeeded"}
    manager.add_pod(the_pod)
    await eventually(
        lambda: manager.pod_results(the_pod, runtime_state("abc")) == ({}, {}) and not manager._tasks,
        within=WITHIN,
        interval=POLL,
    )
    assert runtime.calls == []


async def test_a_never_pods_container_is_probed_until_it_terminated() -> None:
    """worker.go: probing stops once the container terminated and will not run again. A Never
    pod's container that did not finish (created, waiting) still starts, so it stays probed;
    changed by the unification: probes/worker._restartable stopped it by the policy alone."""
    runtime, statuses, events = ExecRuntime(), Statuses(), Events()
    manager = ProbeManager(cast(Runtime, runtime), statuses, events, lambda uid: None)
    the_pod = pod(readinessProbe={**EXEC, "periodSeconds": 0.05})
    the_pod["spec"]["restartPolicy"] = "Never"
    status = running_status("abc", started=False)
    status["containerStatuses"][0]["state"] = {"waiting": {}}
    statuses.cache["u1"] = status
    manager.add_pod(the_pod)
    try:
        await asyncio.sleep(0.3)
        assert manager._tasks  # a few turns later, still probing
        status["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 1}}
        await eventually(lambda: not manager._tasks, within=WITHIN, interval=POLL)
    finally:
        await manager.stop()


async def test_readiness_is_probed_at_once_when_the_startup_probe_passes() -> None:
    """As the kubelet's UpdatePodStatus triggers the readiness worker of a running container
    that is not ready: a readiness period of 30 s does not delay Ready after the start (upstream's
    "should be ready immediately after startupProbe succeeds" NodeConformance spec)."""
    runtime, statuses, events, changes = ExecRuntime(), Statuses(), Events(), []
    manager = ProbeManager(cast(Runtime, runtime), statuses, events, changes.append)
    the_pod = pod(
        startupProbe={"exec": {"command": ["started"]}, "periodSeconds": 1, "failureThreshold": 30},
        readinessProbe={"exec": {"command": ["ready"]}, "periodSeconds": 30},
    )
    statuses.cache["u1"] = running_status("abc", started=False)
    manager.add_pod(the_pod)
    try:
        await eventually(
            lambda: any(c[1] == ["started"] for c in runtime.calls), within=WITHIN, interval=POLL
        )
        runtime.codes["abc"] = 0  # both probes pass from now on
        await eventually(lambda: ("u1", "c", "started", True) in statuses.flags, within=WITHIN, interval=POLL)
        manager.pod_results(the_pod, runtime_state("abc"))  # the status the start publishes
        await eventually(lambda: ("u1", "c", "ready", True) in statuses.flags, within=5.0, interval=POLL)
    finally:
        await manager.stop()
