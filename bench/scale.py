"""Scale: many pods per virtual node, and several virtual nodes on one Docker engine.

`python -m bench.scale --nodes K --pods N [--seconds S] [--control-plane real]`

What lives here: the scale bench. K nodes (one provider process each, all on this machine's
engine), each advertising a pods capacity of at least N, get N busybox pods each, created at
once. It reports the time from the first create until all K*N pods are Running (and the p50 and
p99 of the per-pod times), each provider's CPU over the burst and over an idle window of S
seconds that follows, its RSS, and what the engine holds: for every pod, exactly one running
sandbox and one running app container, labelled with the node the pod is bound to. A pod
missing a container is counted `lost`; a pod with more, or a container on another node's
label, `duplicated`; a container whose pod is not in the API, `stray`.
Must not: import from `tests/`; touch the pods during the idle window.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from typing import Any

from bench import pods, procfs, report
from bench.sandbox import BenchSandbox, start_sandbox
from vk_provider.runtime.docker import labels as lb


def engine_containers(sandbox: BenchSandbox) -> list[dict[str, Any]]:
    """Every container on the engine carrying one of the sandbox's node labels (blocking)."""
    import docker

    client = docker.from_env()
    try:
        rows: list[dict[str, Any]] = []
        for node in sandbox.node_names:
            rows += client.api.containers(all=True, filters={"label": f"{lb.NODE}={node}"})
        return rows
    finally:
        client.close()


def audit(bound: dict[str, str], rows: list[dict[str, Any]]) -> dict[str, int]:
    """`bound`: pod UID -> the node it is bound to. Counts of pods lost (a container missing or
    not running), duplicated (more containers than its two, or one on another node's label),
    and stray containers (of a pod the API does not have)."""
    per_pod: dict[str, Counter[str]] = {uid: Counter() for uid in bound}
    stray = duplicated_on_other_node = 0
    for row in rows:
        labels = row.get("Labels") or {}
        uid = labels.get(lb.POD_UID, "")
        if uid not in bound:
            stray += 1
            continue
        if labels.get(lb.NODE) != bound[uid]:
            duplicated_on_other_node += 1
            continue
        per_pod[uid][f"{labels.get(lb.ROLE)}:{row.get('State')}"] += 1
    want = Counter({"sandbox:running": 1, "app:running": 1})
    lost = sum(1 for found in per_pod.values() if any(found[k] < n for k, n in want.items()))
    duplicated = sum(1 for found in per_pod.values() if sum(found.values()) > sum(want.values()))
    return {"lost": lost, "duplicated": duplicated + duplicated_on_other_node, "stray": stray}


async def bench(args: argparse.Namespace) -> None:
    sandbox = await start_sandbox(
        args.control_plane, args.kube_bin, nodes=args.nodes, pods_per_node=args.pods
    )
    try:
        names: list[str] = []
        placement: dict[str, str] = {}
        for i, node in enumerate(sandbox.node_names):
            for name in pods.pod_names(sandbox, args.pods):
                names.append(f"{name}-n{i + 1}")
                placement[names[-1]] = node
        pids = sandbox.provider_pids
        cpu_start = {pid: procfs.cpu_seconds(pid) for pid in pids}
        async with pods.PodWatch(sandbox) as watch:
            report.progress(f"creating {len(names)} pods on {args.nodes} node(s)")
            sent = await pods.create_pods(sandbox, names, nodes=placement)
            await watch.wait_running(names, args.timeout)
        running = max(watch.running_at.values())
        burst = running - min(sent.values())
        cpu_burst = {pid: procfs.cpu_seconds(pid) - cpu_start[pid] for pid in pids}
        report.progress(f"all Running in {burst:.1f} s; idle window of {args.seconds:g} s")
        cpu_idle_start, idle_start = {pid: procfs.cpu_seconds(pid) for pid in pids}, time.monotonic()
        await asyncio.sleep(args.seconds)
        window = time.monotonic() - idle_start
        cpu_idle = {pid: 100.0 * (procfs.cpu_seconds(pid) - cpu_idle_start[pid]) / window for pid in pids}
        rss = {pid: procfs.rss_mb(pid) for pid in pids}
        listed = await sandbox.api.get(
            f"/api/v1/namespaces/{pods.NAMESPACE}/pods",
            {"labelSelector": f"{pods.RUN_LABEL}={sandbox.run_id}"},
        )
        bound = {p["metadata"]["uid"]: p["spec"].get("nodeName", "") for p in listed.get("items") or []}
        misplaced = sum(
            1
            for p in listed.get("items") or []
            if p["spec"].get("nodeName") != placement.get(p["metadata"]["name"])
        )
        found = audit(bound, await asyncio.to_thread(engine_containers, sandbox))
        found["lost"] += len(names) - len(bound)
    finally:
        await sandbox.stop()

    per_pod = sorted(watch.running_at[name] - sent[name] for name in names)
    p50, p99 = report.percentile(per_pod, 50), report.percentile(per_pod, 99)
    print(f"## Scale: {args.nodes} node(s) x {args.pods} pods ({args.control_plane})\n")
    print(
        report.markdown_table(
            ["measure", "value"],
            [
                ["first create to all Running (s)", burst],
                ["per pod to Running, p50 (s)", p50],
                ["per pod to Running, p99 (s)", p99],
                [
                    "pods lost / duplicated / stray containers",
                    f"{found['lost']} / {found['duplicated']} / {found['stray']}",
                ],
                ["pods on another node than asked", misplaced],
            ],
        )
    )
    print("\n### Each provider\n")
    print(
        report.markdown_table(
            ["provider pid", "CPU during the burst (s)", "idle CPU (% of one core)", "RSS (MB)"],
            [[pid, cpu_burst[pid], cpu_idle[pid], rss[pid]] for pid in pids],
        )
    )
    print()
    report.print_result(
        args,
        {
            "seconds_to_all_running": burst,
            "p50_s": p50,
            "p99_s": p99,
            "cpu_ms_per_pod_max": 1000.0 * max(cpu_burst.values()) / args.pods,
            "idle_cpu_pct_max": max(cpu_idle.values()),
            "rss_mb_max": max(rss.values()),
            "lost": found["lost"],
            "duplicated": found["duplicated"],
            "stray": found["stray"],
            "misplaced": misplaced,
            "nodes": args.nodes,
            "pods_per_node": args.pods,
        },
    )


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=1, metavar="K", help="virtual nodes (default: 1)")
    parser.add_argument(
        "--seconds",
        type=float,
        default=30.0,
        metavar="S",
        help="the idle window after the burst (default: 30)",
    )


def main(argv: list[str] | None = None) -> int:
    return report.main(
        argv, "python -m bench.scale", "N pods on each of K virtual nodes, all at once", bench, arguments
    )


if __name__ == "__main__":
    sys.exit(main())
