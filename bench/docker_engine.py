"""The benches' own dealings with the Docker engine: `DockerCountingProxy` and `remove_labelled`.

- `DockerCountingProxy`: a Unix socket in front of the engine's socket that counts each HTTP
  request (client to engine) by method and path template (`path_template`; the heads are found
  by `_RequestScanner`); the provider is pointed at it with `docker.host` in the sandbox's
  `--config` file.
- `remove_labelled`: the clean-up, every container carrying a label removed; the labels it goes
  by are `NODE_LABEL` (the provider's, on every container of a node) and `BENCH_LABEL` (the
  start-up floor's raw containers).
- `remove_node_cgroups`: the pod cgroups of a node, and the node's own, that outlived its
  containers (a sandbox whose `--clean` ran out of time at 500 pods), removed the way the
  provider removes them (`vk_provider/runtime/pod_cgroups.PodCgroups`).

Must not: import from `tests/`; change the bytes it passes on (it only reads the client's
direction); remove a container that carries neither this run's node label nor its bench label,
or a cgroup outside the run's node's root.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vk_provider.config import DockerConfig
from vk_provider.runtime.pod_cgroups import CGROUP_MOUNT, CgroupDriver, PodCgroups

DOCKER_SOCKET = "/var/run/docker.sock"
NODE_LABEL = "io.vk-provider.node"  # the provider's label on every container of a node
BENCH_LABEL = "io.vk-provider.bench"  # the floor's raw containers: the run id


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
        # A connection still open when the bench ends (the engine's event stream) is cancelled by
        # asyncio.run's clean-up: it ends here, not as a traceback from the server's callback.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(
                self._pipe(reader, up_writer, scanner.feed), self._pipe(up_reader, writer, None)
            )

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


def remove_node_cgroups(node: str, driver: str = "", version: int = 0, mount: Path = CGROUP_MOUNT) -> int:
    """Remove the node's pod cgroups, then its own, under the provider's default root
    (`docker.cgroupRoot`); how many pods had one. `driver` and `version`: the engine's cgroup
    driver and version, asked of the engine when not given (blocking; call it once the node's
    containers are gone)."""
    if not driver or not version:
        import docker

        client = docker.from_env()
        try:
            info = client.info()
        finally:
            client.close()
        driver = driver or str(info.get("CgroupDriver") or "cgroupfs")
        version = version or int(info.get("CgroupVersion") or 1)
    cgroups = PodCgroups(
        root=f"{DockerConfig().cgroup_root.rstrip('/')}/{node}",
        driver=CgroupDriver(driver),
        version=version,
        mount=mount,
    )
    uids = cgroups.pod_uids()
    for uid in uids:
        cgroups.remove(uid)
    cgroups.remove_root()
    return len(uids)
