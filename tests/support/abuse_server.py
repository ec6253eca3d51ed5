"""A kubelet API or sandbox API server in a process of its own, for tests that measure its memory.

`python -m tests.support.abuse_server kubelet|sandbox [header_timeout]` starts the server on
127.0.0.1 (the kubelet API with `auth: none` over `SinkRuntime`, one running pod `default/web`
whose exec session and forwarded ports swallow what they are sent; the sandbox without
controllers and without a token), prints its port on stdout and serves until stdin closes.
`header_timeout` replaces vk_common/guarded_listener.py's HEADER_TIMEOUT (32 s) to keep tests short.
`ServerProcess` runs it and reads its resident memory. Must not: assert anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from vk_common import guarded_listener as listener
from vk_provider.config import KubeletServerConfig
from vk_provider.kubeletapi import KubeletServer
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)
from vk_sandbox.server import SandboxServer


class SinkSession:
    """An exec session that reads and drops its stdin and ends when it is closed."""

    def __init__(self) -> None:
        self.stdin_bytes = 0
        self._closed = asyncio.Event()

    async def output(self) -> AsyncIterator[tuple[int, bytes]]:
        await self._closed.wait()
        return
        yield

    async def write_stdin(self, data: bytes) -> None:
        self.stdin_bytes += len(data)

    def close_stdin(self) -> None:
        pass

    async def resize(self, width: int, height: int) -> None:
        pass

    async def exit_code(self) -> int | None:
        return 0

    async def close(self) -> None:
        self._closed.set()


class SinkRuntime:
    """One running pod `default/web`, container `app`, at 127.0.0.1 (its ports: whatever listens there)."""

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        app = ContainerInstance(
            "app", ContainerRole.APP, 0, "c1", "img", "sha256:x", ContainerRunState.RUNNING
        )
        return {"u1": PodRuntimeState("u1", "default", "web", PodSandboxState("sb", True, ""), (app,))}

    def pod_address(self, pod: PodRuntimeState) -> str:
        return "127.0.0.1"

    async def open_exec(
        self, container_id: str, command: list[str], *, stdin: bool, stdout: bool, stderr: bool, tty: bool
    ) -> SinkSession:
        return SinkSession()


async def _serve(kind: str) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), lambda: stop.set() if not os.read(sys.stdin.fileno(), 1) else None)
    with tempfile.TemporaryDirectory() as scratch:
        server: KubeletServer | SandboxServer
        if kind == "kubelet":
            config = KubeletServerConfig(listen="127.0.0.1:0", auth="none")
            server = KubeletServer(config, "node-a", SinkRuntime(), "127.0.0.1")  # type: ignore[arg-type]
        else:
            server = SandboxServer(state_dir=Path(scratch), controllers=False, require_token=False)
        await server.start()
        print(server.port, flush=True)
        try:
            await stop.wait()
        finally:
            await server.stop()


class ServerProcess:
    def __init__(self, process: subprocess.Popen[bytes], port: int) -> None:
        self.process, self.port = process, port

    def rss(self) -> int:
        """Resident memory in bytes (VmRSS of /proc/<pid>/status)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")


@contextlib.contextmanager
def server_process(kind: str, header_timeout: float | None = None) -> Iterator[ServerProcess]:
    argv = [sys.executable, "-m", "tests.support.abuse_server", kind]
    if header_timeout is not None:
        argv.append(str(header_timeout))
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        yield ServerProcess(process, int(process.stdout.readline()))
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


if __name__ == "__main__":
    if len(sys.argv) > 2:
        listener.HEADER_TIMEOUT = float(sys.argv[2])
    asyncio.run(_serve(sys.argv[1]))
