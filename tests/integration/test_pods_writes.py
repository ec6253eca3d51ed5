"""What pods cost the apiserver: status writes from create to Running, and none while idle.

Counted by the sandbox's request counters (GET /debug/sandbox/counters), which see every
request the provider sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.pod_status import container_status
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
SYNC_PERIOD = 3.0
IDLE_SECONDS = 60.0  # the window: about 20 full status passes and 30 pod resyncs here


@pytest.fixture
async def harness(
    node_name: str, test_images: dict[str, str], tmp_path: Path
) -> AsyncIterator[ProviderHarness]:
    # Pod workers resync every ~2 s too: idempotent syncs must not cost writes either.
    async with ProviderHarness.running(
        node_name, tmp_path, sync_period=SYNC_PERIOD, resync_interval=2.0
    ) as h:
        yield h


def pod_writes(counters: dict[str, Any], resource: str) -> int:
    total = 0
    for key, count in counters["requests"].items():
        verb, _, what = key.partition(" ")
        if verb in WRITE_VERBS and what == resource:
            total += int(count)
    return total


def running_and_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and container_status(pod, "main").get("ready") is True


async def test_create_to_running_costs_at_most_3_status_writes(harness: ProviderHarness) -> None:
    await harness.api.delete("/debug/sandbox/counters")
    await harness.create(
        harness.manifest("simple", [{"name": "main", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}])
    )
    await harness.wait_for("simple", running_and_ready)
    await asyncio.sleep(SYNC_PERIOD + 1)  # any write still in flight has landed
    counters = await harness.counters()
    writes = pod_writes(counters, "pods/status")
    assert 1 <= writes <= 3, counters


async def test_idle_running_pods_cost_no_pod_writes(harness: ProviderHarness) -> None:
    names = [f"idle-{i}" for i in range(20)]
    for name in names:
        await harness.create(
            harness.manifest(name, [{"name": "main", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}])
        )
    for name in names:
        await harness.wait_for(name, running_and_ready)
    await asyncio.sleep(SYNC_PERIOD + 1)
    await harness.api.delete("/debug/sandbox/counters")
    await asyncio.sleep(IDLE_SECONDS)
    counters = await harness.counters()
    assert pod_writes(counters, "pods/status") == 0, counters
    assert pod_writes(counters, "pods") == 0, counters
