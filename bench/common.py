"""What the three benches share: the sandbox they run, their pods, and how they count and report.

What lives here:

- `BenchSandbox` / `start_sandbox`: a `vk-provider sandbox` subprocess with one node of a unique
  name (`vk-bench-<run>-1`), its own `--state-dir` under a temporary directory, a free port,
  `--clean`, the emulator (with `--debug`, for its request counters) or `--control-plane real`
  (binaries from `scripts/ensure-kube.sh`); its admin `KubeClient` (no client-side rate limit),
  the provider subprocess's pid, and `stop`, which stops the sandbox and removes every container
  left with the node's label.
- `DockerCountingProxy`: a Unix socket in front of the engine's socket that counts each HTTP
  request (client to engine) by method and path template; the provider is pointed at it with
  `docker.host` in the sandbox's `--config` file.
- Pods: `pod_manifest`, `create_pods`, `delete_pods`, `is_running`, and `PodWatch` (a watch on
  the run's pods that records when each became Running and when each was gone).
- Counting: `api_requests` (the emulator's `/debug/sandbox/counters`, or the real apiserver's
  `apiserver_request_total`, both as `"<verb> <resource>[/<subresource>]"`), `diff`,
  `cpu_seconds` and `rss_mb` of a process from /proc.
- Reporting: `percentile`, `markdown_table`, `result_line`, `progress`, and `run` (the
  modules' `main`: exit 0, or 1 with the error on stderr).

Must not: import from `tests/`; change how the provider behaves beyond the `--config` keys
the sandbox merges (the sandbox image, and the Docker host for the counting proxy); remove a
container that carries neither this run's node label nor its bench label.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import ApiConnectionError, ApiStatusError, KubeClient, make_kube_client
from vk_provider.sandbox.real.admin import AdminAPI

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "default"
NODE_LABEL = "io.vk-provider.node"  # the provider's label on every container of a node
BENCH_LABEL = "io.vk-provider.bench"  # the floor's raw containers: the run id
RUN_LABEL = "vk-bench/run"  # the bench pods' label in the API: the run id
BUSYBOX_IMAGE = "vk-test/busybox:1"
PAUSE_IMAGE = "vk-test/pause:1"
DOCKER_SOCKET = "/var/run/docker.sock"
TOLERATION = {
    "key": "virtual-kubelet.io/provider",
    "operator": "Equal",
    "value": "docker",
    "effect": "NoSchedule",
}
SLEEP = ["sleep", "3600"]
START_DEADLINE = {"emulator": 60.0, "real": 240.0}
STOP_DEADLINE = 120.0


def progress(message: str) -> None:
    """A progress line on stderr (stdout holds only the tables and the RESULT line)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ arguments and reporting


