"""Resilience scenario 7: stopped in the middle of a mass deletion, nothing is left behind.

(1) `vk-provider sandbox --clean` (a subprocess: its emulator and one provider) with every pod
Running, all of them deleted at once, then SIGTERM to the sandbox while the deletions are in
flight: once it has exited, no container and no Docker volume labelled with its node is left.
(2) The provider alone (`vk-provider run`, `node.cordonOnShutdown: true`) stopped by SIGTERM
during a mass deletion, then `vk-provider clean`: the Node is cordoned, every pod is either gone
from the API after exactly one final DELETE or still terminating there, and nothing of the node
is left in the engine or under its state directory (on the real control plane only).
Each prints one `RESILIENCE shutdown-...` line with its figures. Must not: hold helpers another
test module needs (tests/support has those).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.convergence import PodHistory, pod_deletes, watched_sandbox
from tests.support.manifests import pod, sh
from tests.support.planes import Plane
from tests.support.polling import eventually
from tests.support.provider_harness import REPO
from tests.support.sandbox_process import remove_node_containers, start_sandbox, stop_sandbox
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import KubeClient, make_kube_client

NODE_LABEL = "io.vk-provider.node"
QUICK, SLOW = 8, 16  # grace periods of 1 s and 5 s: the slow pods all finish at about one time
PODS = QUICK + SLOW
SCRATCH = 3  # emptyDirs per pod: each a Docker volume, removed after the pod's containers
CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "doomed"}, "data": {"key": "value"}}
VOLUMES = [
    *({"name": f"scratch-{i}", "emptyDir": {}} for i in range(SCRATCH)),
    {"name": "config", "configMap": {"name": "doomed"}},  # files under the node's state directory
]
# The busybox shell as PID 1 ignores SIGTERM: each pod takes its whole grace period to stop.
SLEEPER = sh(
    "main", "sleep 3600", volumeMounts=[{"name": v["name"], "mountPath": f"/{v['name']}"} for v in VOLUMES]
)


def doomed_pods(node: str) -> list[dict[str, Any]]:
    """QUICK and SLOW pods bound to `node`, each with its Docker volumes and files."""
    groups = (("quick", QUICK, 1), ("slow", SLOW, 5))
    return [
        pod(f"{prefix}-{i}", [SLEEPER], nodeName=node, volumes=VOLUMES, terminationGracePeriodSeconds=grace)
        for prefix, count, grace in groups
        for i in range(count)
    ]


async def create_doomed_pods(api: KubeClient, node: str) -> None:
    await api.create("/api/v1/namespaces/default/configmaps", CONFIG)
    await asyncio.gather(*(api.create("/api/v1/namespaces/default/pods", p) for p in doomed_pods(node)))


async def node_pods(api: KubeClient, node: str) -> list[dict[str, Any]]:
    answer = await api.get("/api/v1/namespaces/default/pods", {"fieldSelector": f"spec.nodeName={node}"})
    return list(answer.get("items") or [])


async def all_running(api: KubeClient, node: str) -> None:
    phases: list[str] = []

    async def check() -> bool:
        nonlocal phases
        phases = [(p.get("status") or {}).get("phase", "") for p in await node_pods(api, node)]
        return len(phases) == PODS and all(phase == "Running" for phase in phases)

    await eventually(check, within=240, interval=1.0, what=lambda: f"{PODS} pods Running: {phases}")


async def delete_all_and_wait_for_the_slow_ones_going(api: KubeClient, node: str) -> int:
    """Delete every pod (gracefully, each with its grace period) and return as soon as the quick
    ones are gone and half the slow ones too: the other slow pods are then between their final
    DELETE and the removal of their containers, volumes and files. Returns the number gone."""
    names = [p["metadata"]["name"] for p in await node_pods(api, node)]
    await asyncio.gather(*(api.delete(f"/api/v1/namespaces/default/pods/{name}") for name in names))
    left: list[str] = []

    async def slow_ones_going() -> bool:
        nonlocal left
        left = [p["metadata"]["name"] for p in await node_pods(api, node)]
        return not any(name.startswith("quick-") for name in left) and len(left) <= SLOW // 2

    await eventually(
        slow_ones_going,
        within=120,
        interval=0.05,
        what=lambda: f"the quick pods and half the slow ones gone: {left}",
    )
    assert left, "every pod was gone before the stop: nothing was in flight"
    return PODS - len(left)


def leftovers(docker_client: Any, node: str) -> list[str]:
    """The containers and Docker volumes labelled with `node` (empty when nothing is left)."""
    containers = labelled(docker_client, f"{NODE_LABEL}={node}")
    volumes = docker_client.volumes.list(filters={"label": f"{NODE_LABEL}={node}"})
    return [
        *(f"container {c.name} ({c.status})" for c in containers),
        *(f"volume {v.name}" for v in volumes),
    ]


def pod_files(state: Path, node: str) -> list[str]:
    """What is left of the pods' files under the node's state directory `state/node`."""
    return sorted(str(path) for path in (state / node).glob("*"))


def remove_node_volumes(docker_client: Any, node: str) -> None:
    for volume in docker_client.volumes.list(filters={"label": f"{NODE_LABEL}={node}"}):
        volume.remove(force=True)


async def test_sandbox_stopped_during_a_mass_deletion_leaves_nothing_with_clean(
    tmp_path: Path, docker_client: Any, test_images: dict[str, str]
) -> None:
    sandbox = await asyncio.to_thread(start_sandbox, tmp_path, test_images["pause"])
    api = await make_kube_client(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
    history = PodHistory(api, sandbox.node)
    try:
        await create_doomed_pods(api, sandbox.node)
        await all_running(api, sandbox.node)
        await history.start()
        gone = await delete_all_and_wait_for_the_slow_ones_going(api, sandbox.node)

        stopped = time.monotonic()
        code = await asyncio.to_thread(stop_sandbox, sandbox)
        stop_seconds = time.monotonic() - stopped
        left = leftovers(docker_client, sandbox.node)
        assert left == [], f"--clean left {len(left)} object(s) of the node: {left}\n{sandbox.log_tail()}"
        assert pod_files(tmp_path / "docker", sandbox.node) == [], "--clean removes the pods' files"
        assert code == 0, sandbox.log_tail()
        await history.stop()
        assert history.backwards() == []
        print(
            f"RESILIENCE shutdown-sandbox pods={PODS} deleted_before_stop={gone} in_flight={PODS - gone} "
            f"faults=1 stop_s={stop_seconds:.1f} left_containers=0 left_volumes=0 lost=0 duplicated=0"
        )
    finally:
        await history.stop()
        await api.close()
        if sandbox.proc.poll() is None:
            sandbox.proc.kill()
            sandbox.proc.wait()
        remove_node_containers(docker_client, sandbox.node)
        remove_node_volumes(docker_client, sandbox.node)


def clean(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vk_cli", "clean", "--config", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.real_only  # the emulator's side is the sandbox test above; the budget allows one tier
async def test_cordoning_provider_stopped_during_a_mass_deletion_then_clean_leaves_nothing(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    try:
        async with watched_sandbox(node_name, tmp_path, plane) as (harness, history):
            harness.start_provider_process({"node": {"cordonOnShutdown": True}})
            await create_doomed_pods(harness.api, node_name)
            await all_running(harness.api, node_name)
            await history.start()
            deletes_before = await pod_deletes(plane, harness.api)
            gone = await delete_all_and_wait_for_the_slow_ones_going(harness.api, node_name)

            process = harness.process
            assert process is not None
            stopped = time.monotonic()
            process.terminate()
            code = await asyncio.to_thread(process.wait, 120)
            stop_seconds = time.monotonic() - stopped
            harness.process = None
            assert code == 0, harness.provider_log()[-3000:]

            node = await harness.api.get(f"/api/v1/nodes/{node_name}")
            assert node["spec"].get("unschedulable") is True, "node.cordonOnShutdown cordons the Node"
            remaining = await node_pods(harness.api, node_name)
            assert all(p["metadata"].get("deletionTimestamp") for p in remaining), (
                "only terminating pods stay"
            )
            final_deletes = await pod_deletes(plane, harness.api) - deletes_before - PODS
            assert final_deletes == PODS - len(remaining), (
                f"{PODS - len(remaining)} pods gone, {final_deletes} final DELETEs from the provider"
            )

            done = await asyncio.to_thread(clean, harness.workdir / "provider.yaml")
            assert done.returncode == 0, done.stdout + done.stderr
            left = leftovers(docker_client, node_name)
            assert left == [], f"vk-provider clean left {len(left)} object(s) of the node: {left}"
            assert pod_files(harness.workdir / "state", node_name) == [], "clean removes the pods' files"
            await history.stop()
            assert history.backwards() == []
            print(
                f"RESILIENCE shutdown-provider plane={plane.kind} pods={PODS} deleted_before_stop={gone} "
                f"terminating_at_clean={len(remaining)} faults=1 stop_s={stop_seconds:.1f} "
                f"final_deletes={final_deletes} cordoned=1 left_containers=0 left_volumes=0"
                " lost=0 duplicated=0"
            )
    finally:
        remove_node_volumes(docker_client, node_name)
