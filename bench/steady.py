"""What N running pods cost when nothing happens: API requests, CPU, RSS and Docker calls.

`python -m bench.steady --pods N --seconds S [--control-plane real]`

What lives here: the steady-state bench. N busybox pods are created and waited for (all
Running), the bench's watch is closed and the pods are left alone for a settle period; then,
over a window of S seconds in which the bench sends nothing to the API, it measures the API
requests the control plane answered (by resource and verb; every client, the control plane's
own components included on the real one), the provider process's CPU (utime + stime from
/proc, as % of one core) and its RSS at the end of the window, and the Docker API calls the
provider made (counted at `docker_engine.DockerCountingProxy`, by method and path template).
Must not: import from `tests/`; touch the pods during the window.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter

from bench import api_counts, pods, procfs, report
from bench.sandbox import start_sandbox


async def bench(args: argparse.Namespace) -> None:
    sandbox = await start_sandbox(
        args.control_plane, args.kube_bin, count_docker=True, pods_per_node=args.pods
    )
    try:
        await pods.settled_pods(sandbox, args.pods, args.timeout, args.settle)

        assert sandbox.proxy is not None
        pid = sandbox.provider_pid
        api_before = await api_counts.api_requests(sandbox)
        docker_before = Counter(sandbox.proxy.counts)
        cpu_before, start = procfs.cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(args.seconds)
        cpu_after, end = procfs.cpu_seconds(pid), time.monotonic()
        docker_calls = api_counts.diff(sandbox.proxy.counts, docker_before)
        rss = procfs.rss_mb(pid)
        api = api_counts.diff(await api_counts.api_requests(sandbox), api_before)
    finally:
        await sandbox.stop()

    window = end - start
    cpu_pct = 100.0 * (cpu_after - cpu_before) / window
    docker_total = sum(docker_calls.values())
    print(f"## Steady state: {args.pods} running pods, {window:.1f} s window ({args.control_plane})\n")
    print(
        report.markdown_table(
            ["measure", "value"],
            [
                ["provider CPU (% of one core)", cpu_pct],
                ["provider RSS (MB)", rss],
                ["API requests (all clients)", sum(api.values())],
                ["pod and pods/status writes", api_counts.pod_writes(api)],
                ["Docker API calls", docker_total],
                ["Docker API calls / s", docker_total / window],
            ],
        )
    )
    print("\n### API requests in the window\n")
    print(
        report.markdown_table(["resource", "verb", "requests", "per s"], api_counts.request_rows(api, window))
    )
    print("\n### Docker API calls in the window (provider to engine)\n")
    docker_rows = [[key, n, n / window] for key, n in sorted(docker_calls.items())]
    print(report.markdown_table(["method and path", "calls", "per s"], docker_rows))
    print()
    report.print_result(
        args,
        {
            "cpu_pct": cpu_pct,
            "rss_mb": rss,
            "pod_writes": api_counts.pod_writes(api),
            "docker_calls_per_s": docker_total / window,
            "api_requests": sum(api.values()),
            "seconds": window,
        },
    )


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=60.0, metavar="S", help="the window (default: 60)")
    report.settle_argument(parser, 15.0)


def main(argv: list[str] | None = None) -> int:
    return report.main(
        argv, "python -m bench.steady", "what N running pods cost when nothing happens", bench, arguments
    )


if __name__ == "__main__":
    sys.exit(main())
