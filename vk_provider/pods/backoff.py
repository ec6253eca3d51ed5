"""Crash-loop and image-pull backoff, like the kubelet's `flowcontrol.Backoff`.

What lives here: `Backoff` (per key: 10 s doubling to 300 s, forgotten after 2 x max
without a new failure), `container_key` / `image_key` and the kubelet's messages
(`back-off 10s restarting failed container=x pod=y_ns(uid)`, `Back-off pulling image "i"`).
Times are epoch seconds so a container's `finishedAt` can be the event time.
Must not: sleep, schedule timers or touch the runtime; callers decide what to do.

Upstream: k8s.io/client-go/util/flowcontrol/backoff.go, pkg/kubelet/kuberuntime
(doBackOff), pkg/kubelet/images/image_manager.go.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vk_common.objects import format_pod, meta, uid

INITIAL_BACKOFF = 10.0
MAX_BACKOFF = 300.0


@dataclass
class _Entry:
    backoff: float
    last_update: float


class Backoff:
    def __init__(
        self,
        initial: float = INITIAL_BACKOFF,
        maximum: float = MAX_BACKOFF,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._initial = initial
        self._max = maximum
        self._clock = clock
        self._entries: dict[str, _Entry] = {}

    def _expired(self, event_time: float, entry: _Entry) -> bool:
        return event_time - entry.last_update > 2 * self._max

    def remaining(self, key: str, event_time: float) -> float:
        """Seconds left of the backoff that started at `event_time`; 0 when not backing off
        (`IsInBackOffSince`: an entry last updated more than 2 x max before the event is over)."""
        entry = self._entries.get(key)
        if entry is None or self._expired(event_time, entry):
            return 0.0
        left = entry.backoff - (self._clock() - event_time)
        return max(left, 0.0)

    def current(self, key: str) -> float:
        """The delay recorded for `key` (0 when unknown)."""
        entry = self._entries.get(key)
        return entry.backoff if entry else 0.0

    def next(self, key: str, event_time: float) -> float:
        """Record a failure at `event_time` and return the delay that now applies. The entry's
        `last_update` is now (flowcontrol's `Next` stamps `Clock.Now()`), the restart, not the
        failure: a failure after a capped 5-minute delay is then 5 minutes and a few seconds
        after that stamp, not more than 2 x max, and neither `gc` nor the next `remaining`
        mistakes the capped loop for a settled container."""
        entry = self._entries.get(key)
        if entry is None or self._expired(event_time, entry):
            entry = _Entry(self._initial, self._clock())
            self._entries[key] = entry
        else:
            entry.backoff = min(entry.backoff * 2, self._max)
            entry.last_update = self._clock()
        return entry.backoff

    def reset(self, key: str) -> None:
        self._entries.pop(key, None)

    def forget_prefix(self, prefix: str) -> None:
        """Drop every key of one pod (keys start with its `ns_name_uid_` prefix)."""
        for key in [k for k in self._entries if k.startswith(prefix)]:
            del self._entries[key]

    def gc(self) -> None:
        """Drop entries not updated for 2 x max (the kubelet's periodic GC)."""
        now = self._clock()
        for key in [k for k, e in self._entries.items() if self._expired(now, e)]:
            del self._entries[key]


def pod_prefix(pod: Mapping[str, Any]) -> str:
    m = meta(pod)
    return f"{m.get('name', '')}_{m.get('namespace', '')}_{uid(pod)}_"


def container_key(pod: Mapping[str, Any], container_name: str, spec_hash: str = "") -> str:
    return f"{pod_prefix(pod)}{container_name}_{spec_hash}"


def image_key(pod: Mapping[str, Any], image: str) -> str:
    return f"{pod_prefix(pod)}image_{image}"


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() for whole seconds: 10s, 1m20s, 5m0s."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def crash_loop_message(delay: float, container_name: str, pod: Mapping[str, Any]) -> str:
    return f"back-off {go_duration(delay)} restarting failed container={container_name} pod={format_pod(pod)}"


def image_backoff_message(image: str) -> str:
    return f'Back-off pulling image "{image}"'
