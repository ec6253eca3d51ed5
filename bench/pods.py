"""The bench's pods on a sandbox's node: `pod_names`, `pod_manifest`, `create_pods`,
`delete_pods`, `is_running`, `PodWatch` (a watch on the run's pods that records when each
became Running and when each was gone), and `settled_pods` (N pods created, Running, then a
settle period: where the steady-state benches start measuring).

Must not: import from `tests/`; touch a pod without this run's `RUN_LABEL`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bench.report import progress
from bench.sandbox import BenchSandbox
from vk_provider.kube.client import ApiConnectionError, ApiStatusError

NAMESPACE = "default"
RUN_LABEL = "vk-bench/run"  # the bench pods' label in the API: the run id
BUSYBOX_IMAGE = "vk-test/busybox:1"
TOLERATION = {
    "key": "virtual-kubelet.io/provider",
    "operator": "Equal",
    "value": "docker",
    "effect": "NoSchedule",
}
SLEEP = ["sleep", "3600"]


def pod_manifest(
    name: str, sandbox: BenchSandbox, command: list[str] | None = None, node: str = ""
) -> dict[str, Any]:
    """A busybox pod (`sleep 3600` unless `command`) scheduled onto `node` (the sandbox's first
    node unless given)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {RUN_LABEL: sandbox.run_id}},
        "spec": {
            "containers": [{"name": "app", "image": BUSYBOX_IMAGE, "command": command or SLEEP}],
            "automountServiceAccountToken": False,
            "nodeSelector": {"kubernetes.io/hostname": node or sandbox.node},
            "tolerations": [TOLERATION],
        },
    }


def pod_names(sandbox: BenchSandbox, count: int) -> list[str]:
    return [f"bench-{sandbox.run_id}-{i}" for i in range(count)]


async def create_pods(
    sandbox: BenchSandbox,
    names: Sequence[str],
    command: list[str] | None = None,
    nodes: Mapping[str, str] | None = None,
) -> dict[str, float]:
    """Create the pods at once (one request each, concurrently), pod `name` on `nodes[name]` if
    given, else on the first node; each pod's time.monotonic() just before its create request
    was sent."""
    sent: dict[str, float] = {}
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    async def one(name: str) -> None:
        body = pod_manifest(name, sandbox, command, (nodes or {}).get(name, ""))
        sent[name] = time.monotonic()
        await sandbox.api.create(path, body)

    await asyncio.gather(*(one(name) for name in names))
    return sent


async def delete_pods(sandbox: BenchSandbox, names: Sequence[str]) -> float:
    """Delete the pods at once with the default grace period; time.monotonic() before the first."""
    start = time.monotonic()
    await asyncio.gather(
        *(sandbox.api.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}") for name in names)
    )
    return start


def is_running(pod: dict[str, Any]) -> bool:
    """Phase Running and every container of the spec reported with `state.running`."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    wanted = {c["name"] for c in (pod.get("spec") or {}).get("containers") or []}
    running = {
        s.get("name") for s in status.get("containerStatuses") or [] if (s.get("state") or {}).get("running")
    }
    return wanted <= running


class PodWatch:
    """A watch on the run's pods (by label): when each was first seen Running, and when each was
    gone (DELETED), in time.monotonic(); it resumes or relists when the stream ends. `async with`
    starts and stops it."""

    def __init__(self, sandbox: BenchSandbox) -> None:
        self._api = sandbox.api
        self._selector = f"{RUN_LABEL}={sandbox.run_id}"
        self._path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        self.running_at: dict[str, float] = {}
        self.gone_at: dict[str, float] = {}
        self.present: set[str] = set()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        version = await self._list()
        self._task = asyncio.create_task(self._watch(version))

    async def __aenter__(self) -> PodWatch:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _seen(self, kind: str, pod: dict[str, Any]) -> None:
        now = time.monotonic()
        name = pod["metadata"]["name"]
        if kind == "DELETED":
            self.present.discard(name)
            self.gone_at.setdefault(name, now)
        else:
            self.present.add(name)
            if is_running(pod):
                self.running_at.setdefault(name, now)
        self._changed.set()

    async def _list(self) -> str:
        answer = await self._api.get(self._path, {"labelSelector": self._selector})
        listed = {pod["metadata"]["name"] for pod in answer.get("items") or []}
        for name in self.present - listed:
            self._seen("DELETED", {"metadata": {"name": name}})
        for pod in answer.get("items") or []:
            self._seen("ADDED", pod)
        return str(answer["metadata"]["resourceVersion"])

    async def _watch(self, version: str) -> None:
        while True:
            params = {
                "labelSelector": self._selector,
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "300",
            }
            try:
                async with contextlib.aclosing(self._api.watch(self._path, params)) as events:
                    async for event in events:
                        obj = event.get("object") or {}
                        if event["type"] == "ERROR":
                            version = await self._list()
                            break
                        version = obj["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            self._seen(event["type"], obj)
            except (ApiConnectionError, ApiStatusError):
                await asyncio.sleep(0.5)
                version = await self._list()

    async def wait(self, what: str, done: Callable[[], bool], deadline: float) -> None:
        end = time.monotonic() + deadline
        while not done():
            self._changed.clear()
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{what}: not within {deadline:.0f} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_running(self, names: Iterable[str], deadline: float) -> None:
        wanted = set(names)
        await self.wait(f"{len(wanted)} pods Running", lambda: wanted <= self.running_at.keys(), deadline)

    async def wait_gone(self, names: Iterable[str], deadline: float) -> None:
        wanted = set(names)
        await self.wait(f"{len(wanted)} pods gone", lambda: wanted <= self.gone_at.keys(), deadline)


async def settled_pods(sandbox: BenchSandbox, count: int, deadline: float, settle: float) -> list[str]:
    """`count` pods created and all Running, then `settle` seconds left alone; their names."""
    names = pod_names(sandbox, count)
    async with PodWatch(sandbox) as watch:
        progress(f"creating {count} pods")
        await create_pods(sandbox, names)
        await watch.wait_running(names, deadline)
    progress(f"all Running; settling {settle:g} s")
    await asyncio.sleep(settle)
    return names
