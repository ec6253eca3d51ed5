"""What a Prometheus scrape of the node's `/metrics/cadvisor` costs with N running pods.

`python -m bench.scrape --pods N [--scrapes K] [--interval S]`

What lives here: the scrape bench. N busybox pods are created and waited for (all Running) and
left to settle; then the provider's CPU (utime + stime from /proc) and its Docker API calls are
measured over an idle window, and over a window of K scrapes of
`/api/v1/nodes/<node>/proxy/metrics/cadvisor` (the real `kubectl get --raw`, as a user would
check what Prometheus reads), one every S seconds (more than the endpoint's 5 s cache, so each
scrape is a fresh stats pass: the worst case), plus one second scrape right after each (answered
from the cache). The cost of a scrape is the window's CPU and engine calls above the idle
window's rate, divided by the scrapes. Emulator plane only: the real apiserver's node proxy
refuses the loopback address the sandbox's kubelet API listens on.
Must not: import from `tests/`; create or touch pods during the windows.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from pathlib import Path

from bench import api_counts, pods, procfs, report
from bench.sandbox import BenchSandbox, start_sandbox

KUBECTL = Path(sys.executable).parent / "kubectl"


async def _scrape(sandbox: BenchSandbox) -> str:
    path = f"/api/v1/nodes/{sandbox.node}/proxy/metrics/cadvisor"
    proc = await asyncio.create_subprocess_exec(
        str(KUBECTL), "--kubeconfig", str(sandbox.kubeconfig), "get", "--raw", path,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl get --raw {path}: {err.decode(errors='replace')[-300:]}")
    return out.decode()


def _series(text: str, family: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith(family + "{"))


async def bench(args: argparse.Namespace) -> None:
    if args.control_plane != "emulator":
        raise SystemExit("bench.scrape runs on the emulator plane (see the module's docstring)")
    sandbox = await start_sandbox(
        args.control_plane, args.kube_bin, count_docker=True, pods_per_node=args.pods
    )
    try:
        await pods.settled_pods(sandbox, args.pods, args.timeout, args.settle)
        assert sandbox.proxy is not None
        pid = sandbox.provider_pid
        window = args.scrapes * args.interval

        report.progress(f"idle window, {window:g} s")
        docker_before, cpu_before, start = (
            Counter(sandbox.proxy.counts),
            procfs.cpu_seconds(pid),
            time.monotonic(),
        )
        await asyncio.sleep(window)
        idle_cpu, idle_seconds = procfs.cpu_seconds(pid) - cpu_before, time.monotonic() - start
        idle_docker = sum(api_counts.diff(sandbox.proxy.counts, docker_before).values())

        report.progress(f"scrape window: {args.scrapes} scrapes, one every {args.interval:g} s")
        docker_before, cpu_before, start = (
            Counter(sandbox.proxy.counts),
            procfs.cpu_seconds(pid),
            time.monotonic(),
        )
        text = ""
        cached_cpu = 0.0
        for i in range(args.scrapes):
            text = await _scrape(sandbox)
            before_cached = procfs.cpu_seconds(pid)
            await _scrape(sandbox)  # within the cache's 5 s: no stats pass
            cached_cpu += procfs.cpu_seconds(pid) - before_cached
            await asyncio.sleep(max(0.0, start + (i + 1) * args.interval - time.monotonic()))
        scrape_cpu, scrape_seconds = procfs.cpu_seconds(pid) - cpu_before, time.monotonic() - start
        scrape_docker = api_counts.diff(sandbox.proxy.counts, docker_before)
    finally:
        await sandbox.stop()

    idle_rate = idle_cpu / idle_seconds
    per_scrape_ms = 1000.0 * (scrape_cpu - idle_rate * scrape_seconds - cached_cpu) / args.scrapes
    cached_ms = 1000.0 * cached_cpu / args.scrapes
    docker_per_scrape = (
        sum(scrape_docker.values()) - idle_docker * scrape_seconds / idle_seconds
    ) / args.scrapes
    containers = _series(text, "container_cpu_usage_seconds_total")
    print(f"## /metrics/cadvisor: {args.pods} running pods, {args.scrapes} scrapes ({args.control_plane})\n")
    print(
        report.markdown_table(
            ["measure", "value"],
            [
                ["provider CPU, idle (% of one core)", 100.0 * idle_rate],
                ["provider CPU per fresh scrape (ms, above idle)", per_scrape_ms],
                ["provider CPU per cached scrape (ms)", cached_ms],
                ["Docker API calls per scrape (above idle)", docker_per_scrape],
                ["container_cpu_usage_seconds_total series", containers],
                ["response bytes", len(text.encode())],
            ],
        )
    )
    print("\n### Docker API calls in the scrape window (provider to engine)\n")
    rows = [[key, n] for key, n in sorted(scrape_docker.items())]
    print(report.markdown_table(["method and path", "calls"], rows))
    print()
    report.print_result(
        args,
        {
            "cpu_ms_per_scrape": per_scrape_ms,
            "cpu_ms_per_cached_scrape": cached_ms,
            "docker_calls_per_scrape": docker_per_scrape,
            "series": containers,
            "bytes": len(text.encode()),
        },
    )


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scrapes", type=int, default=12, metavar="K", help="fresh scrapes (default: 12)")
    parser.add_argument(
        "--interval", type=float, default=6.0, metavar="S", help="seconds between scrapes (default: 6)"
    )
    report.settle_argument(parser, 20.0)


def main(argv: list[str] | None = None) -> int:
    return report.main(
        argv, "python -m bench.scrape", "what a /metrics/cadvisor scrape costs with N pods", bench, arguments
    )


if __name__ == "__main__":
    sys.exit(main())
