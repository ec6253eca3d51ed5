"""Kubernetes quantities and Go-style durations (vk_common.quantity)."""

from decimal import Decimal

import pytest

from vk_common import quantity
from vk_common.quantity import format_duration, parse_duration, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("16Gi", Decimal(16 * 1024**3)),
        ("1.5", Decimal("1.5")),
        ("2e3", Decimal(2000)),
        ("110", Decimal(110)),
        ("1k", Decimal(1000)),
        ("128Mi", Decimal(128 * 1024**2)),
        ("100n", Decimal("0.0000001")),
        (".5", Decimal("0.5")),
        ("1E-3", Decimal("0.001")),
    ],
)
def test_valid_quantities(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["16GB", "abc", "", "1.2.3", "Gi", "5 Gi", "1Kb", "e3", "1ki"])
def test_invalid_quantities(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("5m", 300.0), ("1h30m", 5400.0), ("250ms", 0.25), ("1.5h", 5400.0), ("0", 0.0)],
)
def test_valid_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["10", "-5s", "ten", "", "s", "5m ", "1d", "h1"])
def test_invalid_durations(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(10, "10s"), (300, "5m"), (5400, "1h30m"), (0.25, "250ms"), (90, "1m30s"), (1.5, "1.5s"), (0, "0s")],
)
def test_format_duration_round_trips(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


def test_the_longest_duration_formats_to_one_that_parses() -> None:
    # Found by tests/unit/fuzz/test_quantity_fuzz.py: the float nearest the maximum lies above it,
    # and check-config printed '2562047h47m16.854776s', which no longer loads.
    seconds = parse_duration("2562047h47m16.854775807s")
    assert format_duration(seconds) == "2562047h47m16.854775807s"
    assert parse_duration(format_duration(seconds)) == seconds


def test_short_quantities_are_kept_and_long_ones_are_not() -> None:
    """A pod's quantities are parsed at every sync: a short one is parsed once and kept; a long
    one (the digits an object may carry) is parsed each time, never held."""
    kept = quantity._parse_kept
    kept.cache_clear()
    assert parse_quantity("24Gi") == parse_quantity("24Gi") == 24 * 1024**3
    assert kept.cache_info().hits == 1
    long = "1." + "0" * 100_000
    assert parse_quantity(long) == 1
    assert kept.cache_info().currsize == 1
    with pytest.raises(ValueError):
        parse_quantity("24 Gi")
    with pytest.raises(ValueError):
        parse_quantity("24 Gi")  # an error is not kept
