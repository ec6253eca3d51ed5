"""Kubernetes resource quantities and Go-style durations: parsing and formatting.

What lives here: `parse_quantity` (the grammar of k8s.io/apimachinery/pkg/api/resource
`Quantity`, e.g. `500m`, `16Gi`, `1.5`, `2e3`), `parse_duration` (Go's
`time.ParseDuration` grammar, e.g. `10s`, `1h30m`, `250ms`) and `format_duration`, its
inverse for display. Pure functions; must not read configuration, files or the clock.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# <quantity> ::= <signedNumber><suffix>; suffix is a binary SI (Ki..Ei), a decimal SI
# (n u m "" k M G T P E) or a decimal exponent (e|E <signedNumber>).
# Upstream: staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

# Go's time.ParseDuration units, in seconds.
_UNITS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "μs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")


def parse_quantity(text: str) -> Decimal:
    """Return the value of a Kubernetes quantity; raise ValueError if `text` is not one."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    try:
        number = Decimal(match["number"])
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"not a Kubernetes quantity: {text!r}") from exc
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    if suffix:
        return number.scaleb(int(suffix[1:]))
    return number


def parse_duration(text: str) -> float:
    """Return the seconds of a Go-style duration (`10s`, `1h30m`, `250ms`).

    Like Go, `0` needs no unit; any other number does. Negative durations are refused.
    """
    if text == "0":
        return 0.0
    if text.startswith("-"):
        raise ValueError(f"negative duration: {text!r}")
    body = text[1:] if text.startswith("+") else text
    position, total = 0, Decimal(0)
    if not body:
        raise ValueError(f"not a duration: {text!r}")
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None:
            raise ValueError(f"not a duration (expected e.g. '10s', '5m', '1h30m'): {text!r}")
        total += Decimal(match[1]) * _UNITS[match[2]]
        position = match.end()
    return float(total)


def format_duration(seconds: float) -> str:
    """Format seconds as a Go-style duration string: 300 -> `5m`, 5400 -> `1h30m`, 0.25 -> `250ms`."""
    if seconds < 0:
        raise ValueError(f"negative duration: {seconds}")
    nanos = round(Decimal(repr(seconds)).scaleb(9))
    if nanos == 0:
        return "0s"
    if nanos < 10**9:
        for unit, exponent in (("ms", 6), ("us", 3), ("ns", 0)):
            if nanos >= 10**exponent:
                return f"{_plain(Decimal(nanos).scaleb(-exponent))}{unit}"
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    if rest:
        parts.append(f"{_plain(Decimal(rest).scaleb(-9))}s")
    return "".join(parts)


def _plain(value: Decimal) -> str:
    """A decimal without exponent or trailing zeros: 1.500 -> `1.5`, 1E+1 -> `10`."""
    return format(value.normalize(), "f")
