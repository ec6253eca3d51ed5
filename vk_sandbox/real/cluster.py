"""`RealControlPlane`: etcd, kube-apiserver, kube-controller-manager and kube-scheduler on loopback.

What lives here: the control plane's lifecycle. `start()` makes the PKI, picks free ports,
writes the components' kubeconfigs, starts etcd (data in a fresh temporary directory), then
the apiserver, waits for `/readyz`, then the controller manager and the scheduler and waits
for their `/healthz` and for the `default` ServiceAccount; a component that exits or never
gets ready raises `ControlPlaneError` with the end of its log. Once all are ready, each is
supervised like a kubelet's static pod: one that exits (crashed, or killed by a test) is
started again with the same command line, data and ports, after the kubelet's restart
back-off (`process.RestartBackoff`). `stop()` ends the supervision, then stops them in
reverse order. `write_kubeconfig(path)` writes the admin kubeconfig. Logs are in
`<state_dir>/logs/<component>.log`.
With `cluster=True` the sandbox is a cluster, not only a control plane (docs/networking.md):
the host's routes and lock (`host_network`), pod-to-pod forwarding between the nodes'
networks (`pod_forwarding`), node CIDRs from the controller manager, kube-proxy
on this host (supervised like the others; its iptables rules removed with `--cleanup` at stop)
and CoreDNS behind `kube-dns` (`coredns`), whose pod runs on a provider node.
`default_kube_bin()` is where `scripts/ensure-kube.sh` leaves the binaries.
Must not: start providers (command.py does) or import the emulator's server.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import tempfile
from pathlib import Path

import aiohttp

from vk_common.kube_version import KUBE_VERSION
from vk_common.logging import get_logger
from vk_common.ports import free_port
from vk_common.tasks import cancel_and_wait
from vk_sandbox.kubeconfig import Credentials, write_kubeconfig
from vk_sandbox.real.admin import AdminAPI, ApiError
from vk_sandbox.real.components import (
    CLUSTER_CIDR,
    SERVICE_CIDR,
    SERVICE_IP,
    Files,
    Ports,
    apiserver_args,
    controller_manager_args,
    etcd_args,
    kube_proxy_args,
    scheduler_args,
)
from vk_sandbox.real.coredns import deploy_coredns
from vk_sandbox.real.host_network import HostNetwork, HostNetworkError, advertise_address
from vk_sandbox.real.pki import ClusterPKI
from vk_sandbox.real.pod_forwarding import PodForwarding, PodForwardingError
from vk_sandbox.real.process import ComponentProcess

log = get_logger("sandbox.real")

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
CLUSTER_BINARIES = ("kube-proxy",)  # with the cluster network
READY_SECONDS = 180.0


class ControlPlaneError(Exception):
    """The real control plane cannot start; the message says which part and why."""


def default_kube_bin() -> Path:
    """The binaries `scripts/ensure-kube.sh` built for KUBE_VERSION (its stable link)."""
    cache = os.environ.get("VK_KUBE_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vk-provider" / "kube"
    )
    return Path(cache) / KUBE_VERSION / "bin"


def missing_binaries(bin_dir: Path, cluster: bool = False) -> list[str]:
    names = BINARIES + (CLUSTER_BINARIES if cluster else ())
    return [name for name in names if not os.access(bin_dir / name, os.X_OK)]


class RealControlPlane:
    def __init__(
        self,
        *,
        state_dir: Path,
        port: int = 0,
        kube_bin: Path | None = None,
        node_monitor_grace_seconds: float = 50.0,
        extra_address: str | None = None,
        cluster: bool = False,
        coredns_image: str | None = None,
    ) -> None:
        """`cluster`: also the cluster network (root only, one per host); `coredns_image`: the
        image of its CoreDNS (scripts/ensure-coredns.sh), needed with `cluster`."""
        self.state_dir = Path(state_dir)
        self.extra_address = extra_address
        self.advertise_address = advertise_address()
        self.host_network = HostNetwork(SERVICE_CIDR, CLUSTER_CIDR) if cluster else None
        self.pod_forwarding = PodForwarding(CLUSTER_CIDR) if cluster else None
        self.coredns_image = coredns_image
        self.kube_bin = Path(kube_bin) if kube_bin is not None else default_kube_bin()
        self.node_monitor_grace_seconds = node_monitor_grace_seconds
        self._requested_port = port
        extra = tuple(a for a in (extra_address, self.advertise_address) if a is not None)
        self.pki = ClusterPKI(self.state_dir, SERVICE_IP, extra)
        self.ports: Ports | None = None
        self._etcd_dir: str | None = None
        self._components: list[ComponentProcess] = []
        self._supervisors: list[asyncio.Task[None]] = []
        self.admin: AdminAPI | None = None

    @property
    def url(self) -> str:
        assert self.ports is not None, "not started"
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def admin_credentials(self) -> Credentials:
        cert, key = self.pki.admin
        return Credentials(self.pki.ca_cert_path, cert, key)

    def write_kubeconfig(self, path: Path, credentials: Credentials | None = None) -> Path:
        """A kubeconfig for this cluster: the admin's unless other `credentials` are given."""
        return write_kubeconfig(path, self.url, credentials or self.admin_credentials)

    async def start(self) -> None:
        missing = missing_binaries(self.kube_bin, self.host_network is not None)
        if missing:
            raise ControlPlaneError(
                f"{', '.join(missing)} not found in {self.kube_bin}: build them with "
                "scripts/ensure-kube.sh, or pass --kube-bin DIR"
            )
        if self.host_network is not None and not self.coredns_image:
            raise ControlPlaneError(
                "no CoreDNS image: build it with scripts/ensure-coredns.sh (make coredns), "
                "or pass --coredns-image"
            )
        self.ports = Ports(
            etcd_client=free_port(),
            etcd_peer=free_port(),
            apiserver=self._requested_port or free_port(),
            controller_manager=free_port(),
            scheduler=free_port(),
            proxy_health=free_port(),
            proxy_metrics=free_port(),
        )
        self._etcd_dir = tempfile.mkdtemp(prefix="vk-sandbox-etcd-")
        files = self._files(Path(self._etcd_dir))
        cm_cert, cm_key = self.pki.controller_manager
        sched_cert, sched_key = self.pki.scheduler
        ca = self.pki.ca_cert_path
        self.write_kubeconfig(files.controller_manager_kubeconfig, Credentials(ca, cm_cert, cm_key))
        self.write_kubeconfig(files.scheduler_kubeconfig, Credentials(ca, sched_cert, sched_key))
        proxy_cert, proxy_key = self.pki.kube_proxy
        self.write_kubeconfig(files.kube_proxy_kubeconfig, Credentials(ca, proxy_cert, proxy_key))
        cert, key = self.pki.admin
        self.admin = AdminAPI(self.url, ca, cert, key)
        if self.host_network is not None:
            try:
                await self.host_network.start()
                assert self.pod_forwarding is not None
                await self.pod_forwarding.start()
            except (HostNetworkError, PodForwardingError) as exc:
                raise ControlPlaneError(str(exc)) from None
        logs = self.state_dir / "logs"
        bin_dir, ports = self.kube_bin, self.ports
        etcd = await self._launch("etcd", etcd_args(bin_dir, ports, files), logs)
        await self._wait_http(etcd, f"http://127.0.0.1:{ports.etcd_client}/health", None)
        # Every address: the advertised one is where in-cluster clients reach the `kubernetes`
        # Service's endpoint, loopback where the sandbox's own clients do.
        loopback_only = self.extra_address is None and self.advertise_address == "127.0.0.1"
        bind = "127.0.0.1" if loopback_only else "0.0.0.0"
        apiserver_argv = apiserver_args(bin_dir, ports, files, bind, self.advertise_address)
        apiserver = await self._launch("kube-apiserver", apiserver_argv, logs)
        await self._wait_http(apiserver, f"{self.url}/readyz", self._admin_ssl())
        grace = self.node_monitor_grace_seconds
        cluster = self.host_network is not None
        cm_argv = controller_manager_args(bin_dir, ports, files, grace, cluster)
        controller_manager = await self._launch("kube-controller-manager", cm_argv, logs)
        scheduler = await self._launch("kube-scheduler", scheduler_args(bin_dir, ports, files), logs)
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        await self._wait_http(
            controller_manager, f"https://127.0.0.1:{ports.controller_manager}/healthz", insecure
        )
        await self._wait_http(scheduler, f"https://127.0.0.1:{ports.scheduler}/healthz", insecure)
        # Pods are refused until the service account controller made `default` (as on kind).
        await self._wait_http(
            controller_manager,
            f"{self.url}/api/v1/namespaces/default/serviceaccounts/default",
            self._admin_ssl(),
        )
        if cluster:
            hostname = socket.gethostname()
            await self._launch("kube-proxy", kube_proxy_args(bin_dir, ports, files, hostname), logs)
            assert self.admin is not None and self.coredns_image is not None
            try:
                await deploy_coredns(self.admin, self.coredns_image)
            except (ApiError, aiohttp.ClientError) as exc:
                raise ControlPlaneError(f"cannot deploy CoreDNS: {exc}") from None
        self._supervisors = [
            asyncio.create_task(component.supervise(), name=f"supervise {component.name}")
            for component in self._components
        ]
        log.info(
            "real control plane ready",
            extra={"version": KUBE_VERSION, "url": self.url, "binaries": str(bin_dir)},
        )

    def _files(self, etcd_data: Path) -> Files:
        pki = self.pki
        config_dir = self.state_dir / "control-plane"
        return Files(
            etcd_data=etcd_data,
            ca_cert=pki.ca_cert_path,
            ca_key=pki.ca_key_path,
            apiserver_cert=pki.apiserver[0],
            apiserver_key=pki.apiserver[1],
            kubelet_client_cert=pki.client_cert_path,
            kubelet_client_key=pki.client_key_path,
            sa_key=pki.sa_key_path,
            sa_pub=pki.sa_pub_path,
            front_proxy_ca=pki.front_proxy.ca_cert_path,
            front_proxy_client_cert=pki.front_proxy_client[0],
            front_proxy_client_key=pki.front_proxy_client[1],
            controller_manager_kubeconfig=config_dir / "controller-manager.kubeconfig",
            scheduler_kubeconfig=config_dir / "scheduler.kubeconfig",
            kube_proxy_kubeconfig=config_dir / "kube-proxy.kubeconfig",
        )

    async def _kube_proxy_cleanup(self) -> None:
        """Remove kube-proxy's iptables rules (`kube-proxy --cleanup`, cmd/kube-proxy/app/server.go)."""
        cleanup = ComponentProcess(
            "kube-proxy-cleanup",
            [str(self.kube_bin / "kube-proxy"), "--cleanup", "--proxy-mode=iptables"],
            self.state_dir / "logs" / "kube-proxy.log",
        )
        await cleanup.start()
        assert cleanup.proc is not None
        if await cleanup.proc.wait() != 0:
            log.error("kube-proxy --cleanup failed", extra={"output": cleanup.log_tail(5)})

    def _admin_ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert_path))
        ctx.load_cert_chain(*(str(p) for p in self.pki.admin))
        return ctx

    async def _launch(self, name: str, argv: list[str], logs: Path) -> ComponentProcess:
        component = ComponentProcess(name, argv, logs / f"{name}.log")
        await component.start()
        self._components.append(component)
        return component

    async def _wait_http(self, component: ComponentProcess, url: str, ctx: ssl.SSLContext | None) -> None:
        """Poll `url` until it answers 200 ok; fail at once if the component exits."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READY_SECONDS
        last = "no answer"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while loop.time() < deadline:
                if not component.running:
                    raise ControlPlaneError(
                        f"{component.name} exited with code {component.proc and component.proc.returncode} "
                        f"(log {component.log_path}):\n{component.log_tail()}"
                    )
                try:
                    async with session.get(url, ssl=ctx if ctx is not None else False) as resp:
                        if resp.status == 200:
                            return
                        last = f"HTTP {resp.status}: {(await resp.text())[-500:]}"
                except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                    last = str(exc) or type(exc).__name__
                await asyncio.sleep(0.25)
        raise ControlPlaneError(
            f"{component.name} not ready after {READY_SECONDS:.0f} s ({url}: {last}); "
            f"log {component.log_path}:\n{component.log_tail()}"
        )

    async def stop(self) -> None:
        for error in await cancel_and_wait(*self._supervisors):
            log.error("supervising a component failed", extra={"err": repr(error)})
        self._supervisors.clear()
        for component in reversed(self._components):
            await component.stop()
        if any(c.name == "kube-proxy" for c in self._components):
            await self._kube_proxy_cleanup()
        self._components.clear()
        if self.pod_forwarding is not None:
            await self.pod_forwarding.stop()
        if self.host_network is not None:
            await self.host_network.stop()
        if self.admin is not None:
            await self.admin.close()
            self.admin = None
        if self._etcd_dir is not None:
            await asyncio.to_thread(shutil.rmtree, self._etcd_dir, True)
            self._etcd_dir = None
