"""Readiness checks (/readyz), the shared stats pass and its cache, the cAdvisor text of
/metrics/cadvisor and the prober series of /metrics/probes, without an engine: a small runtime
stand-in answers `ping`, `list_pods` and `container_stats`, the clock is the test's."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from tests.support.clocks import ManualClock
from tests.support.metrics import families
from vk_provider.kubeletapi.cadvisor import cadvisor_metrics
from vk_provider.kubeletapi.readiness import FRESH_SECONDS, Check, Readiness, report
from vk_provider.kubeletapi.stats import StatsCollector
from vk_provider.metrics import ProviderMetrics
from vk_provider.probes.metrics import ProbeMetrics
from vk_provider.probes.results import Result
from vk_provider.probes.spec import ProbeType
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    ContainerStats,
    LinuxResources,
    PodRuntimeState,
    PodSandboxState,
    RuntimeUnavailable,
)

STARTED = datetime(2026, 12, 5, 7, 0, 0, tzinfo=UTC)


class Engine:
    """The runtime calls readiness and stats make; `down` makes ping fail, `passes` counts."""

    def __init__(self) -> None:
        self.down = False
        self.stats_calls = 0
        app = ContainerInstance(
            "app",
            ContainerRole.APP,
            0,
            "c1",
            "busybox:1.36",
            "sha256:1",
            ContainerRunState.RUNNING,
            created_at=STARTED,
            started_at=STARTED,
            resources=LinuxResources(cpu_shares=102, cpu_quota=50000, cpu_period=100000, memory_limit=2**27),
        )
        exited = ContainerInstance("old", ContainerRole.APP, 0, "c0", "x", "", ContainerRunState.EXITED)
        sandbox = PodSandboxState("s1", running=True, created_at=STARTED)
        self.pods = {"u1": PodRuntimeState("u1", "ns", "web", sandbox, (app, exited))}

    async def ping(self) -> None:
        if self.down:
            raise RuntimeUnavailable("Docker engine at unix:///x does not answer")

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        return self.pods

    async def container_stats(self, container_ids: Sequence[str]) -> list[ContainerStats | None]:
        self.stats_calls += len(container_ids)
        return [ContainerStats(2_500_000_000, 3000, 2000, 1000) for _ in container_ids]


def readiness(
    engine: Engine, metrics: ProviderMetrics, clock: ManualClock, registered: list[bool]
) -> Readiness:
    async def ask() -> object:
        metrics.rest_client_requests.labels("GET", "200").inc()
        return {}

    return Readiness(cast(Runtime, engine), metrics, lambda: registered[0], ask, clock=clock)


async def test_readyz_passes_when_engine_apiserver_and_node_do() -> None:
    metrics, clock, engine = ProviderMetrics(), ManualClock(), Engine()
    checks = await readiness(engine, metrics, clock, [True]).checks()
    assert checks == [Check("engine", None), Check("apiserver", None), Check("node", None)]
    assert report(checks, verbose=False) == (200, "ok")


async def test_readyz_fails_naming_each_check_that_fails_without_its_reason() -> None:
    metrics, clock, engine = ProviderMetrics(), ManualClock(), Engine()
    engine.down = True
    checks = await readiness(engine, metrics, clock, [False]).checks()
    assert [c.name for c in checks if c.failure] == ["engine", "node"]
    assert "does not answer" in str(checks[0].failure)
    status, body = report(checks, verbose=False)
    assert status == 500
    assert body == (
        "[-]engine failed: reason withheld\n[+]apiserver ok\n[-]node failed: reason withheld\n"
        "readyz check failed\n"
    )


async def test_an_apiserver_that_stopped_answering_fails_readyz_after_the_fresh_window() -> None:
    metrics, clock, engine = ProviderMetrics(), ManualClock(), Engine()

    async def no_answer() -> object:
        metrics.rest_client_requests.labels("GET", "<error>").inc()
        raise ConnectionRefusedError("refused")

    ready = Readiness(cast(Runtime, engine), metrics, lambda: True, no_answer, clock=clock)
    metrics.rest_client_requests.labels("GET", "200").inc()  # the provider's own traffic
    assert (await ready.checks())[1].failure is None
    clock.now += FRESH_SECONDS - 1
    assert (await ready.checks())[1].failure is None  # answered recently: no request sent
    clock.now += 2
    failure = (await ready.checks())[1].failure
    assert failure is not None and "ConnectionRefusedError" in failure
    metrics.rest_client_requests.labels("PATCH", "200").inc()  # the apiserver answers again
    assert (await ready.checks())[1].failure is None


async def test_a_quiet_provider_asks_the_apiserver_itself() -> None:
    metrics, clock, engine = ProviderMetrics(), ManualClock(), Engine()
    ready = readiness(engine, metrics, clock, [True])
    clock.now += 10 * FRESH_SECONDS
    assert (await ready.checks())[1].failure is None
    assert metrics.apiserver_answers() >= 1  # the GET /version it sent


async def test_scrapes_within_the_interval_share_one_stats_pass() -> None:
    engine, clock = Engine(), ManualClock()
    stats = StatsCollector(cast(Runtime, engine), "node-a", interval=5.0, clock=clock)
    first = await stats.sample()
    await stats.summary()
    cadvisor_metrics(await stats.sample())
    assert stats.passes == 1 and engine.stats_calls == 1  # one running container, one pass
    clock.now += 5.0
    assert await stats.sample() is not first
    assert stats.passes == 2


async def test_cadvisor_series_carry_the_kubelets_labels() -> None:
    stats = StatsCollector(cast(Runtime, Engine()), "node-a")
    taken = await stats.sample()
    found = families(cadvisor_metrics(taken))
    labels = {
        "container": "app",
        "pod": "web",
        "namespace": "ns",
        "image": "busybox:1.36",
        "name": "c1",
        "id": "/kubepods/podu1/c1",
    }

    def value(name: str, **extra: str) -> float:
        [s] = [s for s in found[name].samples if s.labels == {**labels, **extra}]
        return float(s.value)

    assert found["container_cpu_usage_seconds"].type == "counter"
    assert value("container_cpu_usage_seconds", cpu="total") == 2.5
    assert value("container_memory_working_set_bytes") == 2000
    assert value("container_memory_usage_bytes") == 3000
    assert value("container_memory_rss") == 1000
    assert value("container_start_time_seconds") == STARTED.timestamp()
    assert value("container_spec_cpu_quota") == 50000
    assert value("container_spec_cpu_shares") == 102
    assert value("container_spec_cpu_period") == 100000
    assert value("container_spec_memory_limit_bytes") == 2**27
    [error] = found["container_scrape_error"].samples
    assert error.value == 0
    stamp = int(taken.at.timestamp() * 1000)
    [cpu] = found["container_cpu_usage_seconds"].samples
    assert cpu.timestamp is not None and int(float(cpu.timestamp) * 1000) == stamp


def test_probe_results_are_counted_with_the_kubelets_labels_and_forgotten() -> None:
    metrics = ProviderMetrics()
    pod: dict[str, Any] = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"}}
    probe = ProbeMetrics(metrics, pod, "app", ProbeType.READINESS)
    probe.record(Result.SUCCESS, 0.01)
    probe.record(Result.SUCCESS, 0.02)
    probe.record(Result.FAILURE, 1.0)
    result = {"probe_type": "Readiness", "container": "app", "pod": "web", "namespace": "ns", "pod_uid": "u1"}
    text = metrics.render_probes().decode()
    found = families(text)
    assert set(found) == {"prober_probe", "prober_probe_duration_seconds"}
    registry = metrics.probes_registry
    assert registry.get_sample_value("prober_probe_total", {**result, "result": "successful"}) == 2
    assert registry.get_sample_value("prober_probe_total", {**result, "result": "failed"}) == 1
    duration = {"probe_type": "Readiness", "container": "app", "pod": "web", "namespace": "ns"}
    assert registry.get_sample_value("prober_probe_duration_seconds_count", duration) == 2  # not the failure
    assert "prober_probe_total" not in metrics.render().decode()  # /metrics/probes only
    probe.forget()
    assert registry.get_sample_value("prober_probe_total", {**result, "result": "successful"}) is None
