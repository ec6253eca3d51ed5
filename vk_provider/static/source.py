"""StaticPodSource: the static pods defined by the manifest files in one directory.

What lives here: `StaticPodSource`, which scans the configured path (a directory of
`.yaml`/`.yml`/`.json` files, hidden files skipped, or a single file), watches it with
watchfiles and re-reads it every `relist_interval` seconds, and hands the complete set of
good static pods (`dict[uid, pod]`) to an async callback whenever that set changes; and
`BadManifest`, one file that could not become a pod, delivered as the complete current
list to a second callback whenever that list changes (each newly bad file is also logged
as a warning); `BadManifestEvents`, that second callback as the provider wires it: a
Warning Event on the Node for each newly bad file. Also `scan`, the blocking scan itself
(run in a thread). Must not: start containers, talk to the apiserver (Events go through
the recorder), or stop on a bad file: the other files keep their pods.

Upstream: pkg/kubelet/config/file.go and file_linux.go (listing, 10 MiB limit, dot-files
skipped, watch restart backoff 1 s to 20 s).
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import watchfiles

from vk_common.logging import get_logger
from vk_common.objects import full_name, uid
from vk_common.tasks import cancel_and_wait
from vk_provider.kube.events import EventRecorder
from vk_provider.static.manifest import MAX_MANIFEST_BYTES, ManifestError, parse_manifest

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
WATCH_RETRY_MIN = 1.0
WATCH_RETRY_MAX = 20.0
BAD_MANIFEST_REASON = "FailedStaticPodManifest"

log = get_logger("static")

Pod = dict[str, Any]
PodsCallback = Callable[[dict[str, Pod]], Awaitable[None]]
ErrorsCallback = Callable[[list["BadManifest"]], Awaitable[None]]


@dataclass(frozen=True)
class BadManifest:
    """A file named like a manifest that gives no pod, and why (one line)."""

    path: str
    reason: str


class BadManifestEvents:
    """An `on_errors` callback: a Warning Event on the Node for each newly bad file."""

    def __init__(self, recorder: EventRecorder, node_ref: Mapping[str, Any]) -> None:
        self._recorder = recorder
        self._node_ref = node_ref
        self._reported: set[tuple[str, str]] = set()

    async def __call__(self, bad: list[BadManifest]) -> None:
        current = {(b.path, b.reason) for b in bad}
        for path, reason in sorted(current - self._reported):
            self._recorder.event(self._node_ref, "Warning", BAD_MANIFEST_REASON, f"{path}: {reason}")
        self._reported = current


@dataclass(frozen=True)
class ScanResult:
    pods: dict[str, Pod]  # by UID
    bad: list[BadManifest]
    missing: bool  # the configured path does not exist


def scan(path: str, node_name: str, now: datetime, previous: Mapping[str, Pod]) -> ScanResult:
    """Read every manifest under `path` (blocking). A pod whose UID is in `previous` is
    taken from there unchanged, so its `kubernetes.io/config.seen` stays the first sight."""
    root = Path(path)
    try:
        root_stat = root.stat()
    except FileNotFoundError:
        return ScanResult({}, [], missing=True)
    except OSError as exc:
        return ScanResult({}, [BadManifest(path, f"cannot read the static pod path: {exc}")], False)
    if stat.S_ISDIR(root_stat.st_mode):
        try:
            names = sorted(os.listdir(root))
        except OSError as exc:
            return ScanResult({}, [BadManifest(path, f"cannot list the directory: {exc}")], False)
        files = [root / n for n in names if not n.startswith(".") and n.endswith(MANIFEST_SUFFIXES)]
    else:
        files = [root]

    parsed: list[tuple[str, Pod]] = []
    bad: list[BadManifest] = []
    for file in files:
        try:
            parsed.append((str(file), _read_one(file, node_name, now)))
        except ManifestError as exc:
            bad.append(BadManifest(str(file), str(exc)))
    owners = _owners(parsed, previous)
    pods: dict[str, Pod] = {}
    for file_name, pod in parsed:
        pod_uid, name = uid(pod), full_name(pod)
        if owners[name] != file_name:
            bad.append(BadManifest(file_name, f"pod {name} is already defined by {owners[name]}"))
        elif pod_uid in pods:
            bad.append(BadManifest(file_name, f"pod UID {pod_uid} is already used by another file"))
        else:
            pods[pod_uid] = previous.get(pod_uid, pod)
    bad.sort(key=lambda b: b.path)
    return ScanResult(pods, bad, missing=False)


def _owners(parsed: list[tuple[str, Pod]], previous: Mapping[str, Pod]) -> dict[str, str]:
    """Which file defines each pod (namespace/name) when several do: the one whose pod the
    last snapshot already holds, so a newly added twin cannot replace a running pod; else
    the first in name order."""
    owners: dict[str, str] = {}
    kept: set[str] = set()  # pods whose owner is the file of the last snapshot's pod
    for file_name, pod in parsed:
        name = full_name(pod)
        held = uid(pod) in previous
        if name not in owners or (held and name not in kept):
            owners[name] = file_name
            if held:
                kept.add(name)
    return owners


def _read_one(file: Path, node_name: str, now: datetime) -> Pod:
    try:
        info = file.stat()
    except OSError as exc:
        raise ManifestError(f"cannot read: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ManifestError("is a directory, not a manifest file")
    if not stat.S_ISREG(info.st_mode):
        raise ManifestError("is not a regular file")
    if info.st_size > MAX_MANIFEST_BYTES:
        raise ManifestError(f"file is larger than {MAX_MANIFEST_BYTES} bytes (10 MiB)")
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise ManifestError(f"cannot read: {exc.strerror}") from None
    return parse_manifest(data, str(file), node_name, now)


class StaticPodSource:
    """Watches the static pod path and reports the current pods and bad files.

    `start()` scans once, delivering the first snapshot (possibly empty) before it returns,
    then keeps watching in the background until `stop()`.
    """

    def __init__(
        self,
        path: str,
        node_name: str,
        relist_interval: float,
        *,
        on_pods: PodsCallback,
        on_errors: ErrorsCallback,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if not path:
            raise ValueError("StaticPodSource needs a path (an empty staticPods.path turns static pods off)")
        self.path = path
        self.node_name = node_name
        self.relist_interval = relist_interval
        self._on_pods = on_pods
        self._on_errors = on_errors
        self._clock = clock
        self._pods: dict[str, Pod] = {}
        self._bad: list[BadManifest] = []
        self._missing = False
        self._delivered = False
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._session: asyncio.Event | None = None  # the current watch's stop event

    def pods(self) -> dict[str, Pod]:
        """The last snapshot: static pods by UID."""
        return dict(self._pods)

    async def start(self) -> None:
        await self.rescan()
        self._tasks = [
            asyncio.create_task(self._watch_loop(), name="static-pods-watch"),
            asyncio.create_task(self._relist_loop(), name="static-pods-relist"),
        ]

    async def stop(self) -> None:
        self._stop.set()
        if self._session is not None:
            self._session.set()
        await cancel_and_wait(*self._tasks)
        self._tasks = []

    async def rescan(self) -> None:
        """Read the path now and deliver what changed (the watcher and the relist call this)."""
        async with self._lock:
            result = await asyncio.to_thread(scan, self.path, self.node_name, self._clock(), self._pods)
            if result.missing != self._missing:
                self._missing = result.missing
                if result.missing:
                    log.warning(
                        "static pod path does not exist; no static pods", extra={"path": str(self.path)}
                    )
            if not self._delivered or result.pods.keys() != self._pods.keys():
                self._pods = result.pods
                self._delivered = True
                await self._deliver(self._on_pods, dict(result.pods))
            if result.bad != self._bad:
                for bad in result.bad:
                    if bad not in self._bad:
                        log.warning(
                            "bad static pod manifest", extra={"path": str(bad.path), "reason": bad.reason}
                        )
                self._bad = result.bad
                await self._deliver(self._on_errors, list(result.bad))

    async def _deliver(self, callback: Callable[[Any], Awaitable[None]], value: Any) -> None:
        try:
            await callback(value)
        except Exception:
            log.exception("static pod callback failed")

    async def _relist_loop(self) -> None:
        while True:
            await asyncio.sleep(self.relist_interval)
            await self.rescan()

    def _watch_target(self) -> str:
        """The directory to watch: the path itself, or its parent while the path is a single
        file or does not exist yet (so its creation is noticed)."""
        path = Path(self.path)
        return str(path) if path.is_dir() else str(path.parent)

    async def _watch_loop(self) -> None:
        """Rescan on every filesystem change; restart the watch at once when the directory to
        watch changes, and with backoff (1 s doubling to 20 s) when watching fails."""
        delay = WATCH_RETRY_MIN
        while not self._stop.is_set():
            target = self._watch_target()
            try:
                await self._watch(target)
                delay = WATCH_RETRY_MIN
                continue
            except (OSError, RuntimeError) as exc:
                log.debug(
                    "watching the static pod path failed; retrying",
                    extra={"path": str(target), "err": str(exc), "delaySeconds": round(delay)},
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, WATCH_RETRY_MAX)

    async def _watch(self, target: str) -> None:
        """Watch `target` until the source stops or the directory to watch changes. Rescans
        once the watch is set up (nothing changed before it is lost) and after every batch."""
        self._session = session = asyncio.Event()
        if self._stop.is_set():
            return
        changes = watchfiles.awatch(target, stop_event=session, recursive=False)
        # The generator's first step sets up the inotify watch before its first await.
        batch: asyncio.Future[Any] = asyncio.ensure_future(anext(changes))
        try:
            await asyncio.sleep(0)
            await self.rescan()
            while True:
                try:
                    await batch
                except StopAsyncIteration:
                    return
                await self.rescan()
                if self._watch_target() != target:
                    return
                batch = asyncio.ensure_future(anext(changes))
        finally:
            session.set()  # ends the watch thread within one step
            await asyncio.wait([batch])
            if not batch.cancelled():
                batch.exception()  # retrieved here; raised above if it mattered
            await changes.aclose()
