"""One probe worker: an asyncio task probing one container of one pod with one probe.

What lives here: `ProbeWorker`, whose loop reads the container's current status from the
status cache (as the kubelet's worker reads the status manager), follows container
instances, probes every periodSeconds (or at once when triggered), counts each probe's
result for `/metrics/probes` (probes/metrics.py), and reports changed results to its owner.
Must not: start or stop containers, or write statuses itself.

Upstream: pkg/kubelet/prober/worker.go (run, doProbe).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import container_should_restart, parse_time
from vk_common.objects import uid as uid_of
from vk_provider.metrics import ProviderMetrics
from vk_provider.probes import messages
from vk_provider.probes.handlers import ProbeError, run_probe
from vk_provider.probes.metrics import ProbeMetrics
from vk_provider.probes.results import ProbeState, Result
from vk_provider.probes.spec import ProbeSpec, ProbeType
from vk_provider.runtime.protocol import Runtime

log = get_logger("probes")

TERMINAL_PHASES = ("Succeeded", "Failed")


class StatusSource(Protocol):
    def get_pod_status(self, uid: str) -> dict[str, Any] | None: ...


class EventSink(Protocol):
    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, field_path: str = ""
    ) -> None: ...


def _container_status(status: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for item in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
        if item.get("name") == name:
            return dict(item)
    return None


def _will_run_again(pod: Mapping[str, Any], container: Mapping[str, Any], cstatus: Mapping[str, Any]) -> bool:
    """Whether a container that is not running will run again: yes unless it terminated and its
    restart policy says no (worker.go doProbe, with ContainerRestartRules)."""
    terminated = (cstatus.get("state") or {}).get("terminated")
    return terminated is None or container_should_restart(
        pod, container, int(terminated.get("exitCode") or 0)
    )


class ProbeWorker:
    def __init__(
        self,
        pod: Mapping[str, Any],
        container: Mapping[str, Any],
        probe_type: ProbeType,
        spec: ProbeSpec,
        *,
        runtime: Runtime,
        status: StatusSource,
        recorder: EventSink,
        on_result: Callable[[ProbeWorker, Result | None], None],
        metrics: ProviderMetrics | None = None,
    ) -> None:
        self.pod = pod
        self.uid = uid_of(pod)
        self.container = container
        self.name = str(container["name"])
        self.probe_type = probe_type
        self.state = ProbeState(probe_type, spec)
        self._runtime = runtime
        self._status = status
        self._recorder = recorder
        self._on_result = on_result
        self._metrics = ProbeMetrics(metrics, pod, self.name, probe_type) if metrics is not None else None
        self._trigger = asyncio.Event()
        self._field_path = (
            f"spec.containers{{{self.name}}}"
            if any(c.get("name") == self.name for c in (pod.get("spec") or {}).get("containers") or [])
            else f"spec.initContainers{{{self.name}}}"
        )

    def trigger(self) -> None:
        """Probe now instead of at the next period (a new container instance was published)."""
        self._trigger.set()

    async def run(self) -> None:
        """Probe until the pod or the container is done for good (or the task is cancelled)."""
        try:
            while await self._do_probe():
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
                # arrives as the trigger fires, and the worker would never stop.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.state.spec.period):
                        await self._trigger.wait()
                self._trigger.clear()
        finally:
            if self._metrics is not None:
                self._metrics.forget()

    def _warn(self, reason: str, message: str) -> None:
        """A Warning Event on the pod for this container (Unhealthy, ProbeWarning)."""
        self._recorder.event(self.pod, "Warning", reason, message, field_path=self._field_path)

    def _publish(self, result: Result | None) -> None:
        if result is not None:
            self._on_result(self, result)

    async def _do_probe(self) -> bool:
        """One turn; False when this worker has nothing left to probe."""
        status = self._status.get_pod_status(self.uid)
        if status is None:
            return True  # nothing published yet
        if status.get("phase") in TERMINAL_PHASES:
            return False
        cstatus = _container_status(status, self.name)
        container_id = str((cstatus or {}).get("containerID") or "").split("://", 1)[-1]
        if cstatus is None or not container_id:
            if self.state.container_id:
                self.state.container_gone()
                self._on_result(self, None)
            return True
        self._publish(self.state.new_container(container_id))
        if self.state.on_hold:
            return True  # liveness / startup failed: wait for the replacement
        running = (cstatus.get("state") or {}).get("running")
        if running is None:
            self._publish(self.state.container_stopped())
            return _will_run_again(self.pod, self.container, cstatus)
        started_at = parse_time(running.get("startedAt"))
        if started_at is not None and time.time() - started_at.timestamp() < self.state.spec.initial_delay:
            return True
        if bool(cstatus.get("started")) == (self.probe_type == ProbeType.STARTUP):
            # A started container needs no startup probe; the others wait for it to start.
            return True
        began = time.monotonic()
        try:
            outcome = await run_probe(
                self._runtime, self.container, container_id, self.state.spec, str(status.get("podIP") or "")
            )
        except ProbeError as exc:
            log.debug(
                "probe errored",
                extra=pod_fields(
                    self.pod, probeType=self.probe_type.value, container=self.name, err=str(exc)
                ),
            )
            self._warn(messages.UNHEALTHY, messages.errored(self.probe_type, str(exc)))
            return True
        if self._metrics is not None:
            self._metrics.record(outcome.result, time.monotonic() - began)
        if outcome.result == Result.FAILURE:
            log.debug(
                "probe failed",
                extra=pod_fields(
                    self.pod,
                    probeType=self.probe_type.value,
                    container=self.name,
                    output=outcome.output.strip(),
                ),
            )
            self._warn(messages.UNHEALTHY, messages.failed(self.probe_type, outcome.output))
        elif outcome.warning:
            self._warn(messages.PROBE_WARNING, messages.warning(self.probe_type, outcome.output))
        self._publish(self.state.observe(outcome.result))
        return True
