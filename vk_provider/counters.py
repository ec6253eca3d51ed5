"""The provider's own counters and their Prometheus text, served on the kubelet API's `/metrics`.

What lives here: `Counter` (name, help, value: one series without labels) and
`counter_metrics(counters)`, pure, the text exposition format 0.0.4. The kubelet serves its
`kubelet_*` series on `/metrics`; the provider serves `vk_provider_*` ones there, made by the
parts that count (e.g. `status.manager.StatusCounters.series`). Must not: count anything
itself or know who counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


class Counter(NamedTuple):
    """One monotonically increasing series, without labels."""

    name: str
    help: str
    value: int


def counter_metrics(counters: Iterable[Counter]) -> str:
    lines: list[str] = []
    for counter in counters:
        lines += [
            f"# HELP {counter.name} {counter.help}",
            f"# TYPE {counter.name} counter",
            f"{counter.name} {counter.value}",
        ]
    return "\n".join(lines) + "\n" if lines else ""
