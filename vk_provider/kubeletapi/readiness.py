"""`Readiness`: whether the provider can do its job now, for `GET /readyz` on the health port.

What lives here: three checks, each answering None (passes) or why it fails: `engine` (the
container runtime answers a ping within ENGINE_TIMEOUT), `apiserver` (an apiserver answered
one of the provider's requests in the last FRESH_SECONDS, counted from client-go's
`rest_client_requests_total` the kube client keeps; when none did, a `GET /version` is sent
now, so a quiet provider is not reported unready) and `node` (the Node object is registered:
the node agent holds it, and drops it when the Node is deleted). `report` renders them as the
apiserver's and kubelet's `/readyz?verbose` (`[+]name ok` / `[-]name failed: reason withheld`,
k8s.io/apiserver/pkg/server/healthz/healthz.go); the reasons go to the log, once per change,
not to the unauthenticated caller. Must not: serve HTTP (healthz.py), or change what it checks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field

from vk_common.logging import get_logger
from vk_provider.metrics import ProviderMetrics
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import RuntimeFailure

log = get_logger("kubeletapi.readiness")

ENGINE_TIMEOUT = 5.0  # a ping that takes longer: the engine is not answering
FRESH_SECONDS = 30.0  # an apiserver answer older than this is checked again
APISERVER_TIMEOUT = 5.0


@dataclass(frozen=True)
class Check:
    name: str
    failure: str | None  # None: the check passes


@dataclass(eq=False)
class Readiness:
    runtime: Runtime
    metrics: ProviderMetrics
    node_registered: Callable[[], bool]
    ask_apiserver: Callable[[], Awaitable[object]]
    _: KW_ONLY
    clock: Callable[[], float] = time.monotonic
    # The answered-request count last seen, and when it last grew.
    _answers: float = field(default=0.0, init=False)
    _answered_at: float = field(default=float("-inf"), init=False)
    _last_failures: dict[str, str] = field(default_factory=dict, init=False)

    async def _engine(self) -> str | None:
        try:
            await asyncio.wait_for(self.runtime.ping(), ENGINE_TIMEOUT)
        except RuntimeFailure as exc:
            return exc.message
        except TimeoutError:
            return f"the container runtime did not answer a ping within {ENGINE_TIMEOUT:.0f}s"
        return None

    def _answered_recently(self) -> bool:
        answers = self.metrics.apiserver_answers()
        if answers != self._answers:
            self._answers, self._answered_at = answers, self.clock()
        return self.clock() - self._answered_at < FRESH_SECONDS

    async def _apiserver(self) -> str | None:
        if self._answered_recently():
            return None
        try:
            await asyncio.wait_for(self.ask_apiserver(), APISERVER_TIMEOUT)
        except Exception as exc:  # an error status is an answer too, but not a healthy one
            return f"no answer from the apiserver in {FRESH_SECONDS:.0f}s: {type(exc).__name__}: {exc}"
        self._answered_recently()
        return None

    def _node(self) -> str | None:
        return None if self.node_registered() else "the Node is not registered"

    async def checks(self) -> list[Check]:
        engine, apiserver = await asyncio.gather(self._engine(), self._apiserver())
        checks = [Check("engine", engine), Check("apiserver", apiserver), Check("node", self._node())]
        self._log_changes(checks)
        return checks

    def _log_changes(self, checks: list[Check]) -> None:
        for check in checks:
            was = self._last_failures.get(check.name)
            if check.failure is not None and was is None:
                log.warning("readyz check failed", extra={"check": check.name, "err": check.failure})
            elif check.failure is None and was is not None:
                log.info("readyz check passes again", extra={"check": check.name})
        self._last_failures = {c.name: c.failure for c in checks if c.failure is not None}


def report(checks: list[Check], verbose: bool) -> tuple[int, str]:
    """(HTTP status, body) as healthz.go: 200 `ok` when every check passes (the list with
    `verbose`), else 500 with the list."""
    ok = all(c.failure is None for c in checks)
    if ok and not verbose:
        return 200, "ok"
    lines = [
        f"[+]{c.name} ok" if c.failure is None else f"[-]{c.name} failed: reason withheld" for c in checks
    ]
    lines.append("readyz check passed" if ok else "readyz check failed")
    return (200 if ok else 500), "\n".join(lines) + "\n"
