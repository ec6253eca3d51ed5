"""A stand-in for `vk_provider.app` in CLI tests: `vk-provider run` hands its configuration to it
and nothing starts. Must not: start anything, or stay installed past the test (monkeypatch)."""

from __future__ import annotations

import sys
import types

import pytest


def fake_provider(monkeypatch: pytest.MonkeyPatch, exit_code: int = 0) -> list[object]:
    """Install the stand-in; the configurations `run` hands it are appended to the list returned,
    and `run` exits with `exit_code`."""
    configs: list[object] = []

    async def run_provider(config: object) -> int:
        configs.append(config)
        return exit_code

    fake_app = types.ModuleType("vk_provider.app")
    fake_app.run_provider = run_provider  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vk_provider.app", fake_app)
    return configs
