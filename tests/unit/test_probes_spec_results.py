"""Probe spec parsing (API defaults), the threshold state machine and the Event wording."""

from __future__ import annotations

from vk_provider.probes import messages
from vk_provider.probes.results import ProbeState, Result
from vk_provider.probes.spec import ProbeSpec, ProbeType, container_probes, parse_probe


def test_defaults_are_the_apis() -> None:
    spec = parse_probe(ProbeType.READINESS, {"exec": {"command": ["true"]}})
    assert spec == ProbeSpec(
        kind="exec",
        handler={"command": ["true"]},
        initial_delay=0,
        period=10,
        timeout=1,
        success_threshold=1,
        failure_threshold=3,
        termination_grace=None,
    )


def test_zero_values_are_defaulted_and_liveness_success_threshold_is_one() -> None:
    probe = {
        "tcpSocket": {"port": 80},
        "periodSeconds": 0,
        "timeoutSeconds": 0,
        "failureThreshold": 0,
        "successThreshold": 4,
        "initialDelaySeconds": 5,
        "terminationGracePeriodSeconds": 7,
    }
    live = parse_probe(ProbeType.LIVENESS, probe)
    assert (live.kind, live.period, live.timeout, live.failure_threshold) == ("tcpSocket", 10, 1, 3)
    assert (live.success_threshold, live.initial_delay, live.termination_grace) == (1, 5, 7)
    ready = parse_probe(ProbeType.READINESS, probe)
    assert (ready.success_threshold, ready.termination_grace) == (4, None)


def test_container_probes_by_type() -> None:
    container = {
        "name": "c",
        "livenessProbe": {"httpGet": {"port": 8080, "path": "/healthz"}},
        "startupProbe": {"grpc": {"port": 9000}},
    }
    probes = container_probes(container)
    assert sorted(probes) == [ProbeType.LIVENESS, ProbeType.STARTUP]
    assert probes[ProbeType.LIVENESS].handler == {"port": 8080, "path": "/healthz"}
    assert probes[ProbeType.STARTUP].kind == "grpc"
    assert ProbeType.STARTUP.field == "startupProbe"


def state(probe_type: ProbeType, **probe: int) -> ProbeState:
    return ProbeState(probe_type, parse_probe(probe_type, {"exec": {"command": ["true"]}, **probe}))


def test_initial_values_per_type() -> None:
    assert state(ProbeType.READINESS).new_container("a") == Result.FAILURE
    assert state(ProbeType.LIVENESS).new_container("a") == Result.SUCCESS
    assert state(ProbeType.STARTUP).new_container("a") == Result.UNKNOWN


def test_readiness_thresholds() -> None:
    ready = state(ProbeType.READINESS, successThreshold=2, failureThreshold=2)
    ready.new_container("a")
    assert ready.observe(Result.SUCCESS) is None  # 1 of 2
    assert ready.observe(Result.SUCCESS) == Result.SUCCESS
    assert ready.observe(Result.SUCCESS) is None  # unchanged
    assert ready.observe(Result.FAILURE) is None  # 1 of 2
    assert ready.observe(Result.SUCCESS) is None  # the failure run is broken
    assert ready.observe(Result.FAILURE) is None
    assert ready.observe(Result.FAILURE) == Result.FAILURE
    assert ready.result == Result.FAILURE
    assert not ready.on_hold  # readiness keeps probing


def test_liveness_failure_holds_until_a_new_instance() -> None:
    live = state(ProbeType.LIVENESS, failureThreshold=3)
    live.new_container("a")
    assert live.observe(Result.FAILURE) is None
    assert live.observe(Result.FAILURE) is None
    assert live.observe(Result.FAILURE) == Result.FAILURE
    assert live.on_hold
    assert live.container_stopped() is None  # already failed
    assert live.new_container("a") is None  # same instance: still held
    assert live.on_hold
    assert live.new_container("b") == Result.SUCCESS
    assert not live.on_hold
    assert live.observe(Result.FAILURE) is None  # counting starts again


def test_stopped_and_gone_containers() -> None:
    ready = state(ProbeType.READINESS)
    assert ready.container_stopped() is None  # no instance seen yet
    ready.new_container("a")
    ready.observe(Result.SUCCESS)
    assert ready.container_stopped() == Result.FAILURE
    ready.container_gone()
    assert (ready.container_id, ready.result) == ("", None)


def test_startup_success_then_failure_of_next_instance() -> None:
    start = state(ProbeType.STARTUP, failureThreshold=1)
    start.new_container("a")
    assert start.observe(Result.SUCCESS) == Result.SUCCESS
    assert start.new_container("b") == Result.UNKNOWN
    assert start.observe(Result.FAILURE) == Result.FAILURE
    assert start.on_hold


def test_event_messages() -> None:
    assert messages.failed(ProbeType.READINESS, "boom") == "Readiness probe failed: boom"
    assert messages.failed(ProbeType.LIVENESS, "x") == "Liveness probe failed: x"
    assert messages.errored(ProbeType.STARTUP, "e") == "Startup probe errored: e"
    assert (
        messages.kill("web", ProbeType.LIVENESS, True)
        == "Container web failed liveness probe, will be restarted"
    )
    assert messages.kill("web", ProbeType.STARTUP, False) == "Container web failed startup probe"
    assert (messages.UNHEALTHY, messages.KILLING) == ("Unhealthy", "Killing")
