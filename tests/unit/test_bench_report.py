"""bench/report.py: percentiles and the `RESULT` line."""

from __future__ import annotations

from bench import report


def test_percentile_interpolates_between_ranks() -> None:
    assert report.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert report.percentile([1.0, 2.0], 50) == 1.5
    assert report.percentile([1.0, 2.0], 99) == 1.99
    assert report.percentile([5.0], 99) == 5.0


def test_result_line() -> None:
    assert report.result_line({"x": 1.0, "n": 2, "k": "emulator"}) == "RESULT x=1.000 n=2 k=emulator"
