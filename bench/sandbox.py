"""The sandbox a bench runs: `BenchSandbox` / `start_sandbox`.

A `vk-provider sandbox` subprocess with one node (or `nodes`) of a unique name (`vk-bench-<run>-1`,
`-2`, ...), its own
`--state-dir` under a temporary directory, a free port (`free_port`), `--clean`, the emulator
(with `--debug`, for its request counters) or `--control-plane real` (binaries from
`scripts/ensure-kube.sh`, `ensure_kube_bin`); its admin `KubeClient` (no client-side rate
limit), the provider subprocesses' pids, and `stop`, which stops the sandbox and removes every
container left with a node's label. `start_sandbox` returns once the machine is quiet
(`wait_quiet`): a control plane that has just started keeps the cores busy for a while.

Must not: import from `tests/`; change how the provider behaves beyond the `--config` keys the
sandbox merges (the sandbox image, the Docker host for the counting proxy, and a pods capacity
above the kubelet's default of 110 when a bench puts more pods on a node).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from bench.docker_engine import NODE_LABEL, DockerCountingProxy, remove_labelled, remove_node_cgroups
from bench.procfs import child_pids, machine_busy_seconds
from bench.report import progress
from vk_common.ports import free_port
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import ApiStatusError, KubeClient, make_kube_client

REPO = Path(__file__).resolve().parents[1]
PAUSE_IMAGE = "vk-test/pause:1"
START_DEADLINE = {"emulator": 60.0, "real": 240.0}
STOP_DEADLINE = 120.0
MAX_PODS = 110  # the kubelet's default, and the provider's `node.capacity.pods`
QUIET_CORES = 0.25  # the machine counts as quiet below this many cores busy ...
QUIET_WINDOWS = 3  # ... over this many one-second windows in a row
QUIET_WAIT_MAX = 120.0


def ensure_kube_bin() -> str:
    """The real control plane's binaries: the last line `scripts/ensure-kube.sh` prints."""
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure-kube.sh")], capture_output=True, text=True, check=False
    )
    if built.returncode != 0:
        raise RuntimeError(f"scripts/ensure-kube.sh failed: {built.stderr.strip()[-500:]}")
    return built.stdout.strip().splitlines()[-1]


@dataclass
class BenchSandbox:
    control_plane: str
    workdir: Path
    run_id: str
    proc: subprocess.Popen[bytes]
    client: KubeClient | None = None
    proxy: DockerCountingProxy | None = None
    nodes: int = 1
    provider_pids: list[int] = field(default_factory=list)  # one per node, in no particular order
    _stopped: bool = field(default=False, repr=False)

    @property
    def node_names(self) -> list[str]:
        return [f"vk-bench-{self.run_id}-{i}" for i in range(1, self.nodes + 1)]

    @property
    def node(self) -> str:
        """The first node: the only one, unless the bench asked for more."""
        return self.node_names[0]

    @property
    def provider_pid(self) -> int:
        return self.provider_pids[0] if self.provider_pids else 0

    @property
    def state_dir(self) -> Path:
        return self.workdir / "state"

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def output(self) -> Path:
        return self.workdir / "sandbox.out"

    @property
    def api(self) -> KubeClient:
        assert self.client is not None, "the sandbox is not started"
        return self.client

    def log_tail(self, lines: int = 30) -> str:
        text = self.output.read_text(errors="replace") if self.output.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    async def stop(self) -> None:
        """Stop the sandbox (its providers, then `--clean`), remove what is left with the
        node's label and the node's cgroups, stop the proxy, remove the temporary directory.
        Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self.proc.wait, STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                await asyncio.to_thread(self.proc.wait)
        for node in self.node_names:
            left = await asyncio.to_thread(remove_labelled, f"{NODE_LABEL}={node}")
            if left:
                progress(f"removed {left} container(s) the sandbox's --clean left for node {node}")
            try:
                pods = await asyncio.to_thread(remove_node_cgroups, node)
            except OSError as exc:
                progress(f"could not remove the cgroups of node {node}: {exc}")
                continue
            if pods:
                progress(f"removed the cgroups of {pods} pod(s) the sandbox's --clean left for node {node}")
        if self.proxy is not None:
            await self.proxy.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _started(sandbox: BenchSandbox) -> bool:
    if sandbox.proc.poll() is not None:
        raise RuntimeError(f"the sandbox exited with {sandbox.proc.returncode}:\n{sandbox.log_tail()}")
    return "API server at" in sandbox.output.read_text(errors="replace") and sandbox.kubeconfig.exists()


async def _until(what: str, check: Callable[[], Awaitable[bool]], deadline: float) -> None:
    end = time.monotonic() + deadline
    while not await check():
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {deadline:.0f} s")
        await asyncio.sleep(0.2)


def _launch(args: list[str], output: Path) -> subprocess.Popen[bytes]:
    """`vk-provider sandbox ARGS`, its output (the providers' logs too) in the file `output`."""
    with output.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "vk_cli", "sandbox", *args],
            cwd=REPO,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def provider_pids(sandbox_pid: int) -> list[int]:
    """The sandbox's children `python -m vk_cli run ...` there are yet (one per node)."""
    found = []
    for pid in child_pids(sandbox_pid):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"vk_cli" in argv and b"run" in argv:
                found.append(pid)
    return found


