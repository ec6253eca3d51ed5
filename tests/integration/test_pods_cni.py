"""CNI mode (`network.plugin: cni`) with Debian's reference plugins (scripts/ensure-cni-plugins.sh:
bridge, host-local, portmap, loopback in /usr/lib/cni) and a conf dir of the test's own: the pod's
address from the plugins' range in status.podIPs, its hostPort through portmap, its address
given back when it is deleted, the same address and a passing CHECK after a provider SIGKILL,
NetworkPluginNotReady without a configuration (host-network pods still run), and an exhausted
range as FailedCreatePodSandBox, retried, with nothing leaked."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_pods_dns import CLUSTER_DNS, resolv_conf_of
from tests.integration.test_runtime_docker import http_get
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import has_ip, running_ip
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from vk_common.ports import free_port
from vk_provider.config import Config, DockerAllow, NetworkConfig

pytestmark = pytest.mark.docker

CNI_BIN = Path("/usr/lib/cni")


@dataclass(frozen=True)
class CNIRig:
    conf_dir: Path
    ipam_dir: Path  # host-local's store: one file per address in use
    subnet: str
    bridge: str

    def write(self, range_end: str = "") -> None:
        """bridge + host-local, portmap, loopback (a range of one address with `range_end`)."""
        pool: dict[str, str] = {"subnet": self.subnet}
        if range_end:
            pool.update(rangeStart=range_end, rangeEnd=range_end)
        conflist = {
            "cniVersion": "1.0.0",
            "name": f"net-{self.bridge}",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    "isGateway": True,
                    "ipMasq": False,
                    "ipam": {"type": "host-local", "ranges": [[pool]], "dataDir": str(self.ipam_dir)},
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
                {"type": "loopback"},
            ],
        }
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "10-test.conflist").write_text(json.dumps(conflist))

    def reserved(self) -> list[str]:
        """The addresses host-local holds (its files named after them)."""
        store = self.ipam_dir / f"net-{self.bridge}"
        if not store.is_dir():
            return []
        names = [p.name for p in store.iterdir()]
        return [n for n in names if _is_ip(n)]

    def settings(self) -> dict[str, Any]:
        return {
            "plugin": "cni",
            "cniConfDir": str(self.conf_dir),
            "cniBinDir": [str(CNI_BIN)],
            "cniTimeout": "30s",
        }

    def config(self) -> NetworkConfig:
        return NetworkConfig("cni", str(self.conf_dir), (str(CNI_BIN),), 30.0)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="session")
def cni_plugins() -> None:
    subprocess.run(["bash", "scripts/ensure-cni-plugins.sh"], check=True, timeout=600)


@pytest.fixture
def cni(tmp_path: Path, cni_plugins: None) -> Iterator[CNIRig]:
    tag = uuid.uuid4().hex[:8]
    rig = CNIRig(tmp_path / "net.d", tmp_path / "ipam", f"10.214.{int(tag[:4], 16) % 250}.0/24", f"vkt{tag}")
    yield rig
    with contextlib.suppress(subprocess.SubprocessError):
        subprocess.run(["ip", "link", "del", rig.bridge], capture_output=True, timeout=30)


def cni_harness(rig: CNIRig, host_network: bool = False) -> type[ProviderHarness]:
    class CNIHarness(ProviderHarness):
        def config(self) -> Config:
            base = super().config()
            docker = base.docker
            if host_network:
                docker = dataclasses.replace(docker, allow=DockerAllow(host_network=True))
            pods = dataclasses.replace(base.pods, cluster_dns=(CLUSTER_DNS,))
            return dataclasses.replace(base, network=rig.config(), docker=docker, pods=pods)

    return CNIHarness


async def test_a_pod_gets_its_address_from_the_plugins_hostport_and_gives_it_back(
    node_name: str, tmp_path: Path, plane: Plane, cni: CNIRig
) -> None:
    cni.write()
    async with cni_harness(cni).running(node_name, tmp_path / "h", plane=plane) as harness:
        port = free_port()
        server = sh(
            "server", "exec httpd -f -p 8080 -h /var/www", ports=[{"containerPort": 8080, "hostPort": port}]
        )
        await harness.create(harness.manifest("web", [server]))
        pod = await harness.wait_for("web", has_ip)
        ip = running_ip(pod)
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(cni.subnet)
        assert pod["status"]["podIPs"] == [{"ip": ip}]
        assert cni.reserved() == [ip]
        body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/")
        assert "hello from vk-test/busybox" in body
        # The sandbox has no Docker network: the pod's resolv.conf is the provider's.
        lines = await resolv_conf_of(harness, "resolver", dnsPolicy="ClusterFirst")
        assert [line for line in lines if line.startswith("nameserver")] == [f"nameserver {CLUSTER_DNS}"]
        assert "options ndots:5" in lines
        await harness.delete("resolver", grace=0)

        await harness.delete("web", grace=0)
        await harness.wait_gone("web")
        await harness.wait_gone("resolver")
        await eventually(lambda: cni.reserved() == [], what=lambda: f"host-local to free {cni.reserved()}")
        # The cached ADD result goes after the last plugin's DEL answered (libcni's order), so
        # host-local's release can be seen a moment before it.
        state = tmp_path / "h" / "state" / ".cni" / node_name / "results"

        def cached() -> list[str]:
            return sorted(p.name for p in state.iterdir()) if state.exists() else []

        await eventually(lambda: cached() == [], what=lambda: f"the cached ADD results to go: {cached()}")


async def test_a_killed_provider_adopts_the_pod_with_its_address_and_check_passes(
    node_name: str, tmp_path: Path, plane: Plane, cni: CNIRig
) -> None:
    cni.write()
    harness = ProviderHarness(node_name, tmp_path / "h", plane=plane)
    await harness.start_sandbox()
    try:
        harness.start_provider_process({"network": cni.settings()})
        await harness.create(harness.manifest("kept", [sh("main", "sleep 3600")]))
        ip = running_ip(await harness.wait_for("kept", has_ip, within=120.0))
        harness.kill_provider_process()
        harness.start_provider_process({"network": cni.settings()})
        await eventually(
            lambda: "CHECK passed" in harness.provider_log(), within=120.0, what="the adopted sandbox's CHECK"
        )
        pod = await harness.get("kept")
        assert pod is not None and running_ip(pod) == ip
        assert "CHECK failed" not in harness.provider_log()
        assert cni.reserved() == [ip]
        await harness.delete("kept", grace=0)
        await harness.wait_gone("kept", within=120.0)
        await eventually(lambda: cni.reserved() == [], what=lambda: f"host-local to free {cni.reserved()}")
    finally:
        harness.kill_provider_process()
        await harness.close()


async def test_without_a_configuration_the_node_is_not_ready_and_host_network_pods_run(
    node_name: str, tmp_path: Path, plane: Plane, cni: CNIRig
) -> None:
    async with cni_harness(cni, host_network=True).running(node_name, tmp_path / "h", plane=plane) as harness:

        async def ready() -> dict[str, Any] | None:
            node = await harness.api.get(f"/api/v1/nodes/{node_name}")
            return next((c for c in node["status"].get("conditions") or [] if c["type"] == "Ready"), None)

        condition = await eventually(ready, what="the Ready condition")
        assert condition["status"] == "False" and condition["reason"] == "KubeletNotReady"
        assert "reason:NetworkPluginNotReady" in condition["message"]
        assert "cni plugin not initialized" in condition["message"]

        await harness.create(harness.manifest("hostnet", [sh("main", "sleep 3600")], hostNetwork=True))
        await harness.wait_for("hostnet", lambda p: (p.get("status") or {}).get("phase") == "Running")
        await harness.create(harness.manifest("podnet", [sh("main", "sleep 3600")]))
        event = await harness.wait_event("podnet", "FailedCreatePodSandBox")
        assert "cni config uninitialized" in event["message"]

        cni.write()  # a configuration arrives: the node turns Ready and the pod runs
        await harness.wait_for("podnet", has_ip, within=120.0)

        async def ready_true() -> bool:
            condition = await ready()
            return bool(condition and condition["status"] == "True")

        await eventually(ready_true, within=120.0, what="the node to turn Ready")


async def test_an_exhausted_range_is_failed_create_pod_sandbox_retried_with_nothing_leaked(
    node_name: str, tmp_path: Path, plane: Plane, cni: CNIRig, docker_client: Any
) -> None:
    only = str(next(ipaddress.ip_network(cni.subnet).hosts()) + 9)
    cni.write(range_end=only)
    async with cni_harness(cni).running(node_name, tmp_path / "h", plane=plane) as harness:
        await harness.create(harness.manifest("first", [sh("main", "sleep 3600")]))
        assert running_ip(await harness.wait_for("first", has_ip)) == only
        await harness.create(harness.manifest("second", [sh("main", "sleep 3600")]))
        event = await harness.wait_event("second", "FailedCreatePodSandBox")
        assert event["type"] == "Warning" and "no IP addresses available" in event["message"]
        second = await harness.get("second")
        assert second is not None and second["status"].get("phase") == "Pending"
        uid = second["metadata"]["uid"]

        def sandboxes() -> list[Any]:
            return list(
                docker_client.containers.list(
                    all=True,
                    filters={"label": [f"io.vk-provider.pod.uid={uid}", "io.vk-provider.role=sandbox"]},
                )
            )

        assert len(sandboxes()) <= 1  # at most the one being tried; failed ones are removed
        assert cni.reserved() == [only]
        # The first pod goes: the retried sandbox of the second gets the address.
        await harness.delete("first", grace=0)
        assert running_ip(await harness.wait_for("second", has_ip, within=120.0)) == only
        assert len(sandboxes()) == 1
