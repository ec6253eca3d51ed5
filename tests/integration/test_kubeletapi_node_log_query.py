"""Node log query through the apiserver's node proxy, as a user reads a node's logs:
`kubectl get --raw /api/v1/nodes/<node>/proxy/logs/?query=vk-provider` returns the provider's
recent lines when `enableSystemLogQuery` is on; with it off the log directory is served as files,
and with the handler off the answer is the kubelet's 405. On both control planes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.test_provider_metrics import get_raw
from tests.support.manifests import sh
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.pod_status import phase
from tests.support.process_log import process_log_attached
from tests.support.provider_harness import node_proxied_provider
from vk_provider.config import Config

pytestmark = pytest.mark.docker


@pytest.fixture
def process_log() -> Iterator[None]:
    with process_log_attached():
        yield


def _logs(handler: bool, query: bool, log_dir: Path) -> Callable[[Config], Config]:
    def edit(config: Config) -> Config:
        server = dataclasses.replace(
            config.kubelet_server,
            enable_system_log_handler=handler,
            enable_system_log_query=query,
            system_log_dir=str(log_dir),
        )
        return dataclasses.replace(config, kubelet_server=server)

    return edit


async def test_the_query_returns_the_providers_recent_lines_through_the_node_proxy(
    node_name: str,
    tmp_path: Path,
    plane: EmulatorPlane | RealPlane,
    test_images: dict[str, str],
    process_log: None,
) -> None:
    log_dir = tmp_path / "var-log"
    log_dir.mkdir()
    async with node_proxied_provider(node_name, tmp_path, plane, _logs(True, True, log_dir)) as harness:
        await harness.create(harness.manifest("logged", [sh("main", "sleep 3600")]))
        await harness.wait_for("logged", lambda p: phase(p) == "Running")
        base = f"/api/v1/nodes/{node_name}/proxy/logs/"
        code, out, err = await get_raw(harness, base + "?query=vk-provider")
        assert code == 0, err
        lines = out.splitlines()
        assert any('"registered node' in line for line in lines), lines[-20:]
        assert any('pod="default/logged"' in line for line in lines), lines[-20:]
        code, out, err = await get_raw(harness, base + "?query=vk-provider&pattern=logged&tailLines=1")
        assert code == 0, err
        assert out.count("\n") == 1 and 'pod="default/logged"' in out
        code, out, err = await get_raw(harness, base + "?query=vk-provider&tailLines=-1")
        assert code != 0 and "must be between 0 and 100000" in err + out


async def test_with_the_query_off_the_directory_is_files_and_with_the_handler_off_405(
    node_name: str, tmp_path: Path, plane: EmulatorPlane | RealPlane
) -> None:
    log_dir = tmp_path / "var-log"
    log_dir.mkdir()
    (log_dir / "node.log").write_text("a line of the node's own log\n")
    base = f"/api/v1/nodes/{node_name}/proxy/logs/"
    async with node_proxied_provider(node_name, tmp_path, plane, _logs(True, False, log_dir)) as harness:
        code, out, err = await get_raw(harness, base + "node.log")
        assert (code, out) == (0, "a line of the node's own log\n"), err
        code, out, err = await get_raw(harness, base)
        assert code == 0 and '<a href="node.log">node.log</a>' in out, err
    async with node_proxied_provider(
        f"{node_name}-off", tmp_path / "off", plane, _logs(False, False, log_dir)
    ) as harness:
        code, out, err = await get_raw(harness, f"/api/v1/nodes/{node_name}-off/proxy/logs/node.log")
        assert code != 0 and "MethodNotAllowed" in err, (code, out, err)
