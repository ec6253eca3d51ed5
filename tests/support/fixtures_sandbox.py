"""The `sandbox` fixture: a started sandbox API server with the default settings, for any test.

A pytest plugin, registered by `pytest_plugins` in tests/conftest.py, so a test takes `sandbox`
by name without importing it. A module that needs other settings (no controllers, debug
counters) defines its own `sandbox` fixture with `running_sandbox`, which takes precedence.
Must not: hold helpers (they live in tests/support/sandbox.py) or share a sandbox between tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.sandbox import RunningSandbox, running_sandbox


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[RunningSandbox]:
    async with running_sandbox(tmp_path) as server:
        yield server
