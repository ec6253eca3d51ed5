"""ProbeManager: the probe workers of every pod, and their current results.

What lives here: `ProbeManager`. `add_pod` starts one `ProbeWorker` task per container and
probe (app containers and sidecars), `stop_liveness_and_startup` / `remove_pod` / `stop`
end them. Readiness and startup results go to the status manager's
`set_container_readiness` / `set_container_startup` as they change; every change also
calls `on_change(uid)` so the pod worker syncs (it kills a container whose liveness or
startup probe failed, found with `failed_probe`, and regenerates statuses with
`pod_results`). Must not: start or stop containers itself.

Upstream: pkg/kubelet/prober/prober_manager.go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from vk_common.logging import get_logger, pod_fields, pod_ref
from vk_common.objects import is_sidecar
from vk_common.objects import spec as pod_spec
from vk_common.objects import uid as uid_of
from vk_common.tasks import cancel_and_wait
from vk_provider.metrics import ProviderMetrics
from vk_provider.probes.results import Result
from vk_provider.probes.spec import ProbeType, container_probes
from vk_provider.probes.worker import EventSink, ProbeWorker, StatusSource
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerRunState, PodRuntimeState

log = get_logger("probes")

_Key = tuple[str, str, ProbeType]  # pod uid, container name, probe type


class ProbeStatusSink(StatusSource, Protocol):
    def set_container_readiness(self, uid: str, container_name: str, ready: bool) -> None: ...
    def set_container_startup(self, uid: str, container_name: str, started: bool) -> None: ...


@dataclass(frozen=True)
class ProbeFailure:
    """A running container's liveness or startup probe failed: it is to be killed."""

    probe_type: ProbeType
    termination_grace: int | None  # the probe's terminationGracePeriodSeconds, if set


def _probed_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod_spec(pod)
    sidecars = [c for c in spec.get("initContainers") or [] if is_sidecar(c)]
    return [*sidecars, *(spec.get("containers") or [])]


class ProbeManager:
    def __init__(
        self,
        runtime: Runtime,
        status: ProbeStatusSink,
        recorder: EventSink,
        on_change: Callable[[str], None],
        metrics: ProviderMetrics | None = None,
    ) -> None:
        self._runtime = runtime
        self._metrics = metrics  # the prober series of /metrics/probes
        self._status = status
        self._recorder = recorder
        self._on_change = on_change
        self._workers: dict[_Key, ProbeWorker] = {}
        self._tasks: dict[_Key, asyncio.Task[None]] = {}

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        """Start the workers of the pod's probes that are not running yet (idempotent)."""
        uid = uid_of(pod)
        for container in _probed_containers(pod):
            for probe_type, spec in container_probes(container).items():
                key = (uid, str(container["name"]), probe_type)
                if key in self._workers:
                    continue
                worker = ProbeWorker(
                    pod,
                    container,
                    probe_type,
                    spec,
                    runtime=self._runtime,
                    status=self._status,
                    recorder=self._recorder,
                    on_result=self._result,
                    metrics=self._metrics,
                )
                self._workers[key] = worker
                self._tasks[key] = asyncio.create_task(
                    self._run(key, worker), name=f"{probe_type.value.lower()} probe {pod_ref(pod)} {key[1]}"
                )

    async def _run(self, key: _Key, worker: ProbeWorker) -> None:
        try:
            await worker.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(
                "probe worker failed",
                extra=pod_fields(worker.pod, probeType=str(worker.probe_type.value), container=key[1]),
            )
        if self._workers.get(key) is worker:  # done for good: forget it (prober_manager removeWorker)
            del self._workers[key]
            self._tasks.pop(key, None)

    def _result(self, worker: ProbeWorker, result: Result | None) -> None:
        """A worker's published result changed (None: it has no result for any instance)."""
        if result is not None:
            log.info(
                "probe result changed",
                extra=pod_fields(
                    worker.pod, probeType=worker.probe_type.value, container=worker.name, result=result.value
                ),
            )
        if result is not None and worker.probe_type == ProbeType.READINESS:
            self._status.set_container_readiness(worker.uid, worker.name, result == Result.SUCCESS)
        elif result is not None and worker.probe_type == ProbeType.STARTUP:
            self._status.set_container_startup(worker.uid, worker.name, result == Result.SUCCESS)
        self._on_change(worker.uid)

    async def _cancel(self, keys: list[_Key]) -> None:
        tasks = [task for key in keys if (task := self._tasks.pop(key, None)) is not None]
        for key in keys:
            self._workers.pop(key, None)
        await cancel_and_wait(*tasks)

    async def stop_liveness_and_startup(self, uid: str) -> None:
        """The pod is terminating: no more liveness or startup probes (readiness goes on)."""
        await self._cancel([k for k in self._workers if k[0] == uid and k[2] != ProbeType.READINESS])

    async def remove_pod(self, uid: str) -> None:
        await self._cancel([k for k in self._workers if k[0] == uid])

    async def stop(self) -> None:
        await self._cancel(list(self._workers))

    def pod_results(
        self, pod: Mapping[str, Any], state: PodRuntimeState | None
    ) -> tuple[dict[str, bool], dict[str, bool]]:
        """(readiness, started) by container name, for `generate_pod_status`.

        Only results about the container's latest instance are listed; a container whose
        probe has no result for it yet is left out (its probe's default: not ready, not
        started), and its worker is triggered to probe at once, as is the readiness worker of a
        running container that is not ready (prober_manager.go UpdatePodStatus).
        """
        uid = uid_of(pod)
        readiness: dict[str, bool] = {}
        started: dict[str, bool] = {}
        for (worker_uid, name, probe_type), worker in self._workers.items():
            if worker_uid != uid or probe_type == ProbeType.LIVENESS:
                continue
            instance = state.latest(name) if state is not None else None
            if instance is None:
                continue
            current = worker.state.container_id == instance.container_id
            has_result = current and worker.state.result is not None
            if has_result:
                target = readiness if probe_type == ProbeType.READINESS else started
                target[name] = worker.state.result == Result.SUCCESS
            running = instance.state == ContainerRunState.RUNNING
            # prober_manager.go UpdatePodStatus: a running container not known ready has its
            # readiness probed at once (as soon as a startup probe has passed, not a period later)
            not_ready = probe_type == ProbeType.READINESS and worker.state.result != Result.SUCCESS
            if running and (not has_result or not_ready):
                worker.trigger()
        return readiness, started

    def started(self, uid: str, name: str, container_id: str) -> bool:
        """Whether this container instance has started: it has no startup probe, or it passed."""
        worker = self._workers.get((uid, name, ProbeType.STARTUP))
        if worker is None:
            return True
        return worker.state.container_id == container_id and worker.state.result == Result.SUCCESS

    def failed_probe(self, uid: str, name: str, container_id: str) -> ProbeFailure | None:
        """The liveness (or startup) failure of this container instance, if it has one."""
        for probe_type in (ProbeType.LIVENESS, ProbeType.STARTUP):
            worker = self._workers.get((uid, name, probe_type))
            if (
                worker is not None
                and worker.state.container_id == container_id
                and worker.state.result == Result.FAILURE
            ):
                return ProbeFailure(probe_type, worker.state.spec.termination_grace)
        return None
