"""`ManualClock`: a clock a unit test reads and moves by hand, for code that takes `clock=`.

Calling it returns `now` (seconds, 1000.0 unless told otherwise); a test advances it with
`clock.now += seconds`. Must not: read the real time or sleep.
"""

from __future__ import annotations


class ManualClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
