"""`run_provider` once start-up succeeded: what start-up made is collected once and moved out of
the garbage collector's full passes (`gc.freeze`), before the provider waits for its signal."""

from __future__ import annotations

import asyncio
import gc
import os
import signal

import pytest

from vk_provider import app
from vk_provider.config import Config


class StartsAndStops:
    """A provider whose start succeeds at once; it sends the process SIGTERM once started."""

    frozen_at_stop: int | None = None

    def __init__(self, config: Config) -> None:
        self.config = config

    async def start(self) -> None:
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)

    async def stop(self) -> None:
        StartsAndStops.frozen_at_stop = gc.get_freeze_count()


async def test_a_started_provider_keeps_its_start_up_objects_out_of_full_collections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app, "Provider", StartsAndStops)
    gc.unfreeze()
    try:
        assert await app.run_provider(Config()) == 0
        assert StartsAndStops.frozen_at_stop is not None and StartsAndStops.frozen_at_stop > 0
    finally:
        gc.unfreeze()  # the rest of the test process collects as before
