"""Pod workers on an in-memory runtime, for the unit tests of pods/workers.py and its rules.

What lives here: `MemoryRuntime` (the Runtime protocol over records: containers start at once, a
test ends one with `exit(uid, name, code)`; images are present, except `missing_images` (whose
pull fails) and `pullable_images` (absent until pulled; `pulls` records each pull, `image_asks`
each presence check); the sandbox of a pod in `refusals` is refused, and every sandbox waits for
`sandbox_hold` when a test sets it; it is a runtime that is not Docker, so the workers, the
kuberuntime layer and the kubelet API are driven here through the narrowed Runtime alone), the
`Statuses` and `Events`
sinks the workers publish to, `make_pod` / `box` (a pod and a busybox container as the workers
see them), and `running_rig`: started PodWorkers on all of these, yielded as a `Rig`.
Must not: decide anything the workers decide (the records only change when the workers call
the runtime or a test ends a container).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from tests.support.images import BUSYBOX_IMAGE
from vk_provider.kube.keyring import Keyring
from vk_provider.pods.backoff import Backoff
from vk_provider.pods.config import PodConfig
from vk_provider.pods.env import ObjectGetter
from vk_provider.pods.workers import PodWorkers
from vk_provider.runtime.configs import ContainerConfig, HostSecurity, SandboxConfig
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    EventsResumed,
    ImagePullError,
    PodRuntimeState,
    PodSandboxState,
    PodSpecRefused,
    PulledImage,
    RuntimeEvent,
)

_ids = itertools.count(1)


def _now() -> datetime:
    return datetime.now(UTC)


class MemoryRuntime:
    """Containers as records; a test ends a container with `exit(uid, name, code)`."""

    def __init__(self) -> None:
        self.pods: dict[str, PodRuntimeState] = {}
        self.queue: asyncio.Queue[RuntimeEvent | EventsResumed] = asyncio.Queue()
        self.missing_images: set[str] = set()
        self.pullable_images: set[str] = set()  # absent until pulled
        self.pulls: list[str] = []
        self.stops: list[tuple[str, float]] = []
        self.removed: list[str] = []
        self.state_reads: list[str] = []
        self.refusals: dict[str, PodSpecRefused] = {}  # pod uid -> what ensure_sandbox raises
        self.storage: set[str] = set()  # pods whose volumes or files are on disk
        self.sandbox_configs: list[SandboxConfig] = []  # what ensure_sandbox was asked for
        self.container_configs: list[ContainerConfig] = []  # what start_container was asked for
        self.report_starts = False  # the engine's "start" event of each start, as Docker sends it
        self.image_asks: list[str] = []  # each image_id
        self.sandbox_hold: asyncio.Event | None = None  # ensure_sandbox waits for it when set
        self.lists = 0  # list_pods calls (the housekeeping's engine lists)

    def _put(self, uid: str, **changes: Any) -> None:
        self.pods[uid] = dataclasses.replace(self.pods[uid], **changes)

    async def list_pods(self) -> dict[str, PodRuntimeState]:
        self.lists += 1
        return dict(self.pods)

    def host_security(self) -> HostSecurity:
        return HostSecurity()

    async def image_user(self, image: str) -> str:
        return ""

    async def pod_state(self, uid: str) -> PodRuntimeState | None:
        self.state_reads.append(uid)
        return self.pods.get(uid)

    def events(self) -> AsyncIterator[RuntimeEvent | EventsResumed]:
        async def stream() -> AsyncIterator[RuntimeEvent | EventsResumed]:
            while True:
                yield await self.queue.get()

        return stream()

    async def image_id(self, image: str) -> str | None:
        self.image_asks.append(image)
        return None if image in self.missing_images or image in self.pullable_images else "sha256:" + image

    async def pull_image(self, image: str, keyring: Keyring) -> PulledImage:
        self.pulls.append(image)
        if image in self.missing_images:
            raise ImagePullError(f"pull access denied for {image}")
        self.pullable_images.discard(image)
        return PulledImage("sha256:" + image, 1234, 0.5)

    async def ensure_sandbox(self, config: SandboxConfig) -> PodSandboxState:
        meta = config.metadata
        if self.sandbox_hold is not None:
            await self.sandbox_hold.wait()
        if meta.uid in self.refusals:
            raise self.refusals[meta.uid]
        self.sandbox_configs.append(config)
        state = self.pods.get(meta.uid)
        if state is not None and state.sandbox is not None and state.sandbox.running:
            return state.sandbox
        sandbox = PodSandboxState(f"s{next(_ids)}", True, "172.30.0.9", _now())
        if state is None:
            self.pods[meta.uid] = PodRuntimeState(meta.uid, meta.namespace, meta.name, sandbox)
        else:
            self._put(meta.uid, sandbox=sandbox)
        if self.report_starts:
            self.queue.put_nowait(
                RuntimeEvent(meta.uid, "POD", ContainerRole.SANDBOX, "start", sandbox.container_id)
            )
        return sandbox

    async def setup_host_paths(self, volumes: Sequence[tuple[str, str, str]]) -> dict[str, str]:
        return {}

    async def start_container(self, config: ContainerConfig) -> ContainerInstance:
        uid = config.metadata.uid
        self.container_configs.append(config)
        inst = ContainerInstance(
            name=config.name,
            role=config.role,
            attempt=config.attempt,
            container_id=f"c{next(_ids)}",
            image=config.image,
            image_id="sha256:x",
            state=ContainerRunState.RUNNING,
            created_at=_now(),
            started_at=_now(),
            spec_hash=config.spec_hash,
        )
        self._put(uid, containers=(*self.pods[uid].containers, inst))
        if self.report_starts:
            self.queue.put_nowait(RuntimeEvent(uid, config.name, config.role, "start", inst.container_id))
        return inst

    def exit(self, uid: str, name: str, code: int, *, event: bool = True) -> None:
        """The container ends with `code`; `event=False`: unreported (an engine that restarted)."""
        state = self.pods[uid]
        latest = state.latest(name)
        assert latest is not None
        done = dataclasses.replace(latest, state=ContainerRunState.EXITED, exit_code=code, finished_at=_now())
        self._put(uid, containers=tuple(done if c is latest else c for c in state.containers))
        if event:
            self.queue.put_nowait(RuntimeEvent(uid, name, latest.role, "die", latest.container_id, code))

    async def stop_container(
        self, container_id: str, grace_seconds: float, signal: str | None = None
    ) -> None:
        self.stops.append((container_id, grace_seconds))
        for uid, state in self.pods.items():
            if state.sandbox is not None and state.sandbox.container_id == container_id:
                self._put(uid, sandbox=dataclasses.replace(state.sandbox, running=False))
            for c in state.containers:
                if c.container_id == container_id and c.state == ContainerRunState.RUNNING:
                    self.exit(uid, c.name, 137)

    async def exec_in_container(self, container_id: str, command: list[str], timeout_seconds: float) -> Any:
        return 0, b""

    async def prune_pod(self, uid: str) -> None:
        return None

    async def remove_pod(self, uid: str) -> None:
        self.removed.append(uid)
        self.pods.pop(uid, None)
        self.storage.discard(uid)

    async def list_pod_storage(self) -> set[str]:
        return set(self.storage)


class Statuses:
    def __init__(self) -> None:
        self.cache: dict[str, dict[str, Any]] = {}
        self.terminated: list[str] = []
        self.removed: list[str] = []

    def set_pod_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None:
        self.cache[pod["metadata"]["uid"]] = status

    def get_pod_status(self, uid: str) -> dict[str, Any] | None:
        return self.cache.get(uid)

    def cached_status(self, uid: str) -> Mapping[str, Any] | None:
        return self.cache.get(uid)

    def terminate_pod(self, pod: Mapping[str, Any]) -> None:
        self.terminated.append(pod["metadata"]["uid"])

    def remove_pod(self, uid: str) -> None:
        self.removed.append(uid)

    def set_container_readiness(self, uid: str, container_name: str, ready: bool) -> None:
        return None

    def set_container_startup(self, uid: str, container_name: str, started: bool) -> None:
        return None


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, field_path: str = ""
    ) -> None:
        self.seen.append((type_, reason, message))


async def no_objects(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    return None


def make_pod(uid: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"uid": uid, "name": uid, "namespace": "default"},
        "spec": {"containers": containers, **spec},
    }


def box(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": BUSYBOX_IMAGE, **extra}


Rig = tuple[MemoryRuntime, Statuses, Events, PodWorkers, PodConfig]


@contextlib.asynccontextmanager
async def running_rig(getter: ObjectGetter = no_objects, **options: Any) -> AsyncIterator[Rig]:
    """Pod workers on the in-memory runtime; `getter` serves the API objects; `options` go to PodWorkers."""
    runtime, statuses, events = MemoryRuntime(), Statuses(), Events()
    workers = PodWorkers(
        cast(Runtime, runtime),
        statuses,
        events,
        getter=getter,
        host_ip=lambda: "10.0.0.1",
        backoff=Backoff(initial=0.3, maximum=1.0),
        **options,
    )
    await workers.start()
    try:
        yield runtime, statuses, events, workers, PodConfig(workers.update)
    finally:
        await workers.stop()
