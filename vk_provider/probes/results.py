"""The result state machine of one probe worker (one pod UID, container and probe type).

What lives here: `Result` and `ProbeState`, pure: which result a probe shows for which
container instance, and when consecutive probe outcomes cross the success / failure
thresholds. Must not: run probes, sleep or emit Events.

Upstream: pkg/kubelet/prober/worker.go (doProbe) and pkg/kubelet/prober/results/.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from vk_provider.probes.spec import ProbeSpec, ProbeType


class Result(StrEnum):
    UNKNOWN = "Unknown"
    SUCCESS = "Success"
    FAILURE = "Failure"


# A new container is not ready until probed, alive until proven otherwise, and not started
# until its startup probe succeeds (worker.go newWorker: initialValue).
INITIAL = {
    ProbeType.READINESS: Result.FAILURE,
    ProbeType.LIVENESS: Result.SUCCESS,
    ProbeType.STARTUP: Result.UNKNOWN,
}


@dataclass
class ProbeState:
    probe_type: ProbeType
    spec: ProbeSpec
    container_id: str = ""  # the instance the result is about ("" = none yet)
    result: Result | None = None  # the published result; None = no result for any instance
    last: Result | None = None  # the last probe outcome
    run: int = 0  # how many times in a row `last` came out
    on_hold: bool = False  # liveness / startup failed: no probing until a new instance

    def new_container(self, container_id: str) -> Result | None:
        """A new instance runs: it starts from the initial value. The changed result, if any."""
        if container_id == self.container_id:
            return None
        self.container_id = container_id
        self.last, self.run, self.on_hold = None, 0, False
        return self._set(INITIAL[self.probe_type])

    def container_gone(self) -> None:
        """The container has no status any more: forget its result."""
        self.container_id, self.result, self.last, self.run = "", None, None, 0

    def container_stopped(self) -> Result | None:
        """The instance is not running: it counts as failed (worker.go: c.State.Running == nil)."""
        if not self.container_id:
            return None
        return self._set(Result.FAILURE)

    def observe(self, outcome: Result) -> Result | None:
        """One probe outcome; the published result when it changed.

        A result is published once the outcome came out successThreshold (success) or
        failureThreshold (failure) times in a row. A published liveness or startup failure
        puts the worker on hold until the container is replaced.
        """
        if outcome == self.last:
            self.run += 1
        else:
            self.last, self.run = outcome, 1
        if outcome == Result.FAILURE and self.run < self.spec.failure_threshold:
            return None
        if outcome == Result.SUCCESS and self.run < self.spec.success_threshold:
            return None
        changed = self._set(outcome)
        if outcome == Result.FAILURE and self.probe_type != ProbeType.READINESS:
            self.on_hold, self.run = True, 0
        return changed

    def _set(self, result: Result) -> Result | None:
        if result == self.result:
            return None
        self.result = result
        return result
