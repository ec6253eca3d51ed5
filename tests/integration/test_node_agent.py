"""NodeAgent against the sandbox apiserver and the real Docker engine: what a cluster user would see."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.docker_socket_proxy import DockerSocketProxy
from tests.support.kubectl import run_kubectl
from tests.support.polling import eventually
from tests.support.sandbox import RunningSandbox, running_sandbox
from vk_common.quantity import parse_quantity
from vk_provider.config import Config, DockerConfig, KubeletServerConfig, KubernetesConfig, NodeConfig
from vk_provider.kube.client import ApiStatusError, KubeClient, make_kube_client
from vk_provider.kube.events import EventRecorder
from vk_provider.node.agent import NodeAgent
from vk_provider.node.build import KUBELET_VERSION
from vk_provider.runtime.docker.runtime import DockerRuntime

pytestmark = pytest.mark.docker
WITHIN = 30.0  # polls: a generous deadline, never a timing assertion
POLL = 0.2
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


@dataclass
class Running:
    sandbox: RunningSandbox
    client: KubeClient
    agent: NodeAgent
    runtime: DockerRuntime
    name: str

    async def node(self) -> dict[str, Any]:
        return await self.client.get(f"/api/v1/nodes/{self.name}")

    async def lease(self) -> dict[str, Any] | None:
        try:
            return await self.client.get(f"{LEASES}/{self.name}")
        except ApiStatusError as exc:
            if exc.status == 404:
                return None
            raise


def condition(node: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == type_)


@contextlib.asynccontextmanager
async def agent_on(
    sandbox: RunningSandbox, name: str, *, lease_seconds: int = 4, docker_host: str = "", **node: Any
) -> AsyncIterator[Running]:
    """A NodeAgent (with its client, Docker runtime and recorder) for node `name` on `sandbox`."""
    config = Config(
        node=NodeConfig(name=name, internal_ip="127.0.0.1", lease_duration_seconds=lease_seconds, **node),
        kubernetes=KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)),
        docker=DockerConfig(host=docker_host),
        kubelet_server=KubeletServerConfig(listen="127.0.0.1:10999"),
    )
    client = await make_kube_client(config.kubernetes)
    runtime = DockerRuntime(config.docker, name)
    recorder = EventRecorder(client, name)
    agent = NodeAgent(config, client, runtime, recorder)
    await recorder.start()
    await agent.start()
    try:
        yield Running(sandbox, client, agent, runtime, name)
    finally:
        await agent.stop()
        await recorder.stop()
        await runtime.close()
        await client.close()


@contextlib.asynccontextmanager
async def running_agent(
    tmp_path: Path, name: str, *, debug: bool = False, grace: float = 50.0, **agent: Any
) -> AsyncIterator[Running]:
    async with (
        running_sandbox(tmp_path, debug=debug, node_monitor_grace_seconds=grace) as sandbox,
        agent_on(sandbox, name, **agent) as run,
    ):
        yield run


@pytest.mark.kubectl
async def test_node_is_ready_and_looks_like_a_kubelet_node(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    async with running_agent(tmp_path, node_name) as run:
        # start() returns once the node is registered with its status, at most START_WAIT (5 s) after start
        node = await run.node()
        ready = condition(node, "Ready")
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        )
        for type_ in ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"):
            assert condition(node, type_)["status"] == "False"

        info = docker_client.info()
        labels = node["metadata"]["labels"]
        assert labels["type"] == "virtual-kubelet"
        assert labels["kubernetes.io/role"] == "agent"
        assert labels["kubernetes.io/hostname"] == node_name
        assert labels["kubernetes.io/os"] == "linux"
        assert labels["kubernetes.io/arch"] in ("amd64", "arm64")
        assert labels["node.kubernetes.io/exclude-from-external-load-balancers"] == "true"
        assert {"key": "virtual-kubelet.io/provider", "value": "docker", "effect": "NoSchedule"} in [
            {k: t[k] for k in ("key", "value", "effect") if k in t} for t in node["spec"]["taints"]
        ]
        assert node["spec"]["providerID"] == f"docker://{node_name}"

        status = node["status"]
        assert parse_quantity(status["capacity"]["cpu"]) == info["NCPU"]
        assert parse_quantity(status["capacity"]["memory"]) == info["MemTotal"] // 1024 * 1024
        assert parse_quantity(status["capacity"]["ephemeral-storage"]) > 0
        assert status["capacity"]["pods"] == "110"
        assert status["allocatable"] == status["capacity"]
        assert {"type": "InternalIP", "address": "127.0.0.1"} in status["addresses"]
        assert {"type": "Hostname", "address": node_name} in status["addresses"]
        assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10999
        node_info = status["nodeInfo"]
        assert node_info["kubeletVersion"] == KUBELET_VERSION
        assert node_info["containerRuntimeVersion"] == f"docker://{info['ServerVersion']}"
        assert node_info["kernelVersion"] == info["KernelVersion"]
        assert node_info["osImage"] == info["OperatingSystem"]
        assert node_info["operatingSystem"] == "linux"
        assert run.agent.node_ip == "127.0.0.1"
        assert run.agent.node_object()["metadata"]["name"] == node_name

        code, out, err = await run_kubectl(run.sandbox.kubeconfig, "get", "nodes", "-o", "wide")
        assert code == 0, err
        header, *rows = out.splitlines()
        assert "CONTAINER-RUNTIME" in header and "KERNEL-VERSION" in header and "OS-IMAGE" in header
        row = next(r for r in rows if r.split()[0] == node_name)
        assert row.split()[1] == "Ready"
        assert "agent" in row
        assert KUBELET_VERSION in row
        assert "127.0.0.1" in row
        assert info["OperatingSystem"] in row
        assert info["KernelVersion"] in row
        assert f"docker://{info['ServerVersion']}" in row


async def test_lease_is_renewed_on_schedule(tmp_path: Path, node_name: str, docker_client: Any) -> None:
    async with running_agent(tmp_path, node_name, lease_seconds=4) as run:
        first = await eventually(run.lease, within=WITHIN, interval=POLL)
        node = await run.node()
        spec = first["spec"]
        assert spec["holderIdentity"] == node_name
        assert spec["leaseDurationSeconds"] == 4
        assert len(spec["renewTime"].split(".")[1]) == len("123456Z")  # MicroTime
        assert first["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node["metadata"]["uid"]}
        ]

        async def renewed_after(previous: str) -> dict[str, Any] | None:
            lease = await run.lease()
            return lease if lease and lease["spec"]["renewTime"] > previous else None

        times = [spec["renewTime"]]
        for _ in range(3):  # renewed every 4/4 = 1 s
            lease = await eventually(lambda: renewed_after(times[-1]), within=15, interval=POLL)
            times.append(lease["spec"]["renewTime"])
        assert times == sorted(times) and len(set(times)) == 4


async def test_deleted_node_is_recreated_with_an_event(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    async with running_agent(tmp_path, node_name) as run:
        old_uid = (await run.node())["metadata"]["uid"]
        await run.client.delete(f"/api/v1/nodes/{node_name}")

        async def recreated() -> dict[str, Any] | None:
            try:
                node = await run.node()
            except ApiStatusError:
                return None
            uid_changed = node["metadata"]["uid"] != old_uid
            return node if uid_changed and node.get("status", {}).get("conditions") else None

        node = await eventually(recreated, within=WITHIN, interval=POLL)
        assert condition(node, "Ready")["status"] == "True"
        assert node["spec"]["providerID"] == f"docker://{node_name}"

        async def recreated_event() -> dict[str, Any] | None:
            events = await run.client.get(
                "/api/v1/namespaces/default/events",
                {"fieldSelector": f"involvedObject.kind=Node,involvedObject.name={node_name}"},
            )
            return next((e for e in events["items"] if e["reason"] == "NodeRecreated"), None)

        event = await eventually(recreated_event, within=WITHIN, interval=POLL)
        assert event["type"] == "Warning"
        assert "deleted" in event["message"]
        assert event["source"] == {"component": "kubelet", "host": node_name}
        assert event["involvedObject"]["uid"] == node_name

        async def lease_points_at_new_node() -> bool:
            lease = await run.lease()
            return bool(lease and lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"])

        await eventually(lease_points_at_new_node, within=WITHIN, interval=POLL)


async def test_unreachable_docker_makes_node_not_ready_and_stops_the_lease(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    proxy = DockerSocketProxy(tmp_path / "docker.sock")
    await proxy.start()
    try:
        async with running_agent(tmp_path, node_name, docker_host=proxy.url) as run:
            assert condition(await run.node(), "Ready")["status"] == "True"
            await eventually(run.lease, within=WITHIN, interval=POLL)
            await proxy.stop()  # Docker "goes away" for this provider

            async def not_ready() -> dict[str, Any] | None:
                ready = condition(await run.node(), "Ready")
                return ready if ready["status"] == "False" else None

            ready = await eventually(not_ready, within=WITHIN, interval=POLL)
            assert ready["reason"] == "KubeletNotReady"
            assert "does not answer" in ready["message"] and str(proxy.path) in ready["message"]

            stalled = await run.lease()
            assert stalled is not None
            await asyncio.sleep(3.5)  # 3+ renew intervals of a 4 s lease
            still = await run.lease()
            assert still is not None and still["spec"]["renewTime"] == stalled["spec"]["renewTime"]

            await proxy.start()  # Docker is back

            async def ready_again() -> dict[str, Any] | None:
                ready = condition(await run.node(), "Ready")
                return ready if ready["status"] == "True" else None

            back = await eventually(ready_again, within=WITHIN, interval=POLL)
            assert back["reason"] == "KubeletReady"
            assert back["lastTransitionTime"] >= ready["lastTransitionTime"]

            async def renewed() -> bool:
                lease = await run.lease()
                return bool(lease and lease["spec"]["renewTime"] > stalled["spec"]["renewTime"])

            await eventually(renewed, within=WITHIN, interval=POLL)
    finally:
        await proxy.stop()


async def test_lease_expiry_verdict_stands_while_docker_is_down(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    proxy = DockerSocketProxy(tmp_path / "docker.sock")
    await proxy.start()
    try:
        async with running_agent(tmp_path, node_name, docker_host=proxy.url, grace=2.0) as run:
            await eventually(run.lease, within=WITHIN, interval=POLL)
            await proxy.stop()

            async def unknown() -> dict[str, Any] | None:
                ready = condition(await run.node(), "Ready")
                return ready if ready["status"] == "Unknown" else None

            # lease expired: the lifecycle controller says Unknown
            verdict = await eventually(unknown, within=WITHIN, interval=POLL)
            assert verdict["reason"] == "NodeStatusUnknown"
            await asyncio.sleep(3)  # several agent ticks: it does not write False over the verdict
            assert condition(await run.node(), "Ready")["status"] == "Unknown"
            await proxy.start()

            async def ready_again() -> bool:
                return bool(condition(await run.node(), "Ready")["status"] == "True")

            await eventually(ready_again, within=WITHIN, interval=POLL)
    finally:
        await proxy.stop()


async def test_restart_takes_over_the_node_and_lifts_its_shutdown_cordon(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    async with running_sandbox(tmp_path) as sandbox:
        async with agent_on(sandbox, node_name, cordon_on_shutdown=True, labels={"old-ours": "x"}) as first:
            uid = (await first.node())["metadata"]["uid"]
        # Stopped: cordoned, and meanwhile someone edits the node.
        client = await make_kube_client(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
        try:
            node = await client.get(f"/api/v1/nodes/{node_name}")
            assert node["spec"]["unschedulable"] is True
            patch = {
                "metadata": {"labels": {"users": "keep", "kubernetes.io/hostname": "wrong"}},
                "spec": {
                    "taints": [
                        {"key": "virtual-kubelet.io/provider", "value": "stale", "effect": "NoSchedule"},
                        {"key": "user-taint", "effect": "PreferNoSchedule"},
                    ]
                },
            }
            await client.patch(f"/api/v1/nodes/{node_name}", patch, "merge")
        finally:
            await client.close()

        async with agent_on(sandbox, node_name) as run:
            node = await run.node()
            assert node["metadata"]["uid"] == uid  # taken over, not re-created
            labels = node["metadata"]["labels"]
            assert labels["kubernetes.io/hostname"] == node_name
            assert labels["users"] == "keep"
            assert "old-ours" not in labels  # ours before, no longer configured
            taints = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in node["spec"]["taints"]]
            assert {"key": "virtual-kubelet.io/provider", "value": "docker", "effect": "NoSchedule"} in taints
            assert {"key": "user-taint", "effect": "PreferNoSchedule"} in taints
            assert not any(t.get("value") == "stale" for t in taints)
            assert not node["spec"].get("unschedulable")
            assert condition(node, "Ready")["status"] == "True"


async def test_failing_status_writes_do_not_stop_the_lease(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    async with running_agent(tmp_path, node_name, debug=True) as run:
        debug = run.sandbox.debug
        assert debug is not None
        node = await run.node()
        ready = {**condition(node, "Ready"), "message": "tampered"}
        await run.client.patch(f"/api/v1/nodes/{node_name}/status", {"status": {"conditions": [ready]}})
        debug.fail_next("patch", f"/nodes/{node_name}/status", 500, count=1000)
        first = await eventually(run.lease, within=WITHIN, interval=POLL)

        async def renewed_after(previous: str) -> dict[str, Any] | None:
            lease = await run.lease()
            return lease if lease and lease["spec"]["renewTime"] > previous else None

        await eventually(lambda: renewed_after(first["spec"]["renewTime"]), within=WITHIN, interval=POLL)
        second = await eventually(run.lease, within=WITHIN, interval=POLL)
        await eventually(lambda: renewed_after(second["spec"]["renewTime"]), within=WITHIN, interval=POLL)
        assert condition(await run.node(), "Ready")["message"] == "tampered"  # its writes keep failing
        assert debug.counters()["requests"]["patch nodes/status"] >= 2
        debug.clear_faults()

        async def repaired() -> bool:
            return bool(condition(await run.node(), "Ready")["message"] == "kubelet is posting ready status")

        await eventually(repaired, within=WITHIN, interval=POLL)


async def test_missing_docker_socket_registers_not_ready_without_a_lease(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    missing = f"unix://{tmp_path}/missing-docker.sock"
    async with running_agent(tmp_path, node_name, docker_host=missing) as run:
        ready = condition(await run.node(), "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
        assert "missing-docker.sock" in ready["message"]
        await asyncio.sleep(2.5)
        assert await run.lease() is None


async def test_idle_node_writes_status_rarely_and_lease_every_quarter_duration(
    tmp_path: Path, node_name: str, docker_client: Any
) -> None:
    async with running_agent(tmp_path, node_name, lease_seconds=40, debug=True) as run:
        await eventually(run.lease, within=WITHIN, interval=POLL)
        debug = run.sandbox.debug
        assert debug is not None
        debug.reset_counters()
        await asyncio.sleep(60)
        counts = debug.counters()["requests"]
        status_writes = sum(n for key, n in counts.items() if key.split()[1] == "nodes/status")
        writes = ("create", "update", "patch", "delete")
        node_writes = sum(
            n for key, n in counts.items() if key.split()[0] in writes and key.split()[1] == "nodes"
        )
        lease_writes = sum(
            n
            for key, n in counts.items()
            if key.startswith(("update leases", "create leases", "patch leases"))
        )
        assert status_writes <= 1, counts
        assert node_writes == 0, counts
        assert 5 <= lease_writes <= 7, counts
