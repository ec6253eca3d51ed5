"""Kubernetes resource quantities and Go-style durations: parsing and formatting.

What lives here: `parse_quantity` (the grammar of k8s.io/apimachinery/pkg/api/resource
`Quantity`, e.g. `500m`, `16Gi`, `1.5`, `2e3`), `parse_duration` (Go's
`time.ParseDuration` grammar, e.g. `10s`, `1h30m`, `250ms`) and `format_duration`, its
inverse for display; `quantity_or_zero` for rules that count an invalid quantity as none
(the create path reports it). Both parsers are bounded as upstream keeps them in an int64: a quantity beyond
`MAX_QUANTITY` raises `QuantityOutOfRange` (binary-suffixed ones are capped instead, as
ParseQuantity does; the last 4096 short quantities parsed are remembered), a duration beyond
`MAX_DURATION_NANOS` raises `DurationOutOfRange`; both
are ValueErrors, so no caller ever computes with a value of a million digits. Pure functions;
must not read configuration, files or the clock.
"""

from __future__ import annotations

import functools
import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Decimal, InvalidOperation, localcontext

# <quantity> ::= <signedNumber><suffix>; suffix is a binary SI (Ki..Ei), a decimal SI
# (n u m "" k M G T P E) or a decimal exponent (e|E <signedNumber>).
# Upstream: staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

# Kubernetes works with quantities as int64 (Quantity.Value(); quantity.go caps a BinarySI value
# at maxAllowed, math.MaxInt64). A larger decimal value is refused rather than computed with.
MAX_QUANTITY = 2**63 - 1
_MAX_EXPONENT_DIGITS = 18  # strconv.ParseInt(exponent, 10, 64) in suffix.go's interpret
_NANO = Decimal("1e-9")  # ParseQuantity rounds a non-zero value up to a whole 1n

# Go's time.ParseDuration units, in nanoseconds; a time.Duration is an int64 of nanoseconds.
_UNITS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "μs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
MAX_DURATION_NANOS = 2**63 - 1  # 2562047h47m16.854775807s
_MAX_FRACTION_DIGITS = 30  # more than any unit's nanoseconds need; Go drops the rest as well
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")


class QuantityOutOfRange(ValueError):
    """A well-formed quantity whose value is beyond ±MAX_QUANTITY."""


class DurationOutOfRange(ValueError):
    """A well-formed duration longer than a Go time.Duration holds (MAX_DURATION_NANOS)."""


# A node's pods carry a handful of distinct quantities, each read again at every sync of every
# pod (its requests, the node's capacity): a Decimal is immutable, so a parsed one is kept (a
# short one: a megabyte of digits is parsed each time rather than held).
PARSED_QUANTITIES = 4096
KEPT_QUANTITY_CHARS = 64


def parse_quantity(text: str) -> Decimal:
    """Return the value of a Kubernetes quantity; raise ValueError if `text` is not one (see
    `_parse_quantity`)."""
    return _parse_kept(text) if len(text) <= KEPT_QUANTITY_CHARS else _parse_quantity(text)


def _parse_quantity(text: str) -> Decimal:
    """Return the value of a Kubernetes quantity; raise ValueError if `text` is not one.

    As ParseQuantity: a non-zero value is rounded up (away from zero) to a whole nano, and a
    binary-suffixed one (`Ki`..`Ei`) is capped at ±MAX_QUANTITY; a decimal one beyond that
    raises QuantityOutOfRange. The magnitude is checked before any arithmetic, so `1e1000000`
    costs nothing.
    """
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    try:
        number = Decimal(match["number"])
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"not a Kubernetes quantity: {text!r}") from exc
    suffix = match["suffix"] or ""
    factor, exponent = Decimal(1), 0
    if suffix in _BINARY:
        factor = Decimal(1024) ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        exponent = _DECIMAL[suffix]
    elif suffix:
        if len(suffix[1:].lstrip("+-").lstrip("0")) > _MAX_EXPONENT_DIGITS:
            raise ValueError(f"not a Kubernetes quantity (its exponent is out of range): {text!r}")
        exponent = int(suffix[1:])
    if number.is_zero():
        return Decimal(0)
    # |value| is in [10**magnitude, 10**(magnitude + 2)).
    magnitude = number.adjusted() + factor.adjusted() + exponent
    if magnitude < -11:
        return _NANO.copy_sign(number)  # below 1n: rounded up to it
    if magnitude >= 19:  # at least 10**19 > MAX_QUANTITY
        return _out_of_range(text, number, suffix in _BINARY)
    digits = len(number.as_tuple().digits)
    with localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = digits + 40, MAX_EMAX, MIN_EMIN
        value = (number * factor).scaleb(exponent)
        places = value.as_tuple().exponent
        if isinstance(places, int) and places < -9:
            value = value.quantize(_NANO, rounding=ROUND_UP)
    if abs(value) > MAX_QUANTITY:
        return _out_of_range(text, number, suffix in _BINARY)
    return value


_parse_kept = functools.lru_cache(maxsize=PARSED_QUANTITIES)(_parse_quantity)


def quantity_or_zero(value: object) -> Decimal:
    """`parse_quantity(str(value))`, or 0 for None, a non-quantity or one out of range."""
    if value is None:
        return Decimal(0)
    try:
        return parse_quantity(str(value))
    except ValueError:
        return Decimal(0)


def _out_of_range(text: str, number: Decimal, binary: bool) -> Decimal:
    if binary:
        return Decimal(MAX_QUANTITY).copy_sign(number)
    raise QuantityOutOfRange(f"quantity out of range (at most {MAX_QUANTITY}): {text!r}")


def parse_duration(text: str) -> float:
    """Return the seconds of a Go-style duration (`10s`, `1h30m`, `250ms`).

    Like Go, `0` needs no unit; any other number does; digits below a nanosecond are dropped;
    more than MAX_DURATION_NANOS raises DurationOutOfRange. Negative durations are refused.
    """
    if text == "0":
        return 0.0
    if text.startswith("-"):
        raise ValueError(f"negative duration: {text!r}")
    body = text[1:] if text.startswith("+") else text
    position, nanos = 0, 0
    if not body:
        raise ValueError(f"not a duration: {text!r}")
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None:
            raise ValueError(f"not a duration (expected e.g. '10s', '5m', '1h30m'): {text!r}")
        whole, _, fraction = match[1].partition(".")
        unit = _UNITS[match[2]]
        if len(whole.lstrip("0")) > 19:  # already more than 10**19 ns
            raise DurationOutOfRange(f"duration out of range (at most 2562047h47m16.854775807s): {text!r}")
        fraction = fraction[:_MAX_FRACTION_DIGITS]
        nanos += int(whole or "0") * unit
        if fraction:
            nanos += int(fraction) * unit // 10 ** len(fraction)
        if nanos > MAX_DURATION_NANOS:
            raise DurationOutOfRange(f"duration out of range (at most 2562047h47m16.854775807s): {text!r}")
        position = match.end()
    return nanos / 10**9


def format_duration(seconds: float) -> str:
    """Format seconds as a Go-style duration string: 300 -> `5m`, 5400 -> `1h30m`, 0.25 -> `250ms`."""
    if seconds < 0:
        raise ValueError(f"negative duration: {seconds}")
    # The float nearest MAX_DURATION_NANOS lies above it: format it as the maximum it stands for,
    # so what is formatted parses back (check-config prints what load_config read).
    nanos = min(round(Decimal(repr(seconds)).scaleb(9)), MAX_DURATION_NANOS)
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
