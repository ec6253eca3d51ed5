"""The emulator's limits at scale, against the real apiserver measured in the same run.

`python -m bench.apiserver [--objects N] [--writes W] [--watches K] [--concurrency C]`

What lives here: the API-server bench (issue 31, item 4). For each control plane in turn, the
emulator first, then the real kube-apiserver with its etcd, each started alone with no provider
(`vk-provider sandbox --no-provider`) on a quiet machine:
1. **create**: N ConfigMaps of 1 KiB each in a fresh namespace, C requests at a time;
2. **list**: the N objects in one list, then in pages of 500 (`limit`/`continue`);
3. **write burst**: W unconditional merge patches spread over the N objects, C at a time;
4. **watches**: K watches of the namespace opened at once, then 100 patches: the time from the
   first patch until every watch has seen all 100 events.
For each phase: its wall time and the server's CPU seconds; after each, the server's resident
memory: the sandbox process for the emulator (the server runs in it), kube-apiserver plus etcd
for the real plane (etcd counted with the real apiserver, as the issue asks). The table puts the
two side by side with their ratio (emulator / real). docs/fidelity.md quotes it.
Must not: import from `tests/`; run in `make test` (minutes, and wall-clock figures).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import procfs, report
from bench.sandbox import BenchSandbox, start_sandbox
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import KubeClient, load_configuration, make_kube_client

NAMESPACE = "bench-apiserver"
PAGE = 500
WATCH_PATCHES = 100
PAYLOAD = "x" * 1024
# The processes that make up each server (their command names, /proc/<pid>/comm).
REAL_SERVER = ("kube-apiserver", "etcd")


@dataclass
class Phase:
    seconds: float
    cpu: float


@dataclass
class PlaneFigures:
    phases: dict[str, Phase] = field(default_factory=dict)
    rss_mb: dict[str, float] = field(default_factory=dict)


def server_pids(sandbox: BenchSandbox) -> list[int]:
    """The emulator: the sandbox process itself; the real plane: its kube-apiserver and etcd."""
    if sandbox.control_plane == "emulator":
        return [sandbox.proc.pid]
    found = []
    for pid in procfs.child_pids(sandbox.proc.pid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip().startswith(REAL_SERVER):
                found.append(pid)
    return found


def _summed(read: Callable[[int], float], pids: Iterable[int]) -> float:
    """`read` (procfs.cpu_seconds, procfs.rss_mb) summed over the live processes of `pids`."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += read(pid)
    return total


def _cpu(pids: Iterable[int]) -> float:
    return _summed(procfs.cpu_seconds, pids)


def _rss(pids: Iterable[int]) -> float:
    return _summed(procfs.rss_mb, pids)


async def _bounded(concurrency: int, calls: Iterable[Callable[[], Awaitable[Any]]]) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(call: Callable[[], Awaitable[Any]]) -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one(call) for call in calls))


async def _measured(
    figures: PlaneFigures, name: str, pids: list[int], body: Callable[[], Awaitable[None]]
) -> None:
    cpu, began = _cpu(pids), time.monotonic()
    await body()
    figures.phases[name] = Phase(time.monotonic() - began, _cpu(pids) - cpu)
    figures.rss_mb[name] = _rss(pids)
    report.progress(f"{name}: {figures.phases[name].seconds:.2f} s, RSS {figures.rss_mb[name]:.0f} MB")


