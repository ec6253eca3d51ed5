"""`ProbeMetrics`: the kubelet's prober series of one probe worker, served on `/metrics/probes`.

What lives here: the label values of one worker (probe type, container, pod, namespace, pod
UID) and `record(result, seconds)`: `prober_probe_total` by result (`successful`, `failed`,
`unknown`) and `prober_probe_duration_seconds` for the successful and unknown ones only, as
pkg/kubelet/prober/worker.go (doProbe); `forget()` drops the worker's series when it stops,
as the kubelet's worker does on exit. A probe that errored is not counted (the kubelet throws
that result away). Must not: probe, or decide a result.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from vk_common.objects import uid as uid_of
from vk_provider.metrics import ProviderMetrics
from vk_provider.probes.results import Result
from vk_provider.probes.spec import ProbeType

# pkg/kubelet/prober/prober_manager.go: probeResultSuccessful, probeResultFailed, probeResultUnknown
RESULT_LABELS = {Result.SUCCESS: "successful", Result.FAILURE: "failed", Result.UNKNOWN: "unknown"}


class ProbeMetrics:
    def __init__(
        self, metrics: ProviderMetrics, pod: Mapping[str, Any], container: str, probe_type: ProbeType
    ) -> None:
        self._metrics = metrics
        meta = pod.get("metadata") or {}
        pod_name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        self._duration_labels = (probe_type.value, container, pod_name, namespace)
        self._uid = uid_of(pod)

    def record(self, result: Result, seconds: float) -> None:
        label = RESULT_LABELS[result]
        self._metrics.probe_total.labels(*self._result_labels(label)).inc()
        if result != Result.FAILURE:
            self._metrics.probe_duration.labels(*self._duration_labels).observe(seconds)

    def _result_labels(self, result: str) -> tuple[str, ...]:
        probe_type, container, pod, namespace = self._duration_labels
        return probe_type, result, container, pod, namespace, self._uid

    def forget(self) -> None:
        for label in RESULT_LABELS.values():
            with contextlib.suppress(KeyError):
                self._metrics.probe_total.remove(*self._result_labels(label))
        with contextlib.suppress(KeyError):
            self._metrics.probe_duration.remove(*self._duration_labels)
