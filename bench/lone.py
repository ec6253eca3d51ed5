"""Pods created one at a time beside running ones (the kubelet density test's shape), against the
raw docker-py floor measured in the same run.

`python -m bench.lone --pods 10 --background 50 [--control-plane real]`

What lives here: the provider's part (`--background` pods created at once and left Running,
then `--pods` pods created one at a time, each once the one before is Running and a second has
passed; per pod, from the client-side time just before its create request to the watch event
that shows it Running), then the floor's (the same with docker-py: the background "pods" made
at once, then one "pod" at a time, a pause container and the app in its network namespace, from
submission to both started), and the ratios provider/floor. `--background 0` measures a lone
pod on an empty node. The Kubernetes pod start-up SLO is 5 s at the 99th percentile.
Must not: import from `tests/`; leave a container behind.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from bench import docker_engine, pods, report
from bench.sandbox import start_sandbox
from bench.startup import FLOOR_CONCURRENCY, floor_pod

PAUSE_BETWEEN = 1.0  # seconds between one pod Running and the next create
SLO_P99 = 5.0


async def provider_latencies(args: argparse.Namespace) -> list[float]:
    total = args.background + args.pods
    sandbox = await start_sandbox(args.control_plane, args.kube_bin, pods_per_node=total)
    try:
        names = pods.pod_names(sandbox, total)
        background, measured = names[: args.background], names[args.background :]
        latencies: list[float] = []
        async with pods.PodWatch(sandbox) as watch:
            if background:
                report.progress(f"creating {len(background)} background pods")
                await pods.create_pods(sandbox, background)
                await watch.wait_running(background, args.timeout)
                await asyncio.sleep(args.settle)
            report.progress(f"creating {len(measured)} pods one at a time")
            for name in measured:
                sent = await pods.create_pods(sandbox, [name])
                await watch.wait_running([name], args.timeout)
                latencies.append(watch.running_at[name] - sent[name])
                await asyncio.sleep(PAUSE_BETWEEN)
        return latencies
    finally:
        report.progress("stopping the sandbox (its --clean removes the pods' containers)")
        await sandbox.stop()


def floor_latencies(background: int, count: int, settle: float) -> list[float]:
    """The floor (blocking): `background` pods at once, then `count` one at a time."""
    import docker

    run_id = uuid.uuid4().hex[:8]
    labels = {docker_engine.BENCH_LABEL: run_id}
    client = docker.from_env(max_pool_size=FLOOR_CONCURRENCY + 2)
    try:
        with ThreadPoolExecutor(FLOOR_CONCURRENCY) as pool:
            start = time.monotonic()
            made = [pool.submit(floor_pod, client.api, i, labels, run_id, start) for i in range(background)]
            for future in made:
                future.result()
        time.sleep(settle if background else 0)
        latencies = []
        for i in range(background, background + count):
            latencies.append(floor_pod(client.api, i, labels, run_id, time.monotonic()))
            time.sleep(PAUSE_BETWEEN)
        return latencies
    finally:
        client.close()
        removed = docker_engine.remove_labelled(f"{docker_engine.BENCH_LABEL}={run_id}")
        report.progress(f"removed the floor's {removed} containers")


async def bench(args: argparse.Namespace) -> None:
    provider = await provider_latencies(args)
    report.progress(f"raw docker-py floor: {args.background} pods, then {args.pods} one at a time")
    floor = await asyncio.to_thread(floor_latencies, args.background, args.pods, args.settle)
    p50, p99 = report.percentile(provider, 50), report.percentile(provider, 99)
    floor_p50, floor_p99 = report.percentile(floor, 50), report.percentile(floor, 99)
    print(f"## {args.pods} pods one at a time beside {args.background} running ({args.control_plane})\n")
    rows = [
        ["p50 (s)", p50, floor_p50, report.ratio(p50, floor_p50)],
        ["p99 (s)", p99, floor_p99, report.ratio(p99, floor_p99)],
        ["max (s)", max(provider), max(floor), report.ratio(max(provider), max(floor))],
    ]
    print(report.markdown_table(["measure", "provider", "raw Docker floor", "provider / floor"], rows))
    print(
        "\nprovider: client time before the create request to the watch event showing the pod Running;\n"
        "floor: submission to both containers started (docker-py). "
        f"The pod start-up SLO: p99 <= {SLO_P99:g} s.\n"
    )
    report.print_result(
        args,
        {
            "p50_ratio": report.ratio(p50, floor_p50),
            "p99_ratio": report.ratio(p99, floor_p99),
            "provider_p50_s": p50,
            "provider_p99_s": p99,
            "floor_p50_s": floor_p50,
            "floor_p99_s": floor_p99,
            "slo_met": p99 <= SLO_P99,
            "background": args.background,
        },
    )


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--background", type=int, default=50, metavar="N", help="pods Running beforehand (default: 50)"
    )
    report.settle_argument(parser, default=10.0)


def main(argv: list[str] | None = None) -> int:
    return report.main(
        argv,
        "python -m bench.lone",
        "pods created one at a time beside running ones, against the raw Docker floor",
        bench,
        arguments,
        pods=10,
    )


if __name__ == "__main__":
    sys.exit(main())
