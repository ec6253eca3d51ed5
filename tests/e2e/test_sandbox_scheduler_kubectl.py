"""What a kubectl user sees of the sandbox scheduler: the NODE column, and why a pod stays Pending."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kubectl import run_kubectl
from tests.support.polling import eventually
from vk_sandbox.server import SandboxServer

DEADLINE = 30.0

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  nodeSelector:
    disk: {disk}
  containers:
  - name: app
    image: vk-test/pause:1
"""


def _node(name: str, disk: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"disk": disk, "kubernetes.io/hostname": name}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
        },
    }


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[tuple[SandboxServer, Path]]:
    server = SandboxServer(state_dir=tmp_path / "state")
    await server.start()
    await server.store.create("nodes", _node("hdd-1", "hdd"))
    await server.store.create("nodes", _node("ssd-1", "ssd"))
    yield server, server.write_kubeconfig(tmp_path / "kubeconfig")
    await server.stop()


async def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    code, out, err = await run_kubectl(kubeconfig, *args, stdin=stdin)
    assert code == 0, err
    return out


async def _until(kubeconfig: Path, args: list[str], wanted: str) -> str:
    out = ""

    async def appeared() -> str | None:
        nonlocal out
        out = await _kubectl(kubeconfig, *args)
        return out if wanted in out else None

    return await eventually(
        appeared, within=DEADLINE, interval=0.2, what=lambda: f"{wanted!r} to appear in:\n{out}\n"
    )


@pytest.mark.kubectl
async def test_kubectl_sees_binding_and_unschedulable_reason(sandbox: tuple[SandboxServer, Path]) -> None:
    server, kubeconfig = sandbox
    await _kubectl(kubeconfig, "apply", "-f", "-", stdin=POD.format(name="fast", disk="ssd"))
    await _kubectl(kubeconfig, "apply", "-f", "-", stdin=POD.format(name="lost", disk="nvme"))

    node = await _until(kubeconfig, ["get", "pod", "fast", "-o", "jsonpath={.spec.nodeName}"], "ssd-1")
    assert node == "ssd-1"
    described = await _until(kubeconfig, ["describe", "pod", "fast"], "Successfully assigned")
    assert "default-scheduler  Successfully assigned default/fast to ssd-1" in described

    described = await _until(kubeconfig, ["describe", "pod", "lost"], "FailedScheduling")
    assert "Warning  FailedScheduling" in described
    assert "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector." in described
    wide = await _kubectl(kubeconfig, "get", "pod", "lost", "-o", "wide")
    assert "Pending" in wide

    await server.store.create("nodes", _node("nvme-1", "nvme"))
    await _until(kubeconfig, ["get", "pod", "lost", "-o", "jsonpath={.spec.nodeName}"], "nvme-1")
