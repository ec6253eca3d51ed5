"""The two control planes the API-facing tests run against, behind one interface.

What lives here: the tiers (`KINDS`, `selected_kinds` for `--control-plane=emulator|real|both`),
`EmulatorPlane` (an in-process `SandboxServer` per test, debug counters on), `RealCluster`
(one `vk-provider sandbox --control-plane real --no-provider` subprocess for the whole
session, plus a service-account identity with the Helm chart's RBAC for the providers; its
`kill_component` SIGKILLs one of the control plane's processes, which the sandbox restarts) and
`RealPlane` (a test's view of it: on stop it removes what the test left in the shared
cluster, so the next test starts clean). A test or harness uses `plane.admin_kubeconfig` to
act as the user and `plane.provider_kubeconfig` / `plane.ca_file` / `plane.kubelet_auth` to
configure a provider. Must not: assert anything about the product.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.polling import until
from vk_common.ports import free_port
from vk_sandbox.kubeconfig import Credentials, write_kubeconfig
from vk_sandbox.real import identities
from vk_sandbox.real.admin import AdminAPI
from vk_sandbox.server import SandboxServer

REPO = Path(__file__).resolve().parents[2]
KINDS = ("emulator", "real")
NAMESPACE = "default"
# The node monitor grace period of the session's real cluster: short enough for the node
# lifecycle tests, long enough that a busy provider's 10 s lease renewals never miss it.
REAL_NODE_GRACE_SECONDS = 20
# What real-tier tests may leave in the namespace besides pods, configmaps, secrets and events.
WORKLOAD_COLLECTIONS = (
    "/apis/apps/v1/namespaces/{ns}/deployments",
    "/apis/apps/v1/namespaces/{ns}/replicasets",
    "/apis/batch/v1/namespaces/{ns}/jobs",
    "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
)


def ensure_kube_bin() -> str:
    """The directory of the real control plane's binaries (built by scripts/ensure-kube.sh if needed)."""
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure-kube.sh")], capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, f"scripts/ensure-kube.sh failed:\n{built.stderr}"
    return built.stdout.strip().splitlines()[-1]


def launch_sandbox(args: list[str], output: Path) -> subprocess.Popen[bytes]:
    """`vk-provider sandbox ARGS` with its output in `output` (a file, never an unread pipe)."""
    with output.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "vk_cli", "sandbox", *args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def stop_process(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL after 60 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def log_tail(output: Path, lines: int = 40) -> str:
    text = output.read_text(errors="replace") if output.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def selected_kinds(config: pytest.Config) -> list[str]:
    value = str(config.getoption("--control-plane"))
    return list(KINDS) if value == "both" else [value]


class EmulatorPlane:
    """A fresh emulator for one test, in this process."""

    kind = "emulator"
    kubelet_auth = "x509"

    def __init__(self, workdir: Path, api_port: int = 0, *, node_grace_seconds: float = 50.0) -> None:
        self.server = SandboxServer(
            debug=True,
            state_dir=workdir / "sandbox",
            port=api_port,
            node_monitor_grace_seconds=node_grace_seconds,
        )
        self.admin_kubeconfig = workdir / "kubeconfig"
        self.provider_kubeconfig = self.admin_kubeconfig
        self.ca_file = self.server.pki.ca_cert_path

    async def start(self) -> None:
        await self.server.start()
        self.server.write_kubeconfig(self.admin_kubeconfig)

    async def stop(self, node: str | None = None) -> None:
        await self.server.stop()


class RealCluster:
    """The real control plane for the session, started once on first use."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.state_dir = directory / "state"
        self.admin_kubeconfig = self.state_dir / "kubeconfig"
        self.provider_kubeconfig = directory / "provider.kubeconfig"
        self.ca_file = self.state_dir / "pki" / "ca.crt"
        self.output = directory / "sandbox.out"
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> None:
        kube_bin = ensure_kube_bin()
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [
            *("--state-dir", str(self.state_dir), "--port", str(free_port()), "--no-provider"),
            *("--control-plane", "real", "--kube-bin", kube_bin),
            *("--node-grace-seconds", str(REAL_NODE_GRACE_SECONDS)),
        ]
        self.proc = launch_sandbox(args, self.output)
        until("the real control plane", self._started, deadline=240)
        config = yaml.safe_load(self.admin_kubeconfig.read_text())
        self.url = config["clusters"][0]["cluster"]["server"]
        asyncio.run(self._provision_provider_identity())

    def _started(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"the real control plane exited: {self.log_tail()}")
        return "API server at" in self.output.read_text(errors="replace")

    async def _provision_provider_identity(self) -> None:
        """The chart's RBAC, as `vk-provider sandbox` gives its own providers."""
        tools = identities.find_chart_tools()
        assert tools is not None, "the real tier needs helm (scripts/ensure-helm.sh) and charts/"
        objects = identities.render_chart_rbac(tools, identities.chart_values({}))
        async with self.admin() as admin:
            credentials = await identities.chart_identity(admin, objects, self.ca_file)
        write_kubeconfig(self.provider_kubeconfig, self.url, credentials)

    def admin(self) -> _AdminSession:
        return _AdminSession(self)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.output, lines)

    def kill_component(self, name: str) -> int:
        """SIGKILL the sandbox's child process `name` (etcd, kube-apiserver, ...); its pid.
        The sandbox starts it again (`vk_sandbox/real/process.py` supervise)."""
        assert self.proc is not None
        for pid in child_pids(self.proc.pid):
            with contextlib.suppress(OSError):  # a child that exits meanwhile
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                if Path(argv0.decode()).name == name:
                    os.kill(pid, signal.SIGKILL)
                    return pid
        raise AssertionError(f"no {name} process under the sandbox (pid {self.proc.pid})")

    def stop(self) -> None:
        stop_process(self.proc)


