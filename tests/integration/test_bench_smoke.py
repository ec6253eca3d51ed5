"""The benches of bench/ run end to end at tiny sizes on the emulator, each as a subprocess.

Each must exit 0 and end with its `RESULT key=value ...` line carrying the expected keys and
sane values. Nothing here asserts a time: the figures themselves are docs/performance.md's.
The benches start their own `vk-provider sandbox` and remove their own containers.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]


def run_bench(module: str, *args: str) -> dict[str, str]:
    """Run `python -m bench.<module> ARGS`; the key=value pairs of its last line, a RESULT line."""
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), done.stdout
    pairs = dict(item.split("=", 1) for item in last.split()[1:])
    assert "|" in done.stdout, "no Markdown table"
    return pairs


def test_startup(test_images: dict[str, str]) -> None:
    result = run_bench("startup", "--pods", "2")
    for key in ("p50_ratio", "p99_ratio", "throughput_ratio", "provider_p50_s", "floor_p50_s"):
        assert float(result[key]) > 0, (key, result)
    assert float(result["provider_p99_s"]) >= float(result["provider_p50_s"])
    assert result["pods"] == "2" and result["control_plane"] == "emulator"


def test_lone(test_images: dict[str, str]) -> None:
    result = run_bench("lone", "--pods", "2", "--background", "2", "--settle", "0")
    for key in ("p50_ratio", "p99_ratio", "provider_p50_s", "floor_p50_s", "floor_p99_s"):
        assert float(result[key]) > 0, (key, result)
    assert result["slo_met"] in ("True", "False") and result["background"] == "2"
    assert result["pods"] == "2" and result["control_plane"] == "emulator"


def test_steady(test_images: dict[str, str]) -> None:
    result = run_bench("steady", "--pods", "2", "--seconds", "4", "--settle", "2")
    assert 0 <= float(result["cpu_pct"]) < 400, result
    assert float(result["rss_mb"]) > 10, result
    assert int(result["pod_writes"]) >= 0
    assert float(result["docker_calls_per_s"]) >= 0
    assert float(result["seconds"]) >= 4


def test_churn(test_images: dict[str, str]) -> None:
    result = run_bench("churn", "--pods", "2")
    assert float(result["final_deletes_per_pod"]) == 1.0, result
    assert float(result["status_writes_per_pod"]) >= 1.0, result
    assert float(result["seconds"]) > 0


def test_scale_two_nodes_lose_and_duplicate_nothing(test_images: dict[str, str]) -> None:
    result = run_bench("scale", "--nodes", "2", "--pods", "3", "--seconds", "2")
    assert (result["lost"], result["duplicated"], result["stray"], result["misplaced"]) == (
        "0",
        "0",
        "0",
        "0",
    )
    assert result["nodes"] == "2" and result["pods_per_node"] == "3"
    assert float(result["p99_s"]) >= float(result["p50_s"]) > 0
    assert float(result["rss_mb_max"]) > 10, result
