"""Kubernetes resource quantities ("100m", "1.5", "64Mi", "1e3", "2G") as numbers, for the scheduler.

What lives here: `parse_quantity(text) -> Fraction`, exact, following the suffixes of
`staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go` (binary Ki..Ei, decimal n u m k M
G T P E, and decimal exponents). Must not: import the provider's own quantity helper (the
sandbox and the provider stay independent), or round.
"""

from __future__ import annotations

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
_PATTERN = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity; raises ValueError for a malformed one."""
    if isinstance(text, int | float):
        return Fraction(text)
    match = _PATTERN.match(text.strip())
    if not match:
        raise ValueError(f"quantities must match the regular expression '{_PATTERN.pattern}': {text!r}")
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        return value * Fraction(10) ** int(exponent[1:])
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    return value * _DECIMAL[suffix or ""]
