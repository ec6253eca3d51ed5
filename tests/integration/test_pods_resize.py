"""In-place pod resize (issue 14 item 6), on both control planes: a user patches a running pod's
container resources through the `resize` subresource and the node applies them.

What the tests look at: the container's cgroup limits as Docker applies them and as the
container itself reads them (/sys/fs/cgroup), its container ID and restart count, the pod's
status (containerStatuses[].resources / allocatedResources, the PodResizePending condition),
the resize Events, and the apiserver's answer to a resize the node cannot take.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest

from tests.support.engine import engine_under_test
from tests.support.kubectl import KUBECTL
from tests.support.manifests import pod, sh
from tests.support.pod_status import condition, container_status, phase
from tests.support.provider_harness import NAMESPACE, ProviderHarness
from vk_common.quantity import parse_quantity
from vk_provider.kube.client import ApiStatusError

pytestmark = pytest.mark.docker
MI = 1024 * 1024


def _resources(cpu_req: str, cpu_lim: str, mem_req: str, mem_lim: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu_req, "memory": mem_req}, "limits": {"cpu": cpu_lim, "memory": mem_lim}}


def _container_id(pod: dict[str, Any], name: str = "main") -> str:
    return str(container_status(pod, name).get("containerID") or "").removeprefix("docker://")


_CPU_MAX = (
    "cat /sys/fs/cgroup/cpu.max 2>/dev/null || "
    'echo "$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"'
)
_MEMORY_MAX = "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"


def _cgroup(docker_client: Any, container_id: str) -> tuple[str, str]:
    """(cpu quota and period, memory limit) as the container reads them (cgroup v2 or v1)."""
    container = docker_client.containers.get(container_id)
    cpu = container.exec_run(["sh", "-c", _CPU_MAX]).output.decode().strip()
    memory = container.exec_run(["sh", "-c", _MEMORY_MAX]).output.decode().strip()
    return cpu, memory


def _status_has(pod: dict[str, Any], cpu_lim: str, mem_lim: str, name: str = "main") -> bool:
    limits = (container_status(pod, name).get("resources") or {}).get("limits") or {}
    return (
        parse_quantity(str(limits.get("cpu", "0"))) == parse_quantity(cpu_lim)
        and parse_quantity(str(limits.get("memory", "0"))) == parse_quantity(mem_lim)
        and not condition(pod, "PodResizeInProgress")
    )


async def _kubectl_resize(
    harness: ProviderHarness, name: str, patch: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    args = [str(KUBECTL), "--kubeconfig", str(harness.kubeconfig), "-n", NAMESPACE, "patch", "pod", name]
    args += ["--subresource", "resize", "--patch", json.dumps(patch)]
    return await asyncio.to_thread(
        subprocess.run, args, capture_output=True, text=True, timeout=60, check=False
    )


async def _running(
    harness: ProviderHarness, name: str, resources: dict[str, Any], **spec: Any
) -> dict[str, Any]:
    await harness.create(harness.manifest(name, [sh("main", "sleep 3600", resources=resources, **spec)]))
    return await harness.wait_for(name, lambda p: phase(p) == "Running" and bool(_container_id(p)), within=90)


async def test_kubectl_resize_changes_cgroup_limits_in_place(
    harness: ProviderHarness, docker_client: Any
) -> None:
    before = await _running(harness, "grow", _resources("100m", "200m", "32Mi", "64Mi"))
    cid = _container_id(before)
    assert _cgroup(docker_client, cid) == ("20000 100000", str(64 * MI))
    assert container_status(before, "main")["allocatedResources"] == {"cpu": "100m", "memory": "32Mi"}

    patch = {
        "spec": {"containers": [{"name": "main", "resources": _resources("150m", "300m", "32Mi", "96Mi")}]}
    }
    done = await _kubectl_resize(harness, "grow", patch)
    assert done.returncode == 0, done.stderr
    assert "pod/grow patched" in done.stdout

    after = await harness.wait_for("grow", lambda p: _status_has(p, "300m", "96Mi"), within=60)
    status = container_status(after, "main")
    assert _container_id(after) == cid and status["restartCount"] == 0
    assert _cgroup(docker_client, cid) == ("30000 100000", str(96 * MI))
    if engine_under_test() == "docker":  # Podman's inspect keeps the created limits (docs/runtime.md#podman)
        host = docker_client.api.inspect_container(cid)["HostConfig"]
        assert (host["CpuQuota"], host["Memory"], host["CpuShares"]) == (30000, 96 * MI, 153)
    assert parse_quantity(status["resources"]["requests"]["cpu"]) == parse_quantity("150m")
    assert status["allocatedResources"] == {"cpu": "150m", "memory": "32Mi"}
    assert after["metadata"]["generation"] == 2
    completed = await harness.wait_event("grow", "ResizeCompleted")
    assert completed["type"] == "Normal"
    assert completed["message"].startswith('Pod resize completed: {"containers":[{"name":"main"')
    assert completed["message"].endswith('"generation":2}')
    assert (await harness.wait_event("grow", "ResizeStarted"))["message"].startswith("Pod resize started: ")


async def test_a_running_init_container_is_resized_in_place(
    harness: ProviderHarness, docker_client: Any
) -> None:
    # The conformance spec "Pod InPlace Resize Init Container ... should support resizing a
    # non-sidecar init container": the init container never exits, the pod stays Pending.
    init = sh("init", "sleep 3600", resources=_resources("100m", "200m", "32Mi", "64Mi"))
    app = sh("main", "sleep 3600", resources=_resources("100m", "100m", "32Mi", "32Mi"))
    await harness.create(harness.manifest("init-grow", [app], initContainers=[init]))
    before = await harness.wait_for(
        "init-grow",
        lambda p: bool(_container_id(p, "init")) and _status_has(p, "200m", "64Mi", "init"),
        within=90,
    )
    cid = _container_id(before, "init")
    assert container_status(before, "init")["allocatedResources"] == {"cpu": "100m", "memory": "32Mi"}
    assert _cgroup(docker_client, cid) == ("20000 100000", str(64 * MI))

    patch = {
        "spec": {
            "initContainers": [{"name": "init", "resources": _resources("150m", "300m", "32Mi", "96Mi")}]
        }
    }
    done = await _kubectl_resize(harness, "init-grow", patch)
    assert done.returncode == 0, done.stderr  # the node declares InPlacePodVerticalScalingInitContainers

    after = await harness.wait_for("init-grow", lambda p: _status_has(p, "300m", "96Mi", "init"), within=60)
    assert _container_id(after, "init") == cid and container_status(after, "init")["restartCount"] == 0
    assert _cgroup(docker_client, cid) == ("30000 100000", str(96 * MI))
    assert phase(after) == "Pending" and not _container_id(after, "main")
    completed = await harness.wait_event("init-grow", "ResizeCompleted")
    assert completed["message"].startswith('Pod resize completed: {"initContainers":[{"name":"init"')


async def test_an_init_container_resize_on_a_node_that_does_not_declare_it_is_refused(
    harness: ProviderHarness,
) -> None:
    # The NodeDeclaredFeatureValidator: the node above declares the feature, this bare Node does not.
    bare = f"{harness.node_name}-bare"
    await harness.api.create(
        "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": bare}}
    )
    init = sh("init", "sleep 3600", resources=_resources("100m", "200m", "32Mi", "64Mi"))
    await harness.create(pod("on-bare", [sh("main", "sleep 3600")], nodeName=bare, initContainers=[init]))
    patch = {
        "spec": {
            "initContainers": [{"name": "init", "resources": _resources("150m", "300m", "32Mi", "96Mi")}]
        }
    }
    try:
        refused = await _kubectl_resize(harness, "on-bare", patch)
        deadline = asyncio.get_running_loop().time() + 30
        while f'node "{bare}" not found' in refused.stderr and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.5)  # the real server's node informer has not seen the new Node yet
            refused = await _kubectl_resize(harness, "on-bare", patch)
        assert refused.returncode != 0
        feature = "InPlacePodVerticalScalingInitContainers"
        assert (
            f'pods "on-bare" is forbidden: pod update requires features {feature} '
            f'which are not available on node "{bare}"'
        ) in refused.stderr
    finally:
        await harness.delete("on-bare", grace=0)
        await harness.api.delete(f"/api/v1/nodes/{bare}")


async def test_restart_container_policy_restarts_with_the_new_memory_limit(
    harness: ProviderHarness, docker_client: Any
) -> None:
    policy = [
        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
        {"resourceName": "memory", "restartPolicy": "RestartContainer"},
    ]
    before = await _running(
        harness, "restarts", _resources("100m", "100m", "64Mi", "64Mi"), resizePolicy=policy
    )
    old_id = _container_id(before)
    patch = {
        "spec": {"containers": [{"name": "main", "resources": _resources("100m", "100m", "80Mi", "80Mi")}]}
    }
    await harness.api.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/restarts/resize", patch)

    after = await harness.wait_for(
        "restarts",
        lambda p: _status_has(p, "100m", "80Mi") and container_status(p, "main").get("restartCount") == 1,
        within=90,
    )
    new_id = _container_id(after)
    assert new_id != old_id
    assert "running" in container_status(after, "main")["state"]
    assert _cgroup(docker_client, new_id)[1] == str(80 * MI)
    assert after["status"]["qosClass"] == "Guaranteed"
    killing = [e for e in await harness.events("restarts") if e.get("reason") == "Killing"]
    assert any(e["message"] == "Container main resize requires restart" for e in killing), killing


async def _node_allocatable_cpu(harness: ProviderHarness) -> int:
    node = await harness.api.get(f"/api/v1/nodes/{harness.node_name}")
    return int(parse_quantity(node["status"]["allocatable"]["cpu"]) * 1000)


async def test_a_resize_above_allocatable_is_refused_by_the_apiserver(harness: ProviderHarness) -> None:
    await _running(harness, "huge", _resources("100m", "200m", "32Mi", "64Mi"))
    allocatable = await _node_allocatable_cpu(harness)
    cores = allocatable // 1000 + 1
    patch = {
        "spec": {
            "containers": [{"name": "main", "resources": _resources(str(cores), str(cores), "32Mi", "64Mi")}]
        }
    }
    done = await _kubectl_resize(harness, "huge", patch)
    assert done.returncode != 0
    assert (
        'pods "huge" is forbidden: node didn\'t have enough allocatable resources: '
        f"cpu, requested: {cores * 1000}, allocatable: {allocatable}"
    ) in done.stderr
    with pytest.raises(ApiStatusError) as refused:
        await harness.api.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/huge/resize", patch)
    assert refused.value.status == 403
    assert refused.value.body["details"]["causes"] == [{"reason": "NodeCapacity"}]
    pod = await harness.get("huge")
    assert pod is not None and pod["metadata"]["generation"] == 1
    assert pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "200m"


async def test_a_resize_that_does_not_fit_beside_the_other_pods_is_deferred(
    harness: ProviderHarness, docker_client: Any
) -> None:
    allocatable = await _node_allocatable_cpu(harness)
    big = allocatable * 3 // 4
    await _running(harness, "big", _resources(f"{big}m", f"{big}m", "32Mi", "32Mi"))
    small = await _running(harness, "small", _resources("100m", "200m", "32Mi", "64Mi"))
    want = allocatable // 2
    patch = {
        "spec": {
            "containers": [{"name": "main", "resources": _resources(f"{want}m", f"{want}m", "32Mi", "64Mi")}]
        }
    }
    await harness.api.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/small/resize", patch)

    pending = await harness.wait_for("small", lambda p: bool(condition(p, "PodResizePending")), within=60)
    cond = condition(pending, "PodResizePending")
    assert cond["reason"] == "Deferred" and cond["status"] == "True"
    assert cond["message"] == (
        f"Node didn't have enough resource: cpu, requested: {want}, used: {big}, capacity: {allocatable}"
    )
    assert cond["observedGeneration"] == 2
    status = container_status(pending, "main")
    assert status["allocatedResources"]["cpu"] == "100m"
    assert _cgroup(docker_client, _container_id(small))[0] == "20000 100000"
    deferred = await harness.wait_event("small", "ResizeDeferred")
    assert deferred["type"] == "Warning" and deferred["message"].startswith("Pod resize Deferred: ")

    await harness.delete("big", grace=0)
    done = await harness.wait_for(
        "small",
        lambda p: _status_has(p, f"{want}m", "64Mi") and not condition(p, "PodResizePending"),
        within=90,
    )
    assert _container_id(done) == _container_id(small)
    assert _cgroup(docker_client, _container_id(small))[0] == f"{want * 100} 100000"


async def test_a_memory_limit_below_current_usage_stays_in_progress_with_the_error(
    harness: ProviderHarness, docker_client: Any
) -> None:
    script = "head -c 41943040 /dev/zero > /dev/shm/fill && sleep 3600"  # 40 MiB of tmpfs, charged to it
    await harness.create(
        harness.manifest("full", [sh("main", script, resources=_resources("100m", "200m", "32Mi", "96Mi"))])
    )
    before = await harness.wait_for(
        "full", lambda p: phase(p) == "Running" and bool(_container_id(p)), within=90
    )
    cid = _container_id(before)
    await asyncio.sleep(2)  # the file is written
    patch = {
        "spec": {"containers": [{"name": "main", "resources": _resources("100m", "200m", "16Mi", "32Mi")}]}
    }
    await harness.api.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/full/resize", patch)

    stuck = await harness.wait_for(
        "full", lambda p: condition(p, "PodResizeInProgress").get("reason") == "Error", within=60
    )
    message = condition(stuck, "PodResizeInProgress")["message"]
    # the pod cgroup's limit (every container declares one) and the container's, aggregated as
    # the kubelet's validateMemoryResizeAction does
    prefix = f"cannot decrease memory limits: [attempting to set pod memory limit ({32 * MI}) "
    assert message.startswith(prefix + "below current usage ("), message
    assert f'attempting to set container "main" memory limit ({32 * MI}) below current usage (' in message
    assert _cgroup(docker_client, cid)[1] == str(96 * MI)
    assert container_status(stuck, "main")["restartCount"] == 0
    error = await harness.wait_event("full", "ResizeError")
    assert error["type"] == "Warning" and error["message"].startswith("Pod resize error: ")
