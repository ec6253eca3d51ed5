"""Fuzzing quantities and durations: the provider's (vk_common.quantity) and the sandbox's
(vk_sandbox.api.quantity).

What is fuzzed: strings of the quantity grammar (signs, fractions, every suffix, exponents up
to hundreds of digits), of Go's duration grammar (hundreds of digits, every unit), mutations of
both and arbitrary text. The properties: a parser returns a value or raises ValueError (its
documented error; the provider's out-of-range ones are its subclasses), and does so within a
generous per-example deadline even for a huge exponent; the provider's value is bounded
(|value| <= MAX_QUANTITY, a whole number of nanos) and agrees with the exact value where that
is in range; exact values round-trip (parse(format(x)) == x for integers, decimals and
binary/decimal suffixes); a parsed duration formats to a string that parses back to it.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from decimal import Decimal
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzzing import budget, mutated_text
from vk_common import quantity as provider
from vk_sandbox.api import quantity as sandbox

GENEROUS = timedelta(seconds=2)  # per example, on a loaded 2-core machine; these take microseconds
BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}

_digits = st.text("0123456789", min_size=1, max_size=30) | st.integers(1, 400).map(lambda n: "9" * n)
_number = st.tuples(
    st.sampled_from(["", "+", "-"]), _digits, st.sampled_from(["", "."]), st.text("0123456789", max_size=12)
).map("".join)
_exponent = st.tuples(st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), _digits).map("".join)
_suffix = st.sampled_from([*BINARY, *DECIMAL]) | _exponent
# Exponents whose values the sandbox's parser computes exactly (it clamps beyond 10^+-ORDER_LIMIT).
_small_exponent = st.tuples(st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), st.integers(0, 400)).map(
    lambda t: f"{t[0]}{t[1]}{t[2]}"
)
quantities = st.tuples(_number, _suffix).map("".join)
small_quantities = st.tuples(_number, st.sampled_from([*BINARY, *DECIMAL]) | _small_exponent).map("".join)
QUANTITY_FRAGMENTS = (
    "Ki",
    "Mi",
    "Ei",
    "e",
    "E",
    "-",
    "+",
    ".",
    "m",
    "n",
    "k",
    "i",
    " ",
    "²",
    "٣",
    "1e1000000",
)
durations = st.lists(
    st.tuples(_number.map(lambda n: n.lstrip("+-")), st.sampled_from(list(UNITS))), max_size=4
).map(lambda parts: "".join(n + u for n, u in parts))
DURATION_FRAGMENTS = ("h", "m", "s", "ms", "us", "µs", "μs", "ns", ".", "-", "+", "0", "9" * 400, "²")


def _exact(text: str) -> Fraction | None:
    """The exact value of a well-formed quantity (the sandbox's parser is exact within 10^+-ORDER_LIMIT)."""
    try:
        return sandbox.parse_quantity(text)
    except ValueError:
        return None


@budget(1500, deadline=GENEROUS)
@given(text=quantities | mutated_text("16Gi", QUANTITY_FRAGMENTS) | st.text(max_size=20))
def test_provider_quantities_are_bounded_values_or_value_errors(text: str) -> None:
    try:
        value = provider.parse_quantity(text)
    except ValueError:
        return
    assert abs(value) <= provider.MAX_QUANTITY
    assert value * 10**9 == (value * 10**9).to_integral_value()


@budget(1000, deadline=GENEROUS)
@given(text=small_quantities)
def test_provider_quantities_agree_with_the_exact_value(text: str) -> None:
    exact = _exact(text)
    try:
        value = provider.parse_quantity(text)
    except provider.QuantityOutOfRange:
        assert exact is not None and abs(exact) > provider.MAX_QUANTITY
        return
    except ValueError:
        assert exact is None
        return
    assert exact is not None
    if not any(text.endswith(b) for b in BINARY) or abs(exact) <= provider.MAX_QUANTITY:
        # rounded up (away from zero) to a whole nano, as ParseQuantity
        assert abs(Fraction(value) - exact) < Fraction(1, 10**9) and abs(Fraction(value)) >= abs(exact)
    else:  # a binary-suffixed value beyond int64 is capped
        assert abs(value) == provider.MAX_QUANTITY


@budget(500)
@given(
    number=st.integers(-(2**63) + 1, 2**63 - 1) | st.decimals(min_value=-(10**9), max_value=10**9, places=9),
    suffix=st.sampled_from([*BINARY, *DECIMAL]),
)
def test_quantities_round_trip(number: int | Decimal, suffix: str) -> None:
    text = f"{number if isinstance(number, int) else format(number, 'f')}{suffix}"  # "0E-9" is no quantity
    scale = Fraction(1024) ** BINARY[suffix] if suffix in BINARY else Fraction(10) ** DECIMAL[suffix]
    exact = Fraction(number) * scale
    assert sandbox.parse_quantity(text) == exact
    if abs(exact) <= provider.MAX_QUANTITY and (exact * 10**9).denominator == 1:
        assert provider.parse_quantity(text) == Decimal(exact.numerator) / exact.denominator


@budget(1000, deadline=GENEROUS)
@given(text=quantities | mutated_text("16Gi", QUANTITY_FRAGMENTS) | st.text(max_size=20))
def test_sandbox_quantities_are_values_or_value_errors(text: str) -> None:
    """Huge exponents included: the sandbox clamps them instead of computing ten million digits."""
    with contextlib.suppress(ValueError):
        value = sandbox.parse_quantity(text)
        assert abs(value) <= Fraction(10) ** sandbox.ORDER_LIMIT


@budget(1500, deadline=GENEROUS)
@given(text=durations | mutated_text("1h30m0.5s", DURATION_FRAGMENTS) | st.text(max_size=20))
def test_durations_are_bounded_seconds_or_value_errors(text: str) -> None:
    try:
        seconds = provider.parse_duration(text)
    except ValueError:
        return
    assert 0 <= seconds <= provider.MAX_DURATION_NANOS / 10**9
    again = provider.parse_duration(provider.format_duration(seconds))
    assert again == seconds, provider.format_duration(seconds)


@budget(1000)
@given(nanos=st.integers(0, provider.MAX_DURATION_NANOS) | st.integers(0, 10**12))
def test_durations_round_trip(nanos: int) -> None:
    seconds = nanos / 10**9
    text = provider.format_duration(seconds)
    assert provider.parse_duration(text) == seconds, text
