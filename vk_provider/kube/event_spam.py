"""How many Events one source may send about one object: client-go's spam filter.

What lives here: `SpamFilter.accept(ref, type_)`, a token bucket per involved object and Event
type (25 at once, then one more every 300 s; at most 4096 objects remembered, the least recently
seen forgotten first), as client-go's EventSourceObjectSpamFilter with the kubelet's defaults
(k8s.io/client-go@v0.37.2/tools/record/events_cache.go: getSpamKey, defaultSpamBurst,
defaultSpamQPS, maxLruCacheEntries). The kubelet's recorder skips an Event the filter refuses:
a node without cluster DNS sends its MissingClusterDNS warning about itself 25 times, not once
per pod. `reference_fields`, the fields of an involved object's reference both keys are made
of. Must not: send, queue or aggregate Events (kube/events.py does).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

BURST = 25
REFILL_PER_SECOND = 1.0 / 300.0
CACHE_SIZE = 4096


def reference_fields(ref: Mapping[str, Any], *names: str) -> tuple[str, ...]:
    """The named fields of an involved object's reference, "" where missing."""
    return tuple(str(ref.get(name, "")) for name in names)


def spam_key(ref: Mapping[str, Any], type_: str) -> tuple[str, ...]:
    """getSpamKey: the involved object (not its field path) and the Event's type; the source
    (component and host) is the same for every Event of one recorder."""
    return (*reference_fields(ref, "kind", "namespace", "name", "uid", "apiVersion"), type_)


@dataclass
class _Bucket:
    tokens: float
    at: float


class SpamFilter:
    def __init__(
        self,
        *,
        burst: int = BURST,
        refill_per_second: float = REFILL_PER_SECOND,
        cache_size: int = CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._burst = burst
        self._refill = refill_per_second
        self._cache_size = cache_size
        self._clock = clock
        self._buckets: OrderedDict[tuple[str, ...], _Bucket] = OrderedDict()

    def accept(self, ref: Mapping[str, Any], type_: str) -> bool:
        """Take a token of the object's bucket (TryAccept); False: skip the Event."""
        key = spam_key(ref, type_)
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self._burst), now)
        else:
            bucket.tokens = min(float(self._burst), bucket.tokens + (now - bucket.at) * self._refill)
            bucket.at = now
        self._buckets.move_to_end(key)
        while len(self._buckets) > self._cache_size:
            self._buckets.popitem(last=False)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True
