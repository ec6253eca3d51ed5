"""Fixtures for the provider's integration tests: `harness`, the sandbox plus an in-process provider.

The provider runs for the test's unique `node_name` (its containers are removed afterwards by
the `node_name` fixture) with the default harness settings, on each control-plane tier chosen
(`plane`); a module that needs other settings defines its own `harness` fixture, which takes
precedence.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.provider_harness import ProviderHarness


@pytest.fixture
async def harness(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: EmulatorPlane | RealPlane
) -> AsyncIterator[ProviderHarness]:
    async with ProviderHarness.running(node_name, tmp_path, plane=plane) as h:
        yield h
