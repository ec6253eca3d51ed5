"""vk_provider.counters and `/metrics` on the kubelet API: the provider's own counters."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from vk_provider.config import KubeletServerConfig
from vk_provider.counters import Counter, counter_metrics
from vk_provider.kubeletapi import KubeletServer
from vk_provider.status.manager import StatusCounters


def test_counters_render_as_prometheus_text() -> None:
    text = counter_metrics([Counter("a_total", "The a's.", 3), Counter("b_total", "The b's.", 0)])
    assert text == (
        "# HELP a_total The a's.\n# TYPE a_total counter\na_total 3\n"
        "# HELP b_total The b's.\n# TYPE b_total counter\nb_total 0\n"
    )
    assert counter_metrics([]) == ""


def test_the_status_managers_counters_are_series() -> None:
    counters = StatusCounters(writes=5, deletes=1, conflicts=2, errors=0)
    assert {c.name: c.value for c in counters.series()} == {
        "vk_provider_pod_status_patches_total": 5,
        "vk_provider_pod_deletions_total": 1,
        "vk_provider_pod_status_conflicts_total": 2,
        "vk_provider_pod_status_errors_total": 0,
    }


async def test_metrics_serves_what_the_sources_count_when_scraped(tmp_path: Path) -> None:
    config = KubeletServerConfig(listen="127.0.0.1:0", auth="none")
    server = KubeletServer(config, "node-a", object(), "127.0.0.1")  # type: ignore[arg-type]  # /metrics needs no runtime
    counters = StatusCounters()
    server.counter_sources.append(counters.series)
    await server.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
            url = f"https://127.0.0.1:{server.port}/metrics"
            counters.writes = 7
            async with http.get(url) as resp:
                assert resp.status == 200
                assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                text = await resp.text()
    finally:
        await server.stop()
    assert "\nvk_provider_pod_status_patches_total 7\n" in text
