"""The engine's answers about an image, kept for a moment so a burst of pods asks once.

What lives here: `ImageInspects`, in front of `Engine.inspect_image`: an image's inspect is
kept for `FRESH_SECONDS` after the engine gave it, and look-ups of one reference while a
request for it is out wait for that request instead of sending another. Only a found image is
kept (a missing one is asked about again every time: it may be pulled or loaded at any
moment); `forget(ref)` drops it at once (after a pull of it, or a create the engine refused
with "No such image"). Why: Docker's image inspect costs the engine about 2.5 ms of CPU, ten
times a container inspect, and every new container asks it (the kubelet's EnsureImageExists
asks the CRI's ImageStatus each time, which containerd answers from memory).
Must not: keep an error or a miss, or answer from an inspect older than `FRESH_SECONDS`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from vk_common.single_flight import SingleFlight

# An image removed or re-tagged behind the provider's back is seen within this long; a create
# that fails on it in that window is a CreateContainerError the next sync mends.
FRESH_SECONDS = 2.0

Inspect = Callable[[str], Awaitable[dict[str, Any]]]


class ImageInspects:
    def __init__(self, inspect: Inspect, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._inspect = inspect
        self._clock = clock
        self._kept: dict[str, tuple[float, dict[str, Any]]] = {}
        self._flights: SingleFlight[str, dict[str, Any]] = SingleFlight()

    async def get(self, ref: str) -> dict[str, Any]:
        """The engine's inspect of `ref` (normalized), at most FRESH_SECONDS old; raises what
        `inspect` raises (docker-py's ImageNotFound for a missing image)."""
        kept = self._kept.get(ref)
        if kept is not None and self._clock() - kept[0] < FRESH_SECONDS:
            return kept[1]
        return await self._flights.join(ref, lambda: self._ask(ref))

    def forget(self, ref: str) -> None:
        """Drop what is kept of `ref`; an answer still on its way is not kept either."""
        self._kept.pop(ref, None)
        self._flights.drop(ref)

    async def _ask(self, ref: str) -> dict[str, Any]:
        asked = self._clock()
        answer = await self._inspect(ref)
        if self._flights.is_current(ref):  # not forgotten meanwhile
            self._kept = {r: k for r, k in self._kept.items() if asked - k[0] < FRESH_SECONDS}
            self._kept[ref] = (asked, answer)
        return answer
