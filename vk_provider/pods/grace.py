"""Grace periods for pod termination, by the kubelet's rules (upstream pkg/kubelet/pod_workers.go,
calculateEffectiveGracePeriod).

What lives here: `effective_grace_period` (pod worker level: the stored value can only go
down; deletionGracePeriodSeconds, an override, else terminationGracePeriodSeconds, else
30; never below 1 s) and `stop_timeout_after_prestop` (what is left for the stop signal
after the preStop hook, at least 2 s). Must not: sleep or touch the runtime.

Upstream: pkg/kubelet/pod_workers.go (calculateEffectiveGracePeriod),
pkg/kubelet/kuberuntime/kuberuntime_container.go (killContainer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULT_GRACE_SECONDS = 30
MINIMUM_GRACE_SECONDS = 1
MINIMUM_AFTER_PRESTOP_SECONDS = 2
ORPHAN_GRACE_SECONDS = 1


def effective_grace_period(stored: int | None, pod: Mapping[str, Any], override: int | None = None) -> int:
    """The grace period to kill with; `stored` is the previous value for this pod (None: none yet)."""
    grace = stored or 0
    overridden = False
    for candidate in ((pod.get("metadata") or {}).get("deletionGracePeriodSeconds"), override):
        if candidate is not None and (grace == 0 or int(candidate) < grace):
            grace = int(candidate)
            overridden = True
    if not overridden and grace == 0:
        spec_grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        grace = DEFAULT_GRACE_SECONDS if spec_grace is None else int(spec_grace)
    return max(grace, MINIMUM_GRACE_SECONDS)


def stop_timeout_after_prestop(grace: float, prestop_elapsed: float) -> float:
    """Seconds between the stop signal and SIGKILL once the preStop hook took `prestop_elapsed`."""
    return max(grace - prestop_elapsed, MINIMUM_AFTER_PRESTOP_SECONDS)
