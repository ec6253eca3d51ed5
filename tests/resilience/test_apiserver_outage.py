"""The apiserver unreachable for two minutes while the control plane keeps running (issue 12, scenario 5).

The provider reaches its apiserver through a `CuttableProxy`; the test cuts it (connections
refused, open ones reset) for `OUTAGE` seconds, just after a burst of pod creations, while a
second Ready node (`WitnessNode`) keeps the node lifecycle controller out of full disruption, so
it marks the silent node Ready=Unknown with both `unreachable` taints, as in a real cluster.
During the outage the pods and the static pod keep running untouched and nothing is evicted (the
default tolerations are 300 s); meanwhile the user deletes one pod and creates another. After
it, everything resynchronises: the node Ready again without taints, the deleted pod's
containers gone with exactly one final DELETE, every other pod Running in the engine as the API
says, no container restarted, no status gone backwards.
Must not: reach into the provider; touch the control plane itself (only the provider's path to it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support.containers import labelled
from tests.support.convergence import PodHistory, docker_disagreements, pod_deletes
from tests.support.cuttable_proxy import CuttableProxy
from tests.support.manifests import sh, static_pod_dir
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.pod_status import condition, phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from tests.support.witness_node import WitnessNode

OUTAGE = 120.0  # seconds the apiserver is unreachable
STEADY = 8  # pods Running before the cut
BURST = 6  # pods created just before the cut
UNREACHABLE = "node.kubernetes.io/unreachable"
NODE_LABEL = "io.vk-provider.node"
SERVE = sh("c", "trap 'exit 0' TERM; sleep 3600 & wait")

# Two planes, each: start, load, a 120 s outage, convergence (the reflector's backoff reaches
# 30-60 s during the outage, so the first relist after it can take that long).
pytestmark = pytest.mark.timeout(480)


def proxied_kubeconfig(source: Path, proxy: CuttableProxy, dest: Path) -> Path:
    """A copy of `source` whose server is the proxy (same scheme, so TLS goes through it)."""
    config = yaml.safe_load(source.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://{proxy.address}"
    dest.write_text(yaml.safe_dump(config))
    return dest


def api_address(kubeconfig: Path) -> tuple[str, int]:
    server = urlsplit(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"])
    assert server.hostname is not None and server.port is not None, server
    return server.hostname, server.port


@pytest.fixture
async def outage(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: EmulatorPlane | RealPlane
) -> AsyncIterator[tuple[ProviderHarness, CuttableProxy]]:
    """The provider for the test's node, its apiserver behind a proxy, and one static pod."""
    static_dir = static_pod_dir(tmp_path, "static", [SERVE], terminationGracePeriodSeconds=2)
    harness = ProviderHarness(node_name, tmp_path, plane=plane, static_dir=static_dir)
    await harness.start_sandbox()
    proxy = CuttableProxy(*api_address(plane.provider_kubeconfig))
    await proxy.start()
    try:
        plane.provider_kubeconfig = proxied_kubeconfig(plane.provider_kubeconfig, proxy, tmp_path / "proxied")
        await harness.start_provider()
        yield harness, proxy
    finally:
        await proxy.restore()  # a failure mid-outage: let the provider stop as it normally would
        await harness.close()
        proxy.cut()


async def node(h: ProviderHarness) -> dict[str, Any]:
    return await h.api.get(f"/api/v1/nodes/{h.node_name}")


async def unreachable_taints(h: ProviderHarness) -> set[str]:
    return {t["effect"] for t in (await node(h))["spec"].get("taints") or [] if t["key"] == UNREACHABLE}


async def node_pods(h: ProviderHarness) -> list[dict[str, Any]]:
    answer = await h.api.get(
        "/api/v1/namespaces/default/pods", {"fieldSelector": f"spec.nodeName={h.node_name}"}
    )
    return list(answer.get("items") or [])


def running_containers(docker_client: Any, node_name: str) -> dict[str, tuple[str, int]]:
    """Every running container of the node: id -> (pod name label, the engine's RestartCount)."""
    return {
        c.id: (c.labels.get("io.vk-provider.pod.name", ""), int(c.attrs.get("RestartCount", 0)))
        for c in labelled(docker_client, f"{NODE_LABEL}={node_name}", all=False)
    }


async def all_running(h: ProviderHarness, names: set[str]) -> list[dict[str, Any]] | None:
    pods = await node_pods(h)
    ready = {
        p["metadata"]["name"]
        for p in pods
        if phase(p) == "Running" and not p["metadata"].get("deletionTimestamp")
    }
    return pods if names <= ready else None


