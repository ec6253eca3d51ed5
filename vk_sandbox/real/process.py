"""One control-plane component running as a child process, its output in a log file.

What lives here: `ComponentProcess` (start, is it alive, the end of its log, `supervise`:
restart it whenever it exits, stop with SIGTERM then SIGKILL) and `RestartBackoff`, when to
restart a component that exited: the kubelet's back-off for a static pod's container (pure).
Each component gets a process of its own: their process-wide flag and metric registries must
never meet. Must not: know what the component is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from vk_common.logging import get_logger

log = get_logger("sandbox.real")

STOP_SECONDS = 20.0
# The kubelet's container restart back-off (pkg/kubelet/kubelet.go backOffPeriod and
# MaxContainerBackOff), forgotten after twice the cap without an exit (client-go
# util/flowcontrol.Backoff hasExpired).
RESTART_BACKOFF_SECONDS = 10.0
RESTART_BACKOFF_MAX_SECONDS = 300.0


class RestartBackoff:
    """How long to wait before restarting a component that exited at `now`: at once the first
    time, then 10 s, doubling up to 5 min, as the kubelet restarts a crashed container
    (pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff); an exit more than 10 min after
    the previous one starts over."""

    def __init__(
        self, initial: float = RESTART_BACKOFF_SECONDS, cap: float = RESTART_BACKOFF_MAX_SECONDS
    ) -> None:
        self._initial = initial
        self._cap = cap
        self._next = 0.0
        self._last_exit: float | None = None

    def delay(self, now: float) -> float:
        if self._last_exit is None or now - self._last_exit > 2 * self._cap:
            self._next = 0.0
        delay = self._next
        self._next = min(self._cap, max(self._initial, 2 * delay))
        self._last_exit = now
        return delay


class ComponentProcess:
    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None
        self.restarts = 0

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
        log.info(
            "started component",
            extra={"component": self.name, "pid": self.proc.pid, "log": str(self.log_path)},
        )

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def supervise(self, backoff: RestartBackoff | None = None) -> None:
        """Start the component again whenever it exits, after `backoff`'s delay; runs until
        cancelled (cancel it before `stop`, or the stopped component comes back)."""
        backoff = backoff or RestartBackoff()
        loop = asyncio.get_running_loop()
        while True:
            assert self.proc is not None, "supervise a started component"
            code = await self.proc.wait()
            delay = backoff.delay(loop.time())
            log.warning(
                "component exited; restarting it",
                extra={"component": self.name, "exitCode": code, "delaySeconds": round(delay)},
            )
            await asyncio.sleep(delay)
            await self.start()
            self.restarts += 1

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), STOP_SECONDS)
        except TimeoutError:
            log.warning(
                "component did not stop in time; killing it",
                extra={"component": self.name, "waitedSeconds": STOP_SECONDS},
            )
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
