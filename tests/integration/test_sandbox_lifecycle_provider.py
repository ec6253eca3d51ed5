"""The node lifecycle controller with a real provider: stopping it makes its node Ready=Unknown
and tainted after the (shortened) grace period; starting it again brings the node back."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.polling import eventually
from vk_common.ports import free_port
from vk_sandbox.command import provider_config
from vk_sandbox.server import SandboxServer

GRACE = 3.0
DEADLINE = 60.0
UNREACHABLE = "node.kubernetes.io/unreachable"


async def _provider(config: Path, log: Path) -> asyncio.subprocess.Process:
    with log.open("ab") as sink:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "vk_cli", "run", "--config", str(config), stdout=sink, stderr=sink
        )


async def _stop(proc: asyncio.subprocess.Process) -> None:
    proc.terminate()
    await asyncio.wait_for(proc.wait(), DEADLINE)


@pytest.mark.docker
async def test_stopped_provider_goes_unknown_and_comes_back(
    tmp_path: Path, node_name: str, test_images: dict[str, str]
) -> None:
    async with SandboxServer(state_dir=tmp_path / "state", node_monitor_grace_seconds=GRACE) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        port = free_port()
        config = provider_config(
            {"docker": {"sandboxImage": test_images["pause"]}},
            node=node_name,
            kubeconfig=kubeconfig,
            listen_port=port,
            ca_file=server.pki.ca_cert_path,
            state_dir=tmp_path / "state",
        )
        config_path = tmp_path / "provider.yaml"
        config_path.write_text(yaml.safe_dump(config))
        log = tmp_path / "provider.log"

        async def node() -> dict[str, Any] | None:
            try:
                return await server.store.get("nodes", None, node_name)
            except Exception:
                return None

        def ready(obj: dict[str, Any] | None) -> str | None:
            conditions = ((obj or {}).get("status") or {}).get("conditions") or []
            return next((c["status"] for c in conditions if c["type"] == "Ready"), None)

        def unreachable(obj: dict[str, Any]) -> set[str]:
            return {t["effect"] for t in obj["spec"].get("taints", []) if t["key"] == UNREACHABLE}

        proc = await _provider(config_path, log)
        try:

            async def is_ready() -> dict[str, Any] | None:
                obj = await node()
                return obj if ready(obj) == "True" else None

            await eventually(is_ready, within=DEADLINE, interval=0.2)
            await _stop(proc)

            async def is_unknown() -> dict[str, Any] | None:
                obj = await node()
                return obj if ready(obj) == "Unknown" and unreachable(obj or {}) else None

            gone = await eventually(is_unknown, within=DEADLINE, interval=0.2)
            ready_condition = next(c for c in gone["status"]["conditions"] if c["type"] == "Ready")
            assert ready_condition["reason"] == "NodeStatusUnknown"
            # The only node is down: no NoExecute taint, as kube-controller-manager's full
            # disruption mode (the real tier shows the same in test_real_cluster.py).
            assert unreachable(gone) == {"NoSchedule"}

            proc = await _provider(config_path, log)

            async def is_back() -> dict[str, Any] | None:
                obj = await node()
                return obj if ready(obj) == "True" and not unreachable(obj or {}) else None

            await eventually(is_back, within=DEADLINE, interval=0.2)
        finally:
            if proc.returncode is None:
                await _stop(proc)
