"""bench/growth.py: reading a bench's RESULT line, and the tables of a grid with a failed run."""

from __future__ import annotations

import pytest

from bench import growth, report


def test_the_last_result_line_is_read() -> None:
    output = "## table\n| a | b |\nRESULT p50_ratio=9.000\n" + report.result_line(
        {"p50_ratio": 1.25, "pods": 20}
    )
    assert growth.parse_result(output + "\n") == {"p50_ratio": "1.250", "pods": "20"}
    assert growth.parse_result("no result\n") is None


def test_a_failed_run_is_a_row_that_says_so() -> None:
    rows = [
        ("emulator", growth.Step("scale", 100), {"seconds_to_all_running": "19.1", "lost": "0"}),
        ("real", growth.Step("scale", 500), None),
    ]
    text = growth.tables(rows)
    assert text.startswith("### scale\n")
    lines = text.splitlines()
    assert any(line.startswith("| emulator | 100 | 19.1 |") for line in lines)
    assert any(line.startswith("| real | 500 | FAILED | FAILED |") for line in lines)
    assert "### startup" not in text


def test_an_unknown_bench_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        growth.main(["--only", "startup,nonesuch"])
    assert exit_info.value.code == 2
    assert "no bench nonesuch" in capsys.readouterr().err


def test_every_step_has_its_table() -> None:
    assert {step.bench for step in growth.GRID} == set(growth.COLUMNS)
