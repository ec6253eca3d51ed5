"""The fuzz suite's profile and its seed report.

Loads the settings profile `HYPOTHESIS_PROFILE` names (`fuzz` by default: bounded examples, no
deadline, a new random seed each run; `fuzz-long` for a campaign; see tests/support/fuzzing.py),
and adds to the report of a failed fuzz test the seed it ran with, so the same run can be
repeated with `--hypothesis-seed`.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from tests.support.fuzzing import load_profile

load_profile()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    seed = getattr(getattr(item, "obj", None), "_hypothesis_internal_use_generated_seed", None)
    if report.failed and call.when == "call" and seed is not None:
        report.sections.append(
            ("fuzz seed", f"this run drew from seed {seed}: repeat it with --hypothesis-seed={seed}")
        )
