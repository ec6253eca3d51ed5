"""Probe specs with the API's defaults applied.

What lives here: `ProbeType`, `ProbeSpec` and `container_probes(container)`, pure parsing of
a container's `livenessProbe` / `readinessProbe` / `startupProbe` dicts. Must not: run probes.

Defaults follow pkg/apis/core/v1/defaults.go (SetDefaults_Probe): initialDelaySeconds 0,
periodSeconds 10, timeoutSeconds 1, successThreshold 1, failureThreshold 3. API validation
requires successThreshold 1 for liveness and startup probes; a probe-level
terminationGracePeriodSeconds only applies to liveness and startup probes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

HANDLER_KINDS = ("exec", "httpGet", "tcpSocket", "grpc")


class ProbeType(StrEnum):
    """The probe kinds, spelled as the kubelet's Events spell them."""

    LIVENESS = "Liveness"
    READINESS = "Readiness"
    STARTUP = "Startup"

    @property
    def field(self) -> str:
        return f"{self.value[0].lower()}{self.value[1:]}Probe"


@dataclass(frozen=True)
class ProbeSpec:
    kind: str  # one of HANDLER_KINDS, "" when the probe names no handler
    handler: Mapping[str, Any] = field(default_factory=dict)
    initial_delay: int = 0
    period: int = 10
    timeout: int = 1
    success_threshold: int = 1
    failure_threshold: int = 3
    termination_grace: int | None = None  # liveness / startup only


def _positive(value: Any, default: int) -> int:
    """The API defaults a zero or missing value; anything below 1 is read as the default."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if number >= 1 else default


def parse_probe(probe_type: ProbeType, probe: Mapping[str, Any]) -> ProbeSpec:
    kind = next((k for k in HANDLER_KINDS if probe.get(k) is not None), "")
    try:
        delay = max(int(probe.get("initialDelaySeconds") or 0), 0)
    except (TypeError, ValueError):
        delay = 0
    success = _positive(probe.get("successThreshold"), 1)
    grace = probe.get("terminationGracePeriodSeconds")
    return ProbeSpec(
        kind=kind,
        handler=dict(probe.get(kind) or {}) if kind else {},
        initial_delay=delay,
        period=_positive(probe.get("periodSeconds"), 10),
        timeout=_positive(probe.get("timeoutSeconds"), 1),
        success_threshold=success if probe_type == ProbeType.READINESS else 1,
        failure_threshold=_positive(probe.get("failureThreshold"), 3),
        termination_grace=(int(grace) if grace is not None and probe_type != ProbeType.READINESS else None),
    )


def container_probes(container: Mapping[str, Any]) -> dict[ProbeType, ProbeSpec]:
    """The probes a container declares, by type."""
    found: dict[ProbeType, ProbeSpec] = {}
    for probe_type in ProbeType:
        probe = container.get(probe_type.field)
        if isinstance(probe, Mapping):
            found[probe_type] = parse_probe(probe_type, probe)
    return found
