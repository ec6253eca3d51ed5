"""The kubelet's Event wording for probes.

What lives here: reasons and message builders for probe Events. Must not: emit them.

Upstream: pkg/kubelet/prober/prober.go (probe) and
pkg/kubelet/kuberuntime/kuberuntime_manager.go (computePodActions, the Killing message).
"""

from __future__ import annotations

from vk_provider.probes.spec import ProbeType

UNHEALTHY = "Unhealthy"  # events.ContainerUnhealthy
PROBE_WARNING = "ProbeWarning"  # events.ContainerProbeWarning
KILLING = "Killing"  # events.KillingContainer


def failed(probe_type: ProbeType, output: str) -> str:
    return f"{probe_type.value} probe failed: {output}"


def errored(probe_type: ProbeType, error: str) -> str:
    return f"{probe_type.value} probe errored: {error}"


def warning(probe_type: ProbeType, output: str) -> str:
    return f"{probe_type.value} probe warning: {output}"


def kill(container_name: str, probe_type: ProbeType, restart: bool) -> str:
    """`Container x failed liveness probe, will be restarted` (no suffix for restartPolicy Never)."""
    message = f"Container {container_name} failed {probe_type.value.lower()} probe"
    return f"{message}, will be restarted" if restart else message