async def _list_all(api: KubeClient, path: str, limit: int | None) -> int:
    count, token = 0, None
    while True:
        params: dict[str, Any] = {"limit": limit} if limit else {}
        if token:
            params["continue"] = token
        page = await api.get(path, params)
        count += len(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return count


async def _watchers(sandbox: BenchSandbox, args: argparse.Namespace, api: KubeClient, path: str) -> None:
    """K watches from the current resourceVersion, then WATCH_PATCHES patches; returns when
    every watch has seen them all."""
    configuration = await load_configuration(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
    configuration.connection_pool_maxsize = args.watches + 10
    watch_client = await make_kube_client(
        KubernetesConfig(kubeconfig=str(sandbox.kubeconfig), qps=0.0, burst=1), configuration=configuration
    )
    version = (await api.get(path, {"limit": 1}))["metadata"]["resourceVersion"]
    opened = asyncio.Event()
    started = 0
    seen = [0] * args.watches

    async def watch(index: int) -> None:
        nonlocal started
        params = {"resourceVersion": version, "allowWatchBookmarks": "false", "timeoutSeconds": 600}
        stream = watch_client.watch(path, params)
        async with contextlib.aclosing(stream):
            started += 1
            if started == args.watches:
                opened.set()
            async for event in stream:
                if event.get("type") == "MODIFIED":
                    seen[index] += 1
                    if seen[index] >= WATCH_PATCHES:
                        return

    tasks = [asyncio.create_task(watch(i)) for i in range(args.watches)]
    try:
        await asyncio.wait_for(opened.wait(), args.timeout)
        await asyncio.sleep(1.0)  # the last streams' requests reach the server
        names = [f"cm-{i}" for i in range(WATCH_PATCHES)]
        await _bounded(args.concurrency, (_patcher(api, path, name, "watched") for name in names))
        await asyncio.wait_for(asyncio.gather(*tasks), args.timeout)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await watch_client.close()


def _patcher(api: KubeClient, path: str, name: str, value: str) -> Callable[[], Awaitable[Any]]:
    return lambda: api.patch(f"{path}/{name}", {"data": {"v": value}}, "merge")


async def measure(args: argparse.Namespace, control_plane: str) -> PlaneFigures:
    sandbox = await start_sandbox(control_plane, args.kube_bin, nodes=0)
    figures = PlaneFigures()
    try:
        api, pids = sandbox.api, server_pids(sandbox)
        report.progress(f"{control_plane}: server pids {pids}, RSS {_rss(pids):.0f} MB at rest")
        figures.rss_mb["at rest"] = _rss(pids)
        await api.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        path = f"/api/v1/namespaces/{NAMESPACE}/configmaps"

        def creator(i: int) -> Callable[[], Awaitable[Any]]:
            body = {"metadata": {"name": f"cm-{i}"}, "data": {"payload": PAYLOAD}}
            return lambda: api.create(path, body)

        async def create() -> None:
            await _bounded(args.concurrency, (creator(i) for i in range(args.objects)))

        async def list_once() -> None:
            assert await _list_all(api, path, None) >= args.objects  # and kube-root-ca.crt

        async def list_pages() -> None:
            assert await _list_all(api, path, PAGE) >= args.objects

        async def burst() -> None:
            calls = (_patcher(api, path, f"cm-{i % args.objects}", str(i)) for i in range(args.writes))
            await _bounded(args.concurrency, calls)

        async def watches() -> None:
            await _watchers(sandbox, args, api, path)

        for name, body in (
            (f"create {args.objects}", create),
            (f"list {args.objects} at once", list_once),
            (f"list {args.objects} in pages of {PAGE}", list_pages),
            (f"{args.writes}-patch burst", burst),
            (f"{args.watches} watches see {WATCH_PATCHES} patches", watches),
        ):
            await _measured(figures, name, pids, body)
    finally:
        await sandbox.stop()
    return figures


async def bench(args: argparse.Namespace) -> None:
    planes = {plane: await measure(args, plane) for plane in ("emulator", "real")}
    emulator, real = planes["emulator"], planes["real"]
    rows: list[list[object]] = []
    for name, phase in emulator.phases.items():
        other = real.phases[name]
        rows.append(
            [
                name,
                phase.seconds,
                other.seconds,
                report.ratio(phase.seconds, other.seconds),
                phase.cpu,
                other.cpu,
                emulator.rss_mb[name],
                real.rss_mb[name],
                report.ratio(emulator.rss_mb[name], real.rss_mb[name]),
            ]
        )
    print(f"## The emulator against the real apiserver (+ etcd), {args.objects} objects\n")
    headers = ["phase", "emulator s", "real s", "time ratio", "emulator CPU s", "real CPU s"]
    headers += ["emulator RSS MB", "real RSS MB", "RSS ratio"]
    print(report.markdown_table(headers, rows))
    print(
        f"\nAt rest before the phases: emulator {emulator.rss_mb['at rest']:.0f} MB,"
        f" real {real.rss_mb['at rest']:.0f} MB.\n"
    )
    worst_time = max(
        report.ratio(emulator.phases[n].seconds, real.phases[n].seconds) for n in emulator.phases
    )
    worst_rss = max(report.ratio(emulator.rss_mb[n], real.rss_mb[n]) for n in emulator.phases)
    print(
        report.result_line(
            {"worst_time_ratio": worst_time, "worst_rss_ratio": worst_rss, "objects": args.objects}
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.apiserver", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--objects", type=int, default=10_000, metavar="N", help="ConfigMaps (default: 10000)"
    )
    parser.add_argument(
        "--writes", type=int, default=5_000, metavar="W", help="burst patches (default: 5000)"
    )
    parser.add_argument(
        "--watches", type=int, default=500, metavar="K", help="watches at once (default: 500)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=50, metavar="C", help="requests at once (default: 50)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S", help="per phase (default: 600)")
    parser.add_argument("--kube-bin", metavar="DIR", help="the real control plane's binaries")
    return report.run(lambda: bench(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
