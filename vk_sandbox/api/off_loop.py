"""Work on a request's object in a worker thread only when the object is big.

What lives here: `run_sized(size, fn, *args)`: `fn(*args)` on the event loop when `size` (the
bytes of JSON the work walks: the body, and for a patch the stored object too) is at most
`INLINE_BYTES`, else in a thread (`asyncio.to_thread`). Decoding, defaulting and validating a
3 MiB object takes seconds and must not hold the loop; a pod or an Event of a few KiB takes
well under a millisecond, less than the hand-off to a thread and back (which was a fifth of
the sandbox's loop in a burst of pods: py-spy).
Must not: decide what the work is, or run anything big on the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

INLINE_BYTES = 64 * 1024


async def run_sized(size: int, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    if size <= INLINE_BYTES:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)