async def start_sandbox(
    control_plane: str,
    kube_bin: str | None = None,
    *,
    count_docker: bool = False,
    nodes: int = 1,
    pods_per_node: int = 0,
) -> BenchSandbox:
    """A started sandbox, its `nodes` Ready (0: no provider at all), each with room for
    `pods_per_node` pods; with
    `count_docker`, its providers talk to Docker through a `DockerCountingProxy`
    (sandbox.proxy). Stop it with `stop()` in all cases."""
    run_id = uuid.uuid4().hex[:8]
    workdir = Path(tempfile.mkdtemp(prefix=f"vk-bench-{run_id}-"))
    proxy: DockerCountingProxy | None = None
    docker_section: dict[str, str] = {"sandboxImage": PAUSE_IMAGE}
    if count_docker:
        proxy = DockerCountingProxy(workdir / "docker.sock")
        await proxy.start()
        docker_section["host"] = proxy.url
    config = workdir / "provider.yaml"
    config.write_text(
        yaml.safe_dump(
            {"docker": docker_section, "node": {"capacity": {"pods": str(max(pods_per_node, MAX_PODS))}}}
        )
    )
    args = [
        *("--state-dir", str(workdir / "state"), "--port", str(free_port()), "--nodes", str(max(nodes, 1))),
        *("--config", str(config), "--node-prefix", f"vk-bench-{run_id}-", "--clean"),
        *("--control-plane", control_plane),
    ]
    if nodes == 0:
        args.append("--no-provider")  # the control plane alone (bench.apiserver)
    if control_plane == "real":
        bin_dir: str = kube_bin if kube_bin else await asyncio.to_thread(ensure_kube_bin)
        args += ["--kube-bin", bin_dir]
    else:
        args.append("--debug")  # the request counters
    progress(f"starting vk-provider sandbox ({control_plane}) in {workdir}")
    proc = await asyncio.to_thread(_launch, args, workdir / "sandbox.out")
    sandbox = BenchSandbox(control_plane, workdir, run_id, proc, proxy=proxy, nodes=nodes)
    try:
        await _start(sandbox)
        await wait_quiet()
    except BaseException:
        progress(f"the sandbox's output ends with:\n{sandbox.log_tail()}")
        await sandbox.stop()
        raise
    return sandbox


async def wait_quiet() -> None:
    """Wait (at most QUIET_WAIT_MAX) until the whole machine is quiet. The real control plane
    spends about 13 s of CPU in the first minute after its node is Ready (the controller
    manager's and the apiserver's start-up work); a burst measured meanwhile shares the two
    cores with it, while the raw floor, measured after the sandbox stopped, has them alone."""
    began = time.monotonic()
    quiet = 0
    while quiet < QUIET_WINDOWS:
        if time.monotonic() - began > QUIET_WAIT_MAX:
            progress(f"the machine did not quiet down in {QUIET_WAIT_MAX:g} s; measuring anyway")
            return
        before = machine_busy_seconds()
        await asyncio.sleep(1.0)
        quiet = quiet + 1 if machine_busy_seconds() - before < QUIET_CORES else 0
    progress(f"the machine is quiet after {time.monotonic() - began:.0f} s")


async def _start(sandbox: BenchSandbox) -> None:
    async def started() -> bool:
        return _started(sandbox)

    await _until("the sandbox's API server", started, START_DEADLINE[sandbox.control_plane])
    # qps 0: no client-side rate limit, the bench's creates all go at once.
    sandbox.client = await make_kube_client(
        KubernetesConfig(kubeconfig=str(sandbox.kubeconfig), qps=0.0, burst=1)
    )

    async def ready() -> bool:
        _started(sandbox)
        for name in sandbox.node_names:
            try:
                node = await sandbox.api.get(f"/api/v1/nodes/{name}")
            except ApiStatusError:
                return False
            conditions = (node.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                return False
        return True

    await _until(f"{sandbox.nodes} node(s) Ready", ready, 120.0)

    async def providers() -> bool:
        sandbox.provider_pids = provider_pids(sandbox.proc.pid)
        return len(sandbox.provider_pids) == sandbox.nodes

    await _until("the provider processes", providers, 30.0)

    async def providers_started() -> bool:  # their log lines, once every part (pod watch included) runs
        return sandbox.output.read_text(errors="replace").count("provider started") >= sandbox.nodes

    await _until("the providers' start", providers_started, 60.0)
    pids = " ".join(map(str, sandbox.provider_pids))
    progress(f"{', '.join(sandbox.node_names)} Ready; provider pid(s) {pids}")
