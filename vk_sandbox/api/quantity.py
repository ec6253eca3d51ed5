"""Kubernetes resource quantities ("100m", "1.5", "64Mi", "1e3", "2G") as numbers, for the scheduler.

What lives here: `parse_quantity(text) -> Fraction`, exact (a short text's value kept once
parsed), following the suffixes of
`staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go` (binary Ki..Ei, decimal n u m k M
G T P E, and decimal exponents). A value whose magnitude lies beyond 10^±`ORDER_LIMIT` is
clamped to ±10^±`ORDER_LIMIT` rather than computed (`1e10000000` would be ten million digits):
Kubernetes holds quantities as int64 values of nanos, so no capacity or request can tell such
values apart. Must not: import the provider's own quantity helper (the sandbox and the provider
stay independent), or round values within the limit.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
ORDER_LIMIT = 40  # beyond int64 (~9.2e18) times Ei (~1.2e18), and far below nano (1e-9)
_LARGEST = Fraction(10) ** ORDER_LIMIT
_SMALLEST = 1 / _LARGEST
_PATTERN = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$", re.ASCII
)


KEPT_QUANTITY_CHARS = 64  # a quantity up to this long is parsed once and kept
PARSED_QUANTITIES = 4096  # how many are kept (least recently used forgotten first)


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity; raises ValueError for a malformed one. Every write of a pod
    reads its requests and limits: a short text's value (a Fraction: immutable) is kept."""
    if isinstance(text, int | float):
        return Fraction(text)
    return _parse_kept(text) if len(text) <= KEPT_QUANTITY_CHARS else _parse_text(text)


def _parse_text(text: str) -> Fraction:
    match = _PATTERN.match(text.strip())
    if not match:
        raise ValueError(f"quantities must match the regular expression '{_PATTERN.pattern}': {text!r}")
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        return _scaled(value, int(exponent[1:]))
    return _scaled(value * (_BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix or ""]), 0)


_parse_kept = functools.lru_cache(maxsize=PARSED_QUANTITIES)(_parse_text)


def _scaled(value: Fraction, exponent: int) -> Fraction:
    """value * 10**exponent, its magnitude clamped to [10^-ORDER_LIMIT, 10^ORDER_LIMIT] (a value
    far outside is never computed: its order of magnitude is judged from the digits first)."""
    if value == 0:
        return value
    sign = 1 if value > 0 else -1
    order = exponent + len(str(abs(value.numerator))) - len(str(value.denominator))  # log10 +- 1
    if order > ORDER_LIMIT + 1:
        return sign * _LARGEST
    if order < -ORDER_LIMIT - 1:
        return sign * _SMALLEST
    magnitude = abs(value) * Fraction(10) ** exponent
    return sign * min(max(magnitude, _SMALLEST), _LARGEST)
