"""How many pods a resilience scenario runs, and how its waits grow with them.

What lives here: `scenario_pods(default)`, the scenario's own number unless `VK_RESILIENCE_PODS`
sets a larger one (issue 32: the provider-killed and engine-outage scenarios at 500 pods on one
node, `VK_RESILIENCE_PODS=500 pytest tests/resilience/test_provider_killed.py ...`), and
`scaled(seconds, default)`, a deadline grown in proportion (a burst of 10x the pods takes up to
10x as long on the same engine). `make test` sets nothing and runs the scenarios at their own
sizes. Must not: shrink a scenario below its own number.
"""

from __future__ import annotations

import os

VARIABLE = "VK_RESILIENCE_PODS"


def scenario_pods(default: int) -> int:
    value = os.environ.get(VARIABLE, "")
    if not value:
        return default
    if not value.isdigit():
        raise ValueError(f"{VARIABLE}={value!r}: a number of pods, like 500")
    return max(default, int(value))


def scaled(seconds: float, default: int) -> float:
    """`seconds` for `default` pods, grown with `scenario_pods(default)`."""
    return seconds * scenario_pods(default) / default
