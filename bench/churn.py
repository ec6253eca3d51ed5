"""Churn: N pods created, Running, deleted with the default grace period, and gone from the API.

`python -m bench.churn --pods N [--control-plane real]`

What lives here: the churn bench. It counts the API requests the control plane answered from
just before the creates until a short while after the last pod is gone, and reports the
seconds from the first create to the last pod gone (with the two halves), the pods/status
writes (PATCH and PUT) per pod, and the node's final DELETEs per pod: every pod DELETE the
control plane answered minus the bench's own N (the emulator's counters do not tell clients
apart, nor does `apiserver_request_total`). The pods' app traps SIGTERM and exits, so the
default grace period (30 s) is not simply waited out and the figure shows the provider's work.
Must not: import from `tests/`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from bench import api_counts, pods, report
from bench.sandbox import start_sandbox

# Exits on SIGTERM (a bare `sleep` as PID 1 ignores it and would wait out the 30 s grace period).
TRAPPING_SLEEP = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
TAIL_SECONDS = 2.0  # after the last pod is gone, for requests still in flight to be counted


async def bench(args: argparse.Namespace) -> None:
    sandbox = await start_sandbox(args.control_plane, args.kube_bin, pods_per_node=args.pods)
    try:
        names = pods.pod_names(sandbox, args.pods)
        async with pods.PodWatch(sandbox) as watch:
            before = await api_counts.api_requests(sandbox)
            report.progress(f"creating {args.pods} pods")
            sent = await pods.create_pods(sandbox, names, TRAPPING_SLEEP)
            await watch.wait_running(names, args.timeout)
            running = time.monotonic()
            report.progress("all Running; deleting them")
            deleted = await pods.delete_pods(sandbox, names)
            await watch.wait_gone(names, args.timeout)
            gone = max(watch.gone_at[name] for name in names)
        await asyncio.sleep(TAIL_SECONDS)
        api = api_counts.diff(await api_counts.api_requests(sandbox), before)
    finally:
        await sandbox.stop()

    start = min(sent.values())
    seconds = gone - start
    status_writes = api_counts.status_writes(api)
    final_deletes = api.get("delete pods", 0) - args.pods
    print(f"## Churn of {args.pods} pods ({args.control_plane})\n")
    print(
        report.markdown_table(
            ["measure", "value"],
            [
                ["first create to all Running (s)", running - start],
                ["delete requests to all gone (s)", gone - deleted],
                ["first create to all gone (s)", seconds],
                ["pods/status writes per pod", status_writes / args.pods],
                ["final DELETEs per pod (the node's)", final_deletes / args.pods],
            ],
        )
    )
    print("\n### API requests, first create to all gone (all clients, the bench's own included)\n")
    print(report.markdown_table(["resource", "verb", "requests"], api_counts.request_rows(api)))
    print()
    report.print_result(
        args,
        {
            "status_writes_per_pod": status_writes / args.pods,
            "final_deletes_per_pod": final_deletes / args.pods,
            "seconds": seconds,
        },
    )


def main(argv: list[str] | None = None) -> int:
    return report.main(argv, "python -m bench.churn", "N pods created, Running, deleted and gone", bench)


if __name__ == "__main__":
    sys.exit(main())
