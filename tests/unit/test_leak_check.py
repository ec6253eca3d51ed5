"""The leak check counts only what this run left: what was there before it is recorded and left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import leak_check

BEFORE = {"docker": ["container old (exited)"], "pod cgroups": ["/sys/fs/cgroup/cpu/vk-provider/n1/podA"]}


def test_a_leftover_from_before_the_run_is_listed_apart_and_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "build" / "leak-baseline.json"
    monkeypatch.setattr(leak_check, "leftovers", lambda: BEFORE)
    assert leak_check.main(["--record", str(baseline)]) == 0
    assert leak_check.main(["--baseline", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert "2 left from before this run (not counted" in out
    assert "leak check: pod cgroups: 0 left" in out


def test_what_the_run_left_beside_the_old_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "leak-baseline.json"
    monkeypatch.setattr(leak_check, "leftovers", lambda: BEFORE)
    leak_check.main(["--record", str(baseline)])
    new = "/sys/fs/cgroup/cpu/vk-provider/n2/podB"
    monkeypatch.setattr(
        leak_check, "leftovers", lambda: {**BEFORE, "pod cgroups": [*BEFORE["pod cgroups"], new]}
    )
    assert leak_check.main(["--baseline", str(baseline)]) == 1
    out = capsys.readouterr().out
    assert "leak check: pod cgroups: 1 left" in out and new in out
    assert "podA" not in out.split("not counted")[1]


def test_without_a_baseline_everything_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leak_check, "leftovers", lambda: BEFORE)
    assert leak_check.main([]) == 1
