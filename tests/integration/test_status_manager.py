"""StatusManager against the sandbox apiserver: what the API shows after the manager's writes.

The manager is driven with statuses from generate_pod_status over runtime states built in the
test (no Docker needed); everything is observed through the API and the sandbox's request
counters (`GET /debug/sandbox/counters`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.metrics import sample
from tests.support.polling import eventually
from tests.support.sandbox import RunningSandbox, admin_session, running_sandbox
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import ApiStatusError, KubeClient, make_kube_client
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)
from vk_provider.status.cache import status_equal_by_kubelet
from vk_provider.status.generate import generate_pod_status
from vk_provider.status.manager import StatusManager

NODE = "status-node"
HOST_IP = "10.9.8.7"
PODS = "/api/v1/namespaces/default/pods"
DEADLINE = 20.0


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[RunningSandbox]:
    async with running_sandbox(tmp_path, debug=True, controllers=False) as server:
        yield server


@pytest.fixture
async def client(sandbox: RunningSandbox) -> AsyncIterator[KubeClient]:
    kube = await make_kube_client(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
    try:
        yield kube
    finally:
        await kube.close()


async def counters(sandbox: RunningSandbox) -> dict[str, int]:
    async with (
        admin_session(sandbox) as session,
        session.get(f"{sandbox.url}/debug/sandbox/counters") as resp,
    ):
        body = await resp.json()
    return dict(body["requests"])


async def create_pod(client: KubeClient, name: str = "p", **spec: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": spec.pop("annotations", {})},
        "spec": {
            "nodeName": NODE,
            "restartPolicy": "Never",
            "containers": [{"name": "app", "image": "vk-test/busybox:1"}],
            **spec,
        },
    }
    return await client.create(PODS, body)


def runtime_state(
    pod: dict[str, Any], state: ContainerRunState, exit_code: int | None = None
) -> PodRuntimeState:
    meta = pod["metadata"]
    started = datetime(2026, 11, 30, 1, 0, 0, tzinfo=UTC)
    return PodRuntimeState(
        uid=meta["uid"],
        namespace=meta["namespace"],
        name=meta["name"],
        sandbox=PodSandboxState("sandbox-id", state == ContainerRunState.RUNNING, "172.17.0.42"),
        containers=(
            ContainerInstance(
                name="app",
                role=ContainerRole.APP,
                attempt=0,
                container_id="c0ffee",
                container_uri="docker://c0ffee",
                image="vk-test/busybox:1",
                image_id="sha256:feed",
                state=state,
                started_at=started,
                finished_at=started if state == ContainerRunState.EXITED else None,
                exit_code=exit_code,
            ),
        ),
    )


def status_for(
    sm: StatusManager, pod: dict[str, Any], state: ContainerRunState, exit_code: int | None = None
) -> dict[str, Any]:
    return generate_pod_status(
        pod,
        runtime_state(pod, state, exit_code),
        waiting={},
        pod_is_terminal=state == ContainerRunState.EXITED,
        old_status=sm.get_pod_status(pod["metadata"]["uid"]),
        readiness={},
        started={},
        host_ip=HOST_IP,
        now=datetime.now(UTC),
    )


async def get_pod(client: KubeClient, name: str = "p") -> dict[str, Any] | None:
    try:
        return await client.get(f"{PODS}/{name}")
    except ApiStatusError as exc:
        if exc.status == 404:
            return None
        raise


def condition(pod: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for cond in (pod or {}).get("status", {}).get("conditions") or []:
        if cond["type"] == type_:
            return dict(cond)
    return None


async def phase_is(client: KubeClient, phase: str, name: str = "p") -> bool:
    pod = await get_pod(client, name)
    return pod is not None and pod.get("status", {}).get("phase") == phase


@pytest.fixture
async def manager(client: KubeClient) -> AsyncIterator[StatusManager]:
    sm = StatusManager(client, sync_period=0.5)
    await sm.start()
    try:
        yield sm
    finally:
        await sm.stop()


async def test_same_status_twice_writes_once(
    sandbox: RunningSandbox, client: KubeClient, manager: StatusManager
) -> None:
    pod = await create_pod(client)
    status = status_for(manager, pod, ContainerRunState.RUNNING)
    manager.set_pod_status(pod, status)
    manager.set_pod_status(pod, status_for(manager, pod, ContainerRunState.RUNNING))
    await eventually(lambda: phase_is(client, "Running"), what="phase Running", within=DEADLINE)
    await asyncio.sleep(2.0)  # several full passes (sync period 0.5 s)
    assert (await counters(sandbox)).get("patch pods/status") == 1
    api = await get_pod(client)
    assert api is not None
    shown = api["status"]
    assert shown["podIP"] == "172.17.0.42" and shown["hostIP"] == HOST_IP
    assert shown["containerStatuses"][0]["containerID"] == "docker://c0ffee"
    ready = condition(api, "Ready")
    assert ready is not None and ready["status"] == "True"
    assert sample(manager.metrics, "vk_provider_pod_status_patches_total") == 1
    cached = manager.get_pod_status(pod["metadata"]["uid"])
    assert cached is not None and status_equal_by_kubelet(shown, cached)  # the API converged: no reconcile


async def test_foreign_readiness_gate_condition_survives_writes(
    sandbox: RunningSandbox, client: KubeClient, manager: StatusManager
) -> None:
    pod = await create_pod(client, readinessGates=[{"conditionType": "example.com/gate"}])
    manager.set_pod_status(pod, status_for(manager, pod, ContainerRunState.RUNNING))
    await eventually(lambda: phase_is(client, "Running"), what="phase Running", within=DEADLINE)
    gate = {"type": "example.com/gate", "status": "True", "lastTransitionTime": "2026-11-30T00:00:00Z"}
    await client.patch(f"{PODS}/p/status", {"status": {"conditions": [gate]}})
    writes = sample(manager.metrics, "vk_provider_pod_status_patches_total")
    manager.set_container_readiness(pod["metadata"]["uid"], "app", False)

    async def written() -> bool:
        return sample(manager.metrics, "vk_provider_pod_status_patches_total") > writes

    await eventually(written, what="a second status write", within=DEADLINE)
    api = await get_pod(client)
    stored = {**gate, "lastProbeTime": None}  # as the API server writes an unset metav1.Time: null
    assert condition(api, "example.com/gate") == stored
    ready = condition(api, "ContainersReady")
    assert ready is not None and ready["status"] == "False"
    assert ready["message"] == "containers with unready status: [app]"
    await asyncio.sleep(1.5)
    assert condition(await get_pod(client), "example.com/gate") == stored


async def test_foreign_change_to_ready_is_repaired_within_a_sync_period(
    sandbox: RunningSandbox, client: KubeClient, manager: StatusManager
) -> None:
    pod = await create_pod(client)
    manager.set_pod_status(pod, status_for(manager, pod, ContainerRunState.RUNNING))
    await eventually(lambda: phase_is(client, "Running"), what="phase Running", within=DEADLINE)
    tampered = {"type": "Ready", "status": "False", "reason": "NodeNotReady"}
    await client.patch(f"{PODS}/p/status", {"status": {"conditions": [tampered]}})
    ready = condition(await get_pod(client), "Ready")
    assert ready is not None and ready["status"] == "False"

    async def repaired() -> bool:
        cond = condition(await get_pod(client), "Ready")
        return cond is not None and cond["status"] == "True" and "reason" not in cond

    await eventually(repaired, what="Ready repaired", within=5.0)


async def test_injected_conflict_and_server_error_are_retried(
    sandbox: RunningSandbox, client: KubeClient, manager: StatusManager
) -> None:
    assert sandbox.debug is not None
    pod = await create_pod(client)
    sandbox.debug.fail_next("patch", r"/pods/p/status$", 409)
    sandbox.debug.fail_next("patch", r"/pods/p/status$", 500)
    manager.set_pod_status(pod, status_for(manager, pod, ContainerRunState.RUNNING))
    await eventually(lambda: phase_is(client, "Running"), what="phase Running after retries", within=DEADLINE)
    assert (
        sample(manager.metrics, "vk_provider_pod_status_conflicts_total") == 1
        and sample(manager.metrics, "vk_provider_pod_status_errors_total") == 1
    )
    assert (await counters(sandbox)).get("patch pods/status") == 3


async def test_deleted_terminal_pod_is_finally_deleted(
    sandbox: RunningSandbox, client: KubeClient, manager: StatusManager
) -> None:
    pod = await create_pod(client)
    manager.set_pod_status(pod, status_for(manager, pod, ContainerRunState.RUNNING))
    await eventually(lambda: phase_is(client, "Running"), what="phase Running", within=DEADLINE)
    await client.delete(f"{PODS}/p")
    deleting = await get_pod(client)
    assert deleting is not None and deleting["metadata"].get("deletionTimestamp")
    manager.set_pod_status(deleting, status_for(manager, deleting, ContainerRunState.EXITED, 0))
    await eventually(lambda: phase_is(client, "Succeeded"), what="phase Succeeded", within=DEADLINE)
    await asyncio.sleep(1.2)
    assert await get_pod(client) is not None, "deleted before the pod worker finished"
    manager.terminate_pod(deleting)

    async def gone() -> bool:
        return await get_pod(client) is None

    await eventually(gone, what="the final delete", within=DEADLINE)
    assert (await counters(sandbox)).get("delete pods") == 2
    assert manager.get_pod_status(pod["metadata"]["uid"]) is None


async def test_recreated_pod_with_same_name_is_not_deleted(
    sandbox: RunningSandbox, client: KubeClient, manager: StatusManager
) -> None:
    assert sandbox.debug is not None
    old = await create_pod(client)
    manager.set_pod_status(old, status_for(manager, old, ContainerRunState.RUNNING))
    await eventually(lambda: phase_is(client, "Running"), what="phase Running", within=DEADLINE)
    await client.delete(f"{PODS}/p")  # a Running pod on a node: graceful, it stays with a deletionTimestamp
    deleting = await get_pod(client)
    assert deleting is not None
    manager.set_pod_status(deleting, status_for(manager, deleting, ContainerRunState.EXITED, 0))
    await eventually(lambda: phase_is(client, "Succeeded"), what="phase Succeeded", within=DEADLINE)
    # Hold the manager's DELETE long enough to replace the pod underneath it.
    sandbox.debug.add_latency(1.5, "delete", r"/pods/p$")
    manager.terminate_pod(deleting)
    await asyncio.sleep(0.5)
    await sandbox.store.delete("pods", "default", "p", grace_period_seconds=0)
    new = await create_pod(client)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]

    async def refused() -> bool:
        return sample(manager.metrics, "vk_provider_pod_status_conflicts_total") >= 1

    await eventually(refused, what="the manager's DELETE refused by its UID precondition", within=DEADLINE)
    await asyncio.sleep(1.5)
    survivor = await get_pod(client)
    assert survivor is not None and survivor["metadata"]["uid"] == new["metadata"]["uid"]
    assert survivor.get("status", {}).get("phase") == "Pending"
    assert manager.get_pod_status(old["metadata"]["uid"]) is None


async def test_static_pod_status_goes_to_mirror_which_is_never_deleted(
    sandbox: RunningSandbox, client: KubeClient
) -> None:
    mirrors: dict[str, str] = {}
    sm = StatusManager(client, sync_period=0.5, mirror_uid=lambda p: mirrors.get(p["metadata"]["uid"]))
    await sm.start()
    try:
        static = {
            "metadata": {
                "name": "p",
                "namespace": "default",
                "uid": "static-uid",
                "annotations": {"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": "h1"},
            },
            "spec": {
                "nodeName": NODE,
                "restartPolicy": "Never",
                "containers": [{"name": "app", "image": "vk-test/busybox:1"}],
            },
            "status": {},
        }
        sm.set_pod_status(static, status_for(sm, static, ContainerRunState.RUNNING))
        await asyncio.sleep(1.2)
        assert (await counters(sandbox)).get("patch pods/status") is None  # no mirror yet: nothing to write
        mirror = await create_pod(client, annotations={"kubernetes.io/config.mirror": "h1"})
        mirrors["static-uid"] = mirror["metadata"]["uid"]
        await eventually(lambda: phase_is(client, "Running"), what="the mirror's status", within=DEADLINE)
        await client.delete(f"{PODS}/p")  # graceful: the mirror stays with a deletionTimestamp
        sm.set_pod_status(static, status_for(sm, static, ContainerRunState.EXITED, 0))
        sm.terminate_pod(static)
        await eventually(
            lambda: phase_is(client, "Succeeded"), what="the mirror's terminal status", within=DEADLINE
        )
        await asyncio.sleep(2.0)
        kept = await get_pod(client)
        assert kept is not None and kept["metadata"].get("deletionTimestamp")
        assert kept["metadata"]["uid"] == mirror["metadata"]["uid"]
        assert (await counters(sandbox)).get("delete pods") == 1  # only the user's
    finally:
        await sm.stop()
