"""Start-up latency and throughput of N pods, against the raw docker-py floor measured in the same run.

`python -m bench.startup --pods N [--control-plane real]`

What lives here: the provider's part (N busybox pods created at once through the API; per pod,
from the client-side time just before its create request to the watch event that shows it
Running with every container running), then the floor (the same N "pods" made with docker-py
directly: a pause container, then the app container in its network namespace, from a thread pool
of the provider's default `docker.maxConcurrency`), and the ratios provider/floor.
The sandbox is stopped (its containers removed) before the floor runs, so the two never share
the engine. Beside the times, where the CPU went in each half, per pod (a coarse profile): the
whole machine's busy CPU (the engine with its runc and iptables children, the kernel, the API
server, the bench) and the client's (the provider process; the floor's docker-py threads).
`--count-docker` also counts the provider's Docker calls per pod by request (through
`docker_engine.DockerCountingProxy`: one more local hop, so that run's times are not for quoting).
Must not: import from `tests/`; leave a container behind (the floor's carry
`io.vk-provider.bench=<run>`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bench import docker_engine, pods, procfs, report
from bench.sandbox import PAUSE_IMAGE, start_sandbox
from vk_provider.config import DockerConfig

# The provider's own bound on concurrent Docker calls, which the floor uses too.
FLOOR_CONCURRENCY = DockerConfig().max_concurrency
# Where the machine's CPU goes in a run, by process (command-name prefixes); the client (the
# provider process, or the floor's docker-py threads) and the sandbox process are found by pid,
# and "the rest" is the machine's busy time less all of these (runc, iptables, the kernel, the
# bench's watch).
CLIENT, SANDBOX, BENCH = "client", "sandbox process", "the bench (creates, watch)"
REST, MACHINE = "the rest", "machine"
PROCESS_GROUPS = {
    "engine (dockerd, containerd, shims)": ("dockerd", "containerd"),
    "kube-apiserver": ("kube-apiserver",),
    "etcd": ("etcd",),
    "kube-scheduler, kube-controller-manager": ("kube-scheduler", "kube-controller"),
}
CPU_PARTS = (CLIENT, SANDBOX, BENCH, *PROCESS_GROUPS, REST, MACHINE)


@dataclass(frozen=True)
class Figures:
    """Per-pod seconds, pods per second over the whole batch, and the CPU seconds spent from the
    first create to the last pod started, by part (CPU_PARTS)."""

    latencies: list[float]
    seconds: float
    cpu: dict[str, float]

    @property
    def p50(self) -> float:
        return report.percentile(self.latencies, 50)

    @property
    def p99(self) -> float:
        return report.percentile(self.latencies, 99)

    @property
    def pods_per_s(self) -> float:
        return len(self.latencies) / self.seconds


def cpu_snapshot(client: float, sandbox_pid: int = 0, bench: float = 0.0) -> dict[str, float]:
    """Cumulative CPU seconds by part; `client` is the client's own and `bench` this process's
    (in the provider's run: its creates and its watch; in the floor's run this process is the
    client), read by the caller."""
    parts = procfs.cpu_by_command(PROCESS_GROUPS)
    parts[CLIENT] = client
    parts[BENCH] = bench
    parts[SANDBOX] = procfs.cpu_seconds(sandbox_pid) if sandbox_pid else 0.0
    parts[MACHINE] = procfs.machine_busy_seconds()
    return parts


def cpu_spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    spent = {part: after[part] - before[part] for part in before}
    spent[REST] = spent[MACHINE] - sum(v for part, v in spent.items() if part != MACHINE)
    return spent


async def provider_figures(args: argparse.Namespace) -> tuple[Figures, Counter[str]]:
    """The provider's figures, and its Docker calls by request (empty without --count-docker)."""
    sandbox = await start_sandbox(
        args.control_plane, args.kube_bin, count_docker=args.count_docker, pods_per_node=args.pods
    )
    try:
        names = pods.pod_names(sandbox, args.pods)
        calls_before = Counter(sandbox.proxy.counts) if sandbox.proxy else Counter[str]()
        async with pods.PodWatch(sandbox) as watch:
            report.progress(f"creating {args.pods} pods")
            provider, sandbox_pid = sandbox.provider_pid, sandbox.proc.pid
            before = cpu_snapshot(procfs.cpu_seconds(provider), sandbox_pid, time.process_time())
            sent = await pods.create_pods(sandbox, names)
            await watch.wait_running(names, args.timeout)
            after = cpu_snapshot(procfs.cpu_seconds(provider), sandbox_pid, time.process_time())
            cpu = cpu_spent(before, after)
        calls = sandbox.proxy.counts - calls_before if sandbox.proxy else Counter[str]()
        latencies = [watch.running_at[name] - sent[name] for name in names]
        seconds = max(watch.running_at[name] for name in names) - min(sent.values())
        return Figures(latencies, seconds, cpu), calls
    finally:
        report.progress("stopping the sandbox (its --clean removes the pods' containers)")
        await sandbox.stop()


