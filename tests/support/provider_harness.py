"""Integration harness: the sandbox control plane plus the provider for one unique node.

What lives here: `ProviderHarness`, which starts the test's control plane (`tests.support.planes`:
an in-process emulator with debug counters on, or the session's real control plane; alone, for a
test that starts the provider itself, with `async with ProviderHarness.sandbox_only(...)`), and
runs the provider for the test's node either
in-process (`start_provider` / `stop_provider`, the app's `Provider`) or as a real
`python -m vk_cli run` subprocess (`start_provider_process` / `kill_provider_process`,
for kill -9 tests). It also acts as the user: create, get, delete and wait for pods,
read Events and the sandbox's request counters, all over the API. `EngineHarness`: the same with
the provider on another engine address (a proxy in front of dockerd); `harness_allowing`: with
`docker.allow` settings.
Must not: reach into the provider's internals to decide a test's outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import yaml

from tests.support import manifests
from tests.support.engine import engine_under_test
from tests.support.images import PAUSE_IMAGE
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.polling import eventually
from vk_provider.app import Provider
from vk_provider.config import (
    Config,
    DockerConfig,
    KubeletServerConfig,
    KubernetesConfig,
    NodeCapacity,
    NodeConfig,
    PodsConfig,
    StaticPodsConfig,
    StatusConfig,
)
from vk_provider.kube.client import ApiStatusError, KubeClient, make_kube_client
from vk_provider.node.agent import detect_node_ip
from vk_provider.runtime.subpath_mounts import detach_mounts_under
from vk_sandbox.server import SandboxServer

NAMESPACE = "default"
REPO = Path(__file__).resolve().parents[2]


class ProviderHarness:
    def __init__(
        self,
        node_name: str,
        workdir: Path,
        *,
        sync_period: float = 10.0,
        resync_interval: float = 60.0,
        static_dir: Path | None = None,
        api_port: int = 0,
        plane: EmulatorPlane | RealPlane | None = None,
        max_pods: int = 110,
    ) -> None:
        self.resync_interval = resync_interval
        self.max_pods = max(110, max_pods)  # `node.capacity.pods`: the kubelet's default, or more
        self.node_name = node_name
        self.workdir = workdir
        self.sync_period = sync_period
        self.static_dir = static_dir
        # api_port (emulator only): a fixed port (`free_port`) lets a test write the kubeconfig
        # and start the provider before the sandbox listens; 0 picks a free port at start.
        self.plane = plane if plane is not None else EmulatorPlane(workdir, api_port)
        self.kubeconfig = self.plane.admin_kubeconfig
        self.client: KubeClient | None = None
        self.provider: Provider | None = None
        self.process: subprocess.Popen[bytes] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    @contextlib.asynccontextmanager
    async def sandbox_only(cls, node_name: str, workdir: Path, **kw: Any) -> AsyncIterator[ProviderHarness]:
        """The sandbox without a provider (the test starts one, in-process or as a process, when
        it wants); everything is stopped afterwards."""
        harness = cls(node_name, workdir, **kw)
        await harness.start_sandbox()
        try:
            yield harness
        finally:
            await harness.close()

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, node_name: str, workdir: Path, **kw: Any) -> AsyncIterator[ProviderHarness]:
        """The sandbox and an in-process provider; everything is stopped afterwards."""
        async with cls.sandbox_only(node_name, workdir, **kw) as harness:
            await harness.start_provider()
            yield harness

    @property
    def server(self) -> SandboxServer:
        """The emulator itself (tests that reach into it run on the emulator tier only)."""
        assert isinstance(self.plane, EmulatorPlane), "this test needs the emulator"
        return self.plane.server

    def config(self) -> Config:
        return Config(
            node=NodeConfig(
                name=self.node_name, internal_ip="127.0.0.1", capacity=NodeCapacity(pods=str(self.max_pods))
            ),
            kubernetes=KubernetesConfig(kubeconfig=str(self.plane.provider_kubeconfig)),
            docker=DockerConfig(
                engine=engine_under_test(), sandbox_image=PAUSE_IMAGE, state_dir=str(self.workdir / "state")
            ),
            pods=PodsConfig(resync_interval=self.resync_interval),
            status=StatusConfig(sync_period=self.sync_period),
            static_pods=StaticPodsConfig(path=str(self.static_dir or ""), relist_interval=2.0),
            kubelet_server=KubeletServerConfig(
                listen="127.0.0.1:0", client_ca_file=str(self.plane.ca_file), auth=self.plane.kubelet_auth
            ),
        )

    async def start_sandbox(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        await self.plane.start()
        self.client = await make_kube_client(KubernetesConfig(kubeconfig=str(self.kubeconfig)))

    async def start_provider(self) -> None:
        self.provider = Provider(self.config())
        await self.provider.start()

    async def stop_provider(self) -> None:
        if self.provider is not None:
            await self.provider.stop()
            self.provider = None

    def start_provider_process(self, settings: dict[str, dict[str, Any]] | None = None) -> None:
        """The provider as `python -m vk_cli run` in its own process (logs in workdir).
        `settings`: more keys per section of its config file (`{"node": {"cordonOnShutdown": True}}`)."""
        cfg: dict[str, dict[str, Any]] = {
            "node": {
                "name": self.node_name,
                "internalIP": "127.0.0.1",
                "capacity": {"pods": str(self.max_pods)},
            },
            "kubernetes": {"kubeconfig": str(self.plane.provider_kubeconfig)},
            "docker": {
                "engine": engine_under_test(),
                "sandboxImage": PAUSE_IMAGE,
                "stateDir": str(self.workdir / "state"),
            },
            "status": {"syncPeriod": f"{self.sync_period:g}s"},
            "kubeletServer": {
                "listen": "127.0.0.1:0",
                "clientCAFile": str(self.plane.ca_file),
                "auth": self.plane.kubelet_auth,
            },
            "logging": {"level": "info"},
        }
        if self.static_dir is not None:
            cfg["staticPods"] = {"path": str(self.static_dir)}
        for section, values in (settings or {}).items():
            cfg.setdefault(section, {}).update(values)
        path = self.workdir / "provider.yaml"
        path.write_text(yaml.safe_dump(cfg))
        log = (self.workdir / "provider.log").open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "vk_cli", "run", "--config", str(path)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def kill_provider_process(self) -> None:
        """kill -9: no clean-up of any kind."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
            self.process = None

    def provider_log(self) -> str:
        path = self.workdir / "provider.log"
        return path.read_text(errors="replace") if path.exists() else ""

    async def close(self) -> None:
        if self.process is not None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=15)
            if self.process.poll() is None:
                self.process.kill()
            self.process = None
        await self.stop_provider()
        # A stopped provider leaves its pods' subPath bind mounts, as a kubelet does for running
        # containers: detached here, so that no clean-up of tmp_path ever deletes through them.
        await asyncio.to_thread(detach_mounts_under, self.workdir)
        if self.client is not None:
            await self.client.close()
        await self.plane.stop(self.node_name)

    # -- acting as the user ------------------------------------------------------------------

    @property
    def api(self) -> KubeClient:
        assert self.client is not None
        return self.client

    def manifest(self, name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
        return manifests.pod(name, containers, nodeName=self.node_name, **spec)

    async def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        namespace = manifest["metadata"].get("namespace", NAMESPACE)
        return await self.api.create(f"/api/v1/namespaces/{namespace}/pods", manifest)

    async def create_object(self, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.api.create(f"/api/v1/namespaces/{NAMESPACE}/{plural}", obj)

    async def get(self, name: str) -> dict[str, Any] | None:
        try:
            return await self.api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
        except ApiStatusError as exc:
            if exc.status == 404:
                return None
            raise

    async def delete(self, name: str, grace: int | None = None) -> None:
        body = {"gracePeriodSeconds": grace} if grace is not None else None
        await self.api.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", body)

    async def wait_for(
        self, name: str, predicate: Callable[[dict[str, Any]], bool], within: float = 60.0
    ) -> dict[str, Any]:
        """Poll the pod until `predicate(pod)` holds; fail with the last pod seen."""
        found: dict[str, Any] = await self._watch_pod(
            name,
            lambda pod: pod if pod is not None and predicate(pod) else None,
            within,
            0.2,
            "the expected state",
        )
        return found

    async def wait_gone(self, name: str, within: float = 60.0) -> float:
        """Poll until the pod is gone from the API; return when (monotonic)."""
        when: float = await self._watch_pod(
            name, lambda pod: time.monotonic() if pod is None else None, within, 0.1, "gone"
        )
        return when

    async def _watch_pod(
        self,
        name: str,
        reached: Callable[[dict[str, Any] | None], Any],
        within: float,
        interval: float,
        what: str,
    ) -> Any:
        """The first truthy `reached(pod)` (None once the pod is gone); the failure names the last pod."""
        pod: dict[str, Any] | None = None

        async def check() -> Any:
            nonlocal pod
            pod = await self.get(name)
            return reached(pod)

        return await eventually(
            check, within=within, interval=interval, what=lambda: f"pod {name} {what}: {pod}"
        )

    async def events(self, name: str) -> list[dict[str, Any]]:
        answer = await self.api.get(
            f"/api/v1/namespaces/{NAMESPACE}/events",
            {"fieldSelector": f"involvedObject.name={name}"},
        )
        return list(answer.get("items") or [])

    async def wait_event(self, name: str, reason: str, within: float = 60.0) -> dict[str, Any]:
        events: list[dict[str, Any]] = []

        async def recorded() -> dict[str, Any] | None:
            nonlocal events
            events = await self.events(name)
            return next((event for event in events if event.get("reason") == reason), None)

        event: dict[str, Any] = await eventually(
            recorded, within=within, interval=0.3, what=lambda: f"{reason} event of {name}: {events}"
        )
        return event

    async def counters(self) -> dict[str, Any]:
        answer = await self.api.get("/debug/sandbox/counters")
        return dict(answer)


class EngineHarness(ProviderHarness):
    """The harness with its provider on the engine at `engine` (`docker.host`): dockerd behind a
    proxy, on a Unix socket or over TCP."""

    def __init__(self, *args: Any, engine: str, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.engine = engine

    def config(self) -> Config:
        config = super().config()
        return dataclasses.replace(config, docker=dataclasses.replace(config.docker, host=self.engine))


def harness_allowing(**allowances: bool) -> type[ProviderHarness]:
    """A ProviderHarness whose provider has these `docker.allow` settings (field names of
    `AllowConfig`, e.g. `host_path=True`)."""

    class AllowingHarness(ProviderHarness):
        def config(self) -> Config:
            base = super().config()
            allow = dataclasses.replace(base.docker.allow, **allowances)
            return dataclasses.replace(base, docker=dataclasses.replace(base.docker, allow=allow))

    return AllowingHarness


@contextlib.asynccontextmanager
async def node_proxied_provider(
    node_name: str,
    workdir: Path,
    plane: EmulatorPlane | RealPlane,
    edit: Callable[[Config], Config] = lambda config: config,
) -> AsyncIterator[ProviderHarness]:
    """The sandbox and an in-process provider whose kubelet API listens on the host's own address,
    so the apiserver's node proxy reaches it (the real one refuses a loopback address: "address not
    allowed"); `edit` changes its config further."""
    async with ProviderHarness.sandbox_only(node_name, workdir, plane=plane) as harness:
        base = harness.config()
        ip = detect_node_ip()
        config = dataclasses.replace(
            base,
            node=dataclasses.replace(base.node, internal_ip=ip),
            kubelet_server=dataclasses.replace(base.kubelet_server, listen=f"{ip}:0"),
        )
        harness.provider = Provider(edit(config))
        await harness.provider.start()
        yield harness