async def test_two_minutes_without_the_apiserver_lose_and_restart_nothing(
    outage: tuple[ProviderHarness, CuttableProxy], docker_client: Any, plane: EmulatorPlane | RealPlane
) -> None:
    h, proxy = outage
    mirror = f"static-{h.node_name}"
    history = PodHistory(h.api, h.node_name)
    await history.start()
    deletes_before = await pod_deletes(plane, h.api)
    steady = {f"steady-{i}" for i in range(STEADY)}
    for name in sorted(steady):
        await h.create(h.manifest(name, [SERVE], terminationGracePeriodSeconds=2))
    await eventually(lambda: all_running(h, steady | {mirror}), within=180, what="the steady pods Running")
    before = running_containers(docker_client, h.node_name)
    assert len(before) == 2 * (STEADY + 1), before  # a sandbox and an app container per pod

    async with WitnessNode(h.api, f"{h.node_name}-witness"):
        burst = {f"burst-{i}" for i in range(BURST)}
        for name in sorted(burst):
            await h.create(h.manifest(name, [SERVE], terminationGracePeriodSeconds=2))
        proxy.cut()
        cut_at = time.monotonic()
        await h.delete("steady-0")  # waits for the node: its kubelet must see it first
        await h.create(h.manifest("during", [SERVE], terminationGracePeriodSeconds=2))

        async def unknown() -> bool:
            return condition(await node(h), "Ready").get("status") == "Unknown"

        await eventually(unknown, within=OUTAGE, interval=1, what="the node controller's Ready=Unknown")
        unknown_after = time.monotonic() - cut_at
        await eventually(
            lambda: _is(unreachable_taints(h), {"NoSchedule", "NoExecute"}),
            within=max(1.0, OUTAGE - unknown_after - 5),
            interval=1,
            what="both unreachable taints",
        )
        # Let the outage run its full length: the pods must outlast it untouched.
        await asyncio.sleep(max(0.0, OUTAGE - (time.monotonic() - cut_at)))
        during = running_containers(docker_client, h.node_name)
        assert {cid: before[cid] for cid in before if cid in during} == before, "a container stopped"
        expected = (steady - {"steady-0"}) | burst | {"during", mirror}
        deleting = {
            p["metadata"]["name"]: bool(p["metadata"].get("deletionTimestamp")) for p in await node_pods(h)
        }
        assert deleting == {**dict.fromkeys(expected, False), "steady-0": True}, (
            "pods evicted during the outage"
        )
        await proxy.restore()
        restored_at = time.monotonic()

        progress = ""

        async def converged() -> list[dict[str, Any]] | None:
            nonlocal progress
            ready = condition(await node(h), "Ready").get("status")
            taints = await unreachable_taints(h)
            pods = await node_pods(h)
            running = {
                p["metadata"]["name"]
                for p in pods
                if phase(p) == "Running" and not p["metadata"].get("deletionTimestamp")
            }
            deleted = await h.get("steady-0") is None
            engine = await asyncio.to_thread(docker_disagreements, docker_client, h.node_name, pods)
            progress = (
                f"Ready={ready}, taints {sorted(taints)}, steady-0 gone: {deleted}, "
                f"not Running: {sorted(expected - running)}, engine: {engine}"
            )
            done = ready == "True" and not taints and deleted and running == expected and not engine
            return pods if done else None

        pods = await eventually(converged, within=180, interval=1, what=lambda: f"convergence ({progress})")
        converge = time.monotonic() - restored_at
    await history.stop()

    after = running_containers(docker_client, h.node_name)
    kept = {cid: v for cid, v in before.items() if v[0] != "steady-0"}
    assert {cid: after[cid] for cid in kept if cid in after} == kept, "a container was replaced"
    assert all(count == 0 for _, count in after.values()), after
    assert not [cid for cid, v in after.items() if v[0] == "steady-0"]
    restarts = [s.get("restartCount") for p in pods for s in p["status"].get("containerStatuses") or []]
    assert restarts == [0] * len(expected), restarts
    assert history.backwards() == []
    provider_deletes = await pod_deletes(plane, h.api) - deletes_before - 1  # ours: steady-0
    assert provider_deletes == 1, provider_deletes
    print(
        f"RESILIENCE apiserver-outage plane={plane.kind} api_pods={STEADY + BURST + 1} static_pods=1 "
        f"outage_s={OUTAGE:g} connections_cut={proxy.dropped} unknown_after_s={unknown_after:.0f} "
        f"converge_s={converge:.0f} restarted=0 lost=0 duplicated=0 evicted=0"
    )


async def _is(value: Any, wanted: Any) -> bool:
    return bool(await value == wanted)