def floor_pod(api: Any, index: int, labels: dict[str, str], run_id: str, submitted: float) -> float:
    """One "pod" the way the floor makes it: pause sandbox, then the app in its network namespace."""
    name = f"vk-bench-{run_id}-{index}"
    pause = api.create_container(PAUSE_IMAGE, name=f"{name}-pause", labels=labels)
    api.start(pause["Id"])
    app = api.create_container(
        pods.BUSYBOX_IMAGE,
        pods.SLEEP,
        name=f"{name}-app",
        labels=labels,
        host_config=api.create_host_config(network_mode=f"container:{pause['Id']}"),
    )
    api.start(app["Id"])
    return time.monotonic() - submitted


def floor_figures(pods: int) -> Figures:
    """The raw docker-py floor (blocking): N pods submitted at once to a pool of FLOOR_CONCURRENCY."""
    import docker

    run_id = uuid.uuid4().hex[:8]
    labels = {docker_engine.BENCH_LABEL: run_id}
    client = docker.from_env(max_pool_size=FLOOR_CONCURRENCY + 2)
    try:
        with ThreadPoolExecutor(FLOOR_CONCURRENCY) as pool:
            before = cpu_snapshot(time.process_time())
            start = time.monotonic()
            futures = [pool.submit(floor_pod, client.api, i, labels, run_id, start) for i in range(pods)]
            latencies = [future.result() for future in futures]
            cpu = cpu_spent(before, cpu_snapshot(time.process_time()))
        return Figures(latencies, max(latencies), cpu)
    finally:
        client.close()
        removed = docker_engine.remove_labelled(f"{docker_engine.BENCH_LABEL}={run_id}")
        report.progress(f"removed the floor's {removed} containers")


async def bench(args: argparse.Namespace) -> None:
    provider, calls = await provider_figures(args)
    report.progress(f"raw docker-py floor: {args.pods} pods, {FLOOR_CONCURRENCY} threads")
    floor = await asyncio.to_thread(floor_figures, args.pods)
    rows = [
        ["p50 (s)", provider.p50, floor.p50, report.ratio(provider.p50, floor.p50)],
        ["p99 (s)", provider.p99, floor.p99, report.ratio(provider.p99, floor.p99)],
        [
            "pods/s",
            provider.pods_per_s,
            floor.pods_per_s,
            report.ratio(provider.pods_per_s, floor.pods_per_s),
        ],
        _per_pod_ms("machine CPU per pod (ms)", provider.cpu[MACHINE], floor.cpu[MACHINE], args.pods),
    ]
    print(f"## Start-up of {args.pods} pods ({args.control_plane})\n")
    print(report.markdown_table(["measure", "provider", "raw Docker floor", "provider / floor"], rows))
    print(
        "\nprovider: client time before each create request to the watch event showing the pod "
        "Running with all containers running;\nfloor: submission to both containers started "
        f"(docker-py, {FLOOR_CONCURRENCY} threads).\n"
        "machine CPU: all cores' busy time, from the first create to the last pod Running.\n"
    )
    print("### Where the machine's CPU went (ms per pod; client: the provider, or docker-py)\n")
    cpu_rows = [
        [part, 1000.0 * provider.cpu[part] / args.pods, 1000.0 * floor.cpu[part] / args.pods]
        for part in CPU_PARTS
    ]
    print(report.markdown_table(["process", "provider run", "floor run"], cpu_rows) + "\n")
    if args.count_docker:
        print(f"### The provider's Docker calls per pod ({args.pods} pods, through the counting proxy)\n")
        rows = [[key, calls[key] / args.pods] for key in sorted(calls, key=lambda k: -calls[k])]
        rows.append(["all", sum(calls.values()) / args.pods])
        print(report.markdown_table(["request", "per pod"], rows) + "\n")
    report.print_result(
        args,
        {
            "p50_ratio": report.ratio(provider.p50, floor.p50),
            "p99_ratio": report.ratio(provider.p99, floor.p99),
            "throughput_ratio": report.ratio(provider.pods_per_s, floor.pods_per_s),
            "provider_p50_s": provider.p50,
            "provider_p99_s": provider.p99,
            "provider_pods_per_s": provider.pods_per_s,
            "floor_p50_s": floor.p50,
            "floor_p99_s": floor.p99,
            "floor_pods_per_s": floor.pods_per_s,
            "machine_cpu_ratio": report.ratio(provider.cpu[MACHINE], floor.cpu[MACHINE]),
            "client_ms": 1000.0 * provider.cpu[CLIENT] / args.pods,
            "floor_client_ms": 1000.0 * floor.cpu[CLIENT] / args.pods,
        },
    )


def _per_pod_ms(label: str, provider: float, floor: float, pods: int) -> list[object]:
    return [label, 1000.0 * provider / pods, 1000.0 * floor / pods, report.ratio(provider, floor)]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--count-docker",
        action="store_true",
        help="also count the provider's Docker calls per pod (one more hop: times not for quoting)",
    )


def main(argv: list[str] | None = None) -> int:
    return report.main(
        argv, "python -m bench.startup", "start-up of N pods against the raw Docker floor", bench, arguments
    )


if __name__ == "__main__":
    sys.exit(main())
