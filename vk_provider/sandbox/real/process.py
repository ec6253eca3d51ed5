"""One control-plane component running as a child process, its output in a log file.

What lives here: `ComponentProcess` (start, is it alive, the end of its log, stop with
SIGTERM then SIGKILL). Each component gets a process of its own: their process-wide flag
and metric registries must never meet. Must not: know what the component is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from vk_provider.logging import get_logger

log = get_logger("sandbox.real")

STOP_SECONDS = 20.0


class ComponentProcess:
    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as sink:  # the child keeps its own descriptor
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=sink,
                stderr=asyncio.subprocess.STDOUT,
                env={**os.environ, "GOMAXPROCS": os.environ.get("GOMAXPROCS", "2")},
            )
        log.info("started %s (pid %d, log %s)", self.name, self.proc.pid, self.log_path)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), STOP_SECONDS)
        except TimeoutError:
            log.warning("%s did not stop in %.0f s; killing it", self.name, STOP_SECONDS)
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