def common_arguments(parser: argparse.ArgumentParser, pods: int) -> None:
    parser.add_argument("--pods", type=int, default=pods, metavar="N", help=f"pods (default: {pods})")
    parser.add_argument(
        "--control-plane",
        choices=("emulator", "real"),
        default="emulator",
        help="the sandbox's control plane (default: emulator)",
    )
    parser.add_argument(
        "--kube-bin",
        metavar="DIR",
        help="with --control-plane real: the binaries (default: what scripts/ensure-kube.sh prints)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="how long to wait for the pods to be Running, or gone (default: 300)",
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between the closest ranks."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def result_line(values: Mapping[str, object]) -> str:
    """`RESULT key=value ...`: the one line a script reads (the last line of the output)."""
    return "RESULT " + " ".join(f"{key}={fmt(value)}" for key, value in values.items())


def ratio(provider: float, floor: float) -> float:
    return provider / floor if floor > 0 else float("inf")


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> int:
    """Run a bench's coroutine: 0 when it printed its RESULT line, 1 (the error on stderr) if not.
    SIGTERM, like Ctrl-C, cancels it, so its clean-up (the sandbox, the containers) still runs."""

    async def guarded() -> None:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await body()

    try:
        asyncio.run(guarded())
    except (KeyboardInterrupt, asyncio.CancelledError):
        progress("interrupted")
        return 1
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        progress(f"failed: {type(exc).__name__}: {exc}")
        return 1
    return 0


# ------------------------------------------------------------------ processes


def ensure_kube_bin() -> str:
    """The real control plane's binaries: the last line `scripts/ensure-kube.sh` prints."""
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure-kube.sh")], capture_output=True, text=True, check=False
    )
    if built.returncode != 0:
        raise RuntimeError(f"scripts/ensure-kube.sh failed: {built.stderr.strip()[-500:]}")
    return built.stdout.strip().splitlines()[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_pids(pid: int) -> list[int]:
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                pids += [int(child) for child in (task / "children").read_text().split()]
    return pids


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` (all its threads), in seconds, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # fields from the 3rd (state) on
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """VmRSS of `pid` in MB (MiB), from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for pid {pid}")


# ------------------------------------------------------------------ the counting Docker proxy

_REQUEST_LINE = re.compile(r"^([A-Z]+) (\S+) HTTP/1\.[01]$")
_KEEP = {"json", "create", "prune", "search", "load", "get", "events", "info", "version", "_ping"}
_BY_ID = {"containers", "exec", "networks", "volumes", "plugins", "secrets", "services", "tasks", "nodes"}
_IMAGE_ACTIONS = {"json", "history", "push", "tag", "get"}


def path_template(path: str) -> str:
    """A Docker API path with its API version, query, IDs and names taken out:
    `/v1.47/containers/3f2a.../start?x=1` is `/containers/{id}/start`."""
    path = re.sub(r"^/v\d+(\.\d+)?(?=/)", "", path.split("?", 1)[0])
    parts = path.split("/")
    if len(parts) > 2 and parts[1] in ("images", "distribution") and parts[2] not in _KEEP:
        tail = f"/{parts[-1]}" if len(parts) > 3 and parts[-1] in _IMAGE_ACTIONS else ""
        return f"/{parts[1]}/{{name}}{tail}"
    if len(parts) > 2 and parts[1] in _BY_ID and parts[2] not in _KEEP:
        parts[2] = "{id}"
    return "/".join(parts)


@dataclass
class _RequestScanner:
    """Finds the request heads in one connection's client-to-engine bytes. After a hijack
    (`Connection: Upgrade`: attach, exec) or a chunked body it stops looking: the rest is a stream."""

    count: Callable[[str], None]
    buffer: bytes = b""
    skip: int = 0
    done: bool = False

    def feed(self, data: bytes) -> None:
        if self.done:
            return
        self.buffer += data
        while True:
            if self.skip:
                taken = min(self.skip, len(self.buffer))
                self.buffer, self.skip = self.buffer[taken:], self.skip - taken
                if self.skip:
                    return
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > 1 << 20:
                    self.done = True
                return
            head, self.buffer = self.buffer[:end].decode("latin-1"), self.buffer[end + 4 :]
            lines = head.split("\r\n")
            match = _REQUEST_LINE.match(lines[0])
            if match is None:
                self.done = True
                return
            self.count(f"{match[1]} {path_template(match[2])}")
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in lines[1:])
            }
            if "upgrade" in headers.get("connection", "").lower() or "chunked" in headers.get(
                "transfer-encoding", ""
            ):
                self.done = True
                return
            self.skip = int(headers.get("content-length", "0") or 0)


class DockerCountingProxy:
    """A Unix socket that passes every byte to the engine's socket and counts the requests."""

    def __init__(self, path: Path, target: str = DOCKER_SOCKET) -> None:
        self.path = path
        self.target = target
        self.counts: Counter[str] = Counter()
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            self._writers.clear()
            await self._server.wait_closed()
            self._server = None

    def _count(self, key: str) -> None:
        self.counts[key] += 1

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.target)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))
        scanner = _RequestScanner(self._count)
        await asyncio.gather(self._pipe(reader, up_writer, scanner.feed), self._pipe(up_reader, writer, None))

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        observe: Callable[[bytes], None] | None,
    ) -> None:
        try:
            while data := await reader.read(65536):
                if observe is not None:
                    observe(data)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()


# ------------------------------------------------------------------ Docker clean-up


def remove_labelled(label: str) -> int:
    """Remove (force, with volumes) every container carrying `label` (`key=value`); how many (blocking)."""
    import docker

    client = docker.from_env()
    removed = 0
    try:
        for container in client.containers.list(all=True, filters={"label": label}, ignore_removed=True):
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                container.remove(force=True, v=True)
                removed += 1
    finally:
        client.close()
    return removed


# ------------------------------------------------------------------ the sandbox


@dataclass
class BenchSandbox:
    control_plane: str
    workdir: Path
    run_id: str
    proc: subprocess.Popen[bytes]
    client: KubeClient | None = None
    proxy: DockerCountingProxy | None = None
    provider_pid: int = 0
    _stopped: bool = field(default=False, repr=False)

    @property
    def node(self) -> str:
        return f"vk-bench-{self.run_id}-1"

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
        node's label, stop the proxy, remove the temporary directory. Safe to call twice."""
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
        left = await asyncio.to_thread(remove_labelled, f"{NODE_LABEL}={self.node}")
        if left:
            progress(f"removed {left} container(s) the sandbox's --clean left for node {self.node}")
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
            [sys.executable, "-m", "vk_provider", "sandbox", *args],
            cwd=REPO,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def provider_pid(sandbox_pid: int) -> int | None:
    """The sandbox's child `python -m vk_provider run ...`, if it is there yet."""
    for pid in child_pids(sandbox_pid):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"vk_provider" in argv and b"run" in argv:
                return pid
    return None


async def start_sandbox(
    control_plane: str, kube_bin: str | None = None, *, count_docker: bool = False
) -> BenchSandbox:
    """A started sandbox, its node Ready; with `count_docker`, its provider talks to Docker
    through a `DockerCountingProxy` (sandbox.proxy). Stop it with `stop()` in all cases."""
    run_id = uuid.uuid4().hex[:8]
    workdir = Path(tempfile.mkdtemp(prefix=f"vk-bench-{run_id}-"))
    proxy: DockerCountingProxy | None = None
    docker_section: dict[str, str] = {"sandboxImage": PAUSE_IMAGE}
    if count_docker:
        proxy = DockerCountingProxy(workdir / "docker.sock")
        await proxy.start()
        docker_section["host"] = proxy.url
    config = workdir / "provider.yaml"
    config.write_text(yaml.safe_dump({"docker": docker_section}))
    args = [
        *("--state-dir", str(workdir / "state"), "--port", str(free_port()), "--nodes", "1"),
        *("--config", str(config), "--node-prefix", f"vk-bench-{run_id}-", "--clean"),
        *("--control-plane", control_plane),
    ]
    if control_plane == "real":
        bin_dir: str = kube_bin if kube_bin else await asyncio.to_thread(ensure_kube_bin)
        args += ["--kube-bin", bin_dir]
    else:
        args.append("--debug")  # the request counters
    progress(f"starting vk-provider sandbox ({control_plane}) in {workdir}")
    proc = await asyncio.to_thread(_launch, args, workdir / "sandbox.out")
    sandbox = BenchSandbox(control_plane, workdir, run_id, proc, proxy=proxy)
    try:
        await _start(sandbox)
    except BaseException:
        progress(f"the sandbox's output ends with:\n{sandbox.log_tail()}")
        await sandbox.stop()
        raise
    return sandbox


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
        try:
            node = await sandbox.api.get(f"/api/v1/nodes/{sandbox.node}")
        except ApiStatusError:
            return False
        conditions = (node.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    await _until(f"node {sandbox.node} Ready", ready, 120.0)

    async def provider() -> bool:
        sandbox.provider_pid = provider_pid(sandbox.proc.pid) or 0
        return sandbox.provider_pid != 0

    await _until("the provider process", provider, 30.0)

    async def provider_started() -> bool:  # its log line, once every part (pod watch included) runs
        return "provider started" in sandbox.output.read_text(errors="replace")

    await _until("the provider's start", provider_started, 60.0)
    progress(f"node {sandbox.node} Ready; provider pid {sandbox.provider_pid}")


# ------------------------------------------------------------------ pods


def pod_manifest(name: str, sandbox: BenchSandbox, command: list[str] | None = None) -> dict[str, Any]:
    """A busybox pod (`sleep 3600` unless `command`) scheduled onto the sandbox's node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {RUN_LABEL: sandbox.run_id}},
        "spec": {
            "containers": [{"name": "app", "image": BUSYBOX_IMAGE, "command": command or SLEEP}],
            "automountServiceAccountToken": False,
            "nodeSelector": {"kubernetes.io/hostname": sandbox.node},
            "tolerations": [TOLERATION],
        },
    }


def pod_names(sandbox: BenchSandbox, count: int) -> list[str]:
    return [f"bench-{sandbox.run_id}-{i}" for i in range(count)]


async def create_pods(
    sandbox: BenchSandbox, names: Sequence[str], command: list[str] | None = None
) -> dict[str, float]:
    """Create the pods at once (one request each, concurrently); each pod's time.monotonic()
    just before its create request was sent."""
    sent: dict[str, float] = {}
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    async def one(name: str) -> None:
        body = pod_manifest(name, sandbox, command)
        sent[name] = time.monotonic()
        await sandbox.api.create(path, body)

    await asyncio.gather(*(one(name) for name in names))
    return sent


async def delete_pods(sandbox: BenchSandbox, names: Sequence[str]) -> float:
    """Delete the pods at once with the default grace period; time.monotonic() before the first."""
    start = time.monotonic()
    await asyncio.gather(
        *(sandbox.api.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}") for name in names)
    )
    return start


def is_running(pod: dict[str, Any]) -> bool:
    """Phase Running and every container of the spec reported with `state.running`."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    wanted = {c["name"] for c in (pod.get("spec") or {}).get("containers") or []}
    running = {
        s.get("name") for s in status.get("containerStatuses") or [] if (s.get("state") or {}).get("running")
    }
    return wanted <= running


class PodWatch:
    """A watch on the run's pods (by label): when each was first seen Running, and when each was
    gone (DELETED), in time.monotonic(); it resumes or relists when the stream ends."""

    def __init__(self, sandbox: BenchSandbox) -> None:
        self._api = sandbox.api
        self._selector = f"{RUN_LABEL}={sandbox.run_id}"
        self._path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        self.running_at: dict[str, float] = {}
        self.gone_at: dict[str, float] = {}
        self.present: set[str] = set()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        version = await self._list()
        self._task = asyncio.create_task(self._watch(version))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _seen(self, kind: str, pod: dict[str, Any]) -> None:
        now = time.monotonic()
        name = pod["metadata"]["name"]
        if kind == "DELETED":
            self.present.discard(name)
            self.gone_at.setdefault(name, now)
        else:
            self.present.add(name)
            if is_running(pod):
                self.running_at.setdefault(name, now)
        self._changed.set()

    async def _list(self) -> str:
        answer = await self._api.get(self._path, {"labelSelector": self._selector})
        listed = {pod["metadata"]["name"] for pod in answer.get("items") or []}
        for name in self.present - listed:
            self._seen("DELETED", {"metadata": {"name": name}})
        for pod in answer.get("items") or []:
            self._seen("ADDED", pod)
        return str(answer["metadata"]["resourceVersion"])

    async def _watch(self, version: str) -> None:
        while True:
            params = {
                "labelSelector": self._selector,
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "300",
            }
            try:
                async with contextlib.aclosing(self._api.watch(self._path, params)) as events:
                    async for event in events:
                        obj = event.get("object") or {}
                        if event["type"] == "ERROR":
                            version = await self._list()
                            break
                        version = obj["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            self._seen(event["type"], obj)
            except (ApiConnectionError, ApiStatusError):
                await asyncio.sleep(0.5)
                version = await self._list()

    async def wait(self, what: str, done: Callable[[], bool], deadline: float) -> None:
        end = time.monotonic() + deadline
        while not done():
            self._changed.clear()
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{what}: not within {deadline:.0f} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_running(self, names: Iterable[str], deadline: float) -> None:
        wanted = set(names)
        await self.wait(f"{len(wanted)} pods Running", lambda: wanted <= self.running_at.keys(), deadline)

    async def wait_gone(self, names: Iterable[str], deadline: float) -> None:
        wanted = set(names)
        await self.wait(f"{len(wanted)} pods gone", lambda: wanted <= self.gone_at.keys(), deadline)


# ------------------------------------------------------------------ API request counts

_REQUESTS = re.compile(r"^apiserver_request_total\{([^}]*)\}\s+(\S+)$", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')
_REAL_VERBS = {"POST": "create", "PUT": "update"}


def _admin_api(kubeconfig: Path) -> AdminAPI:
    """An AdminAPI with the client certificate of a kubeconfig (the real control plane's admin)."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    return AdminAPI(
        cluster["server"],
        Path(cluster["certificate-authority"]),
        Path(user["client-certificate"]),
        Path(user["client-key"]),
    )


def real_request_counts(metrics: str) -> Counter[str]:
    """`apiserver_request_total` of a kube-apiserver's /metrics, summed over codes and scopes,
    keyed as the emulator's counters: `"<verb> <resource>[.<group>][/<subresource>]"`."""
    counts: Counter[str] = Counter()
    for labels_text, value in _REQUESTS.findall(metrics):
        labels = dict(_LABEL.findall(labels_text))
        if not labels.get("resource"):
            continue
        verb = _REAL_VERBS.get(labels.get("verb", ""), labels.get("verb", "").lower())
        resource = labels["resource"] + (f".{labels['group']}" if labels.get("group") else "")
        if labels.get("subresource"):
            resource += f"/{labels['subresource']}"
        counts[f"{verb} {resource}"] += int(float(value))
    return counts


async def api_requests(sandbox: BenchSandbox) -> Counter[str]:
    """Every API request the control plane has answered so far, from any client, by
    `"<verb> <resource>[/<subresource>]"`: the emulator's debug counters, or the real
    kube-apiserver's `apiserver_request_total` (a watch counts there when it ends)."""
    if sandbox.control_plane == "emulator":
        counters = await sandbox.api.get("/debug/sandbox/counters")
        return Counter({str(k): int(v) for k, v in (counters.get("requests") or {}).items()})
    admin = _admin_api(sandbox.kubeconfig)
    try:
        code, text = await admin.request("GET", "/metrics")
    finally:
        await admin.close()
    if code != 200:
        raise RuntimeError(f"GET /metrics answered {code}: {text[:200]}")
    return real_request_counts(text)


def diff(after: Mapping[str, int], before: Mapping[str, int]) -> Counter[str]:
    """after - before, keys with a positive difference only."""
    return Counter({key: after[key] - before.get(key, 0) for key in after if after[key] > before.get(key, 0)})


def split_key(key: str) -> tuple[str, str]:
    """`"patch pods/status"` is `("pods/status", "patch")`."""
    verb, _, resource = key.partition(" ")
    return resource, verb


WRITE_VERBS = ("create", "update", "patch", "delete")
POD_RESOURCES = ("pods", "pods/status")


def pod_writes(counts: Mapping[str, int]) -> int:
    """Writes (create, update, patch, delete) of pods and pods/status."""
    return sum(
        n
        for key, n in counts.items()
        if split_key(key)[1] in WRITE_VERBS and split_key(key)[0] in POD_RESOURCES
    )


def status_writes(counts: Mapping[str, int]) -> int:
    return counts.get("patch pods/status", 0) + counts.get("update pods/status", 0)


def request_rows(counts: Mapping[str, int], seconds: float | None = None) -> list[list[object]]:
    """Table rows (resource, verb, count[, per s]) sorted by resource then verb."""
    rows: list[list[object]] = []
    for key in sorted(counts, key=split_key):
        resource, verb = split_key(key)
        row: list[object] = [resource, verb, counts[key]]
        if seconds is not None:
            row.append(counts[key] / seconds)
        rows.append(row)
    return rows