def child_pids(pid: int) -> list[int]:
    """The processes `pid` started (of any of its threads), from /proc."""
    pids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            pids += [int(child) for child in (task / "children").read_text().split()]
    return pids


class _AdminSession:
    """`async with cluster.admin() as admin:` an AdminAPI with the cluster admin's certificate."""

    def __init__(self, cluster: RealCluster) -> None:
        self.cluster = cluster
        self.api: AdminAPI | None = None

    async def __aenter__(self) -> AdminAPI:
        pki = self.cluster.state_dir / "pki"
        self.api = AdminAPI(self.cluster.url, self.cluster.ca_file, pki / "admin.crt", pki / "admin.key")
        return self.api

    async def __aexit__(self, *exc: object) -> None:
        assert self.api is not None
        await self.api.close()


class RealPlane:
    """One test's use of the session's real cluster; `stop` leaves it as the test found it."""

    kind = "real"
    kubelet_auth = "webhook"

    def __init__(self, cluster: RealCluster) -> None:
        self.cluster = cluster
        self.admin_kubeconfig = cluster.admin_kubeconfig
        self.provider_kubeconfig = cluster.provider_kubeconfig
        self.ca_file = cluster.ca_file

    def with_provider_kubeconfig(self, kubeconfig: Path) -> RealPlane:
        """The same cluster, the provider running with other credentials."""
        other = RealPlane(self.cluster)
        other.provider_kubeconfig = kubeconfig
        return other

    @property
    def credentials(self) -> Credentials:
        pki = self.cluster.state_dir / "pki"
        return Credentials(self.ca_file, pki / "admin.crt", pki / "admin.key")

    async def start(self) -> None:
        assert self.cluster.proc is not None and self.cluster.proc.poll() is None, self.cluster.log_tail()

    async def stop(self, node: str | None = None) -> None:
        """Remove the test's workloads and pods (at once), configmaps, secrets and events, and its Node."""
        now: dict[str, Any] = {"gracePeriodSeconds": 0, "propagationPolicy": "Background"}
        base = f"/api/v1/namespaces/{NAMESPACE}"
        async with self.cluster.admin() as admin:
            for workloads in WORKLOAD_COLLECTIONS:
                await admin.request("DELETE", workloads.format(ns=NAMESPACE), now)
            await admin.request("DELETE", f"{base}/pods", now)
            await admin.request(
                "DELETE",
                f"{base}/configmaps",
                now,
                params={"fieldSelector": "metadata.name!=kube-root-ca.crt"},
            )
            await admin.request("DELETE", f"{base}/secrets", now)
            await admin.request("DELETE", f"{base}/events", now)
            if node:
                await admin.request("DELETE", f"/api/v1/nodes/{node}", now)


Plane = EmulatorPlane | RealPlane
