"""NodeAgent: the one writer of this node's Node and Lease.

What lives here: the loop that, every lease-duration/4, pings the runtime, (re)registers
the Node when it is missing (taking over an existing one), brings labels/taints to ours
when what we want changed, patches nodes/status when something changed or every
`statusReportInterval`, and renews the Lease only while the runtime answers; a
Reflector on the Node so a deletion is repaired at once and `node_object()` (and
`allocatable()`, what the pods' resource fields fall back to) stays current;
kubelet-style node Events (Starting, NodeReady, NodeNotReady, re-creation).
Must not: start or stop pods' containers (shutdown leaves them running).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from vk_common.host_address import detect_node_ip
from vk_common.logging import get_logger
from vk_common.objects import format_time
from vk_common.objects import uid as uid_of
from vk_common.tasks import BackgroundTask
from vk_provider import __version__
from vk_provider.config import Config
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.kube.events import EventRecorder
from vk_provider.kube.reflector import Reflector
from vk_provider.node.build import (
    CORDONED_ANNOTATION,
    build_node,
    desired_status,
    metadata_patch,
    node_ip_from,
    node_labels,
)
from vk_provider.node.conditions import desired_conditions, ready_status, stamp_conditions, status_differs
from vk_provider.node.lease import LeaseKeeper
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import RuntimeFailure, RuntimeInfo

log = get_logger("node")

PING_TIMEOUT = 5.0
START_WAIT = 5.0  # start() returns once the node is registered with its status, or after this long
MAX_CONFLICT_RETRIES = 5


def _rv_number(obj: dict[str, Any] | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class NodeAgent:
    def __init__(
        self,
        config: Config,
        client: KubeClient,
        runtime: Runtime,
        recorder: EventRecorder,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.config = config
        self.name = config.node.name
        self._client = client
        self._runtime = runtime
        self._recorder = recorder
        self._clock = clock
        self.node_ip = node_ip_from(config.node.internal_ip, os.environ) or detect_node_ip()
        self.interval = max(0.25, config.node.lease_duration_seconds / 4)
        self._lease = LeaseKeeper(client, self.name, config.node.lease_duration_seconds)
        self._reflector = Reflector(
            client,
            "/api/v1/nodes",
            self._on_node_event,
            params={"fieldSelector": f"metadata.name={self.name}"},
            name=f"node {self.name}",
        )
        self._node: dict[str, Any] | None = None
        self._as_kubelet: bool | None = None  # runs as system:node:<name>; learnt at registration
        self._node_uid = ""
        self._missing = True  # the Node must be (re)created or taken over
        self._registered_once = False
        self._applied_meta: dict[str, Any] | None = None
        self._info: RuntimeInfo | None = None
        self._runtime_error: str | None = "runtime not checked yet"
        self._network_error: str | None = None  # Runtime.network_status: Ready False, lease renewed
        self._last_status_write = 0.0
        self._last_ready = ""
        self._kick = asyncio.Event()
        self._registered = asyncio.Event()
        self._task = BackgroundTask(f"node agent {self.name}")

    # --- public -----------------------------------------------------------------------

    def node_object(self) -> dict[str, Any]:
        """The last Node object written or read (empty before registration)."""
        return dict(self._node or {})

    def allocatable(self) -> Mapping[str, str]:
        """The Node's `status.allocatable` as last written or read (empty before registration)."""
        allocatable: Mapping[str, str] = ((self._node or {}).get("status") or {}).get("allocatable") or {}
        return allocatable

    async def start(self) -> None:
        log.info("starting node agent", extra={"node": self.name, "internalIP": self.node_ip})
        self._recorder.event(self.node_ref(), "Normal", "Starting", f"Starting vk-provider {__version__}.")
        self._task.start(self._run)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._registered.wait(), START_WAIT)
        if not self._registered.is_set():
            log.warning(
                "node is not registered yet; still trying in the background", extra={"node": self.name}
            )

    async def stop(self) -> None:
        """Stop renewing the lease and writing status; cordon if configured. Pods are left alone."""
        await self._task.stop()
        await self._reflector.stop()
        if self.config.node.cordon_on_shutdown and self._node_uid:
            try:
                patch = {
                    "metadata": {"annotations": {CORDONED_ANNOTATION: "true"}},
                    "spec": {"unschedulable": True},
                }
                self._node = await self._client.patch(f"/api/v1/nodes/{self.name}", patch, "merge")
                log.info("cordoned node on shutdown", extra={"node": self.name})
            except ApiStatusError as exc:
                log.warning("could not cordon the node", extra={"node": self.name, "err": str(exc)})
        log.info("node agent stopped; lease no longer renewed")

    # --- loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        await self._reflector.start()
        loop = asyncio.get_running_loop()
        next_tick = loop.time()
        while True:
            scheduled = loop.time() >= next_tick
            if scheduled:
                next_tick = max(next_tick + self.interval, loop.time())
            try:
                await self._tick(scheduled)
            except asyncio.CancelledError:
                raise
            except ApiStatusError as exc:
                log.warning(
                    "apiserver call failed; trying again",
                    extra={
                        "node": self.name,
                        "err": str(exc),
                        "retryInSeconds": round(max(0.0, next_tick - loop.time()), 1),
                    },
                )
            except Exception:
                log.exception("node heartbeat failed", extra={"node": self.name})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), max(0.0, next_tick - loop.time()))
            self._kick.clear()

    async def _tick(self, scheduled: bool) -> None:
        if scheduled:
            await self._check_runtime()
        failure: Exception | None = None
        try:
            if self._missing:
                await self._register()
            await self._sync_metadata()
            await self._sync_status()
            if not self._missing:
                self._registered.set()  # registered and its status written: start() may return
        except Exception as exc:
            failure = exc  # the heartbeat does not depend on the status write having worked
        if scheduled and self._runtime_error is None and self._node_uid:
            await self._lease.renew(self._node_uid, self._clock())
        if failure is not None:
            raise failure

    async def _check_runtime(self) -> None:
        was = self._runtime_error
        try:
            await asyncio.wait_for(self._runtime.ping(), PING_TIMEOUT)
            if was is not None or self._info is None:
                self._info = await self._runtime.info()
            self._runtime_error = None
            self._network_error = await self._runtime.network_status()
        except RuntimeFailure as exc:
            self._runtime_error = exc.message
        except TimeoutError:
            self._runtime_error = f"container runtime did not answer ping within {PING_TIMEOUT:.0f}s"
        if self._runtime_error != was and (was is None or self._runtime_error is None):
            if self._runtime_error is None:
                log.info("container runtime answers; node is ready", extra={"node": self.name})
            else:
                log.warning(
                    "container runtime down, lease not renewed",
                    extra={"node": self.name, "err": self._runtime_error},
                )

    # --- registration -----------------------------------------------------------------

    async def _identify(self) -> bool:
        """Whether our credentials are a kubelet's (`system:node:<name>` in `system:nodes`), by a
        SelfSubjectReview; False where the apiserver has none to offer."""
        try:
            review = await self._client.create(
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            )
        except ApiStatusError as exc:
            log.debug("no SelfSubjectReview; assuming a non-node identity", extra={"err": str(exc)})
            return False
        user = (review.get("status") or {}).get("userInfo") or {}
        as_kubelet = str(user.get("username", "")).startswith("system:node:") and "system:nodes" in (
            user.get("groups") or []
        )
        if as_kubelet:
            left_out = sorted(
                set(node_labels(self.config.node, None))
                - set(node_labels(self.config.node, None, as_kubelet=True))
            )
            log.info(
                "running under NodeRestriction: node labels a kubelet may not set are left out",
                extra={"user": user.get("username"), "leftOut": left_out},
            )
        return as_kubelet

    async def _register(self) -> None:
        """Create the Node, or take over the one that exists."""
        if self._as_kubelet is None:
            self._as_kubelet = await self._identify()
        try:
            current = await self._client.get(f"/api/v1/nodes/{self.name}")
        except ApiStatusError as exc:
            if exc.status != 404:
                raise
            current = None
        if current is None:
            conditions = stamp_conditions(
                [], desired_conditions(self._runtime_error, self._network_error), self._now()
            )
            body = build_node(self.config, self._info, self.node_ip, conditions, as_kubelet=self._as_kubelet)
            try:
                current = await self._client.create("/api/v1/nodes", body)
            except ApiStatusError as exc:
                if exc.status != 409:
                    raise
                current = await self._client.get(f"/api/v1/nodes/{self.name}")
            else:
                if self._registered_once:
                    log.warning("node was deleted while running; re-created it", extra={"node": self.name})
                    self._recorder.event(
                        current,
                        "Warning",
                        "NodeRecreated",
                        f"Node {self.name} was deleted from the API while vk-provider was running; "
                        "registered it again",
                    )
                else:
                    log.info("registered node", extra={"node": self.name})
                    self._recorder.event(current, "Normal", "RegisteredNode", f"Registered Node {self.name}")
                self._applied_meta = None
                self._last_status_write = 0.0  # the created status may not be kept: write it now
        else:
            log.info("node exists; taking it over", extra={"node": self.name})
            self._applied_meta = None
        self._set_node(current, force=True)
        self._node_uid = uid_of(current)
        self._missing = False
        self._registered_once = True

    async def _sync_metadata(self) -> None:
        """Bring labels/taints/providerID to ours after registration or when what we want changed."""
        want = {"info": self._info, "node": self.config.node}
        if self._applied_meta == want or self._node is None:
            return
        for _ in range(MAX_CONFLICT_RETRIES):
            patch = metadata_patch(self._node, self.config, self._info, as_kubelet=bool(self._as_kubelet))
            if patch is None:
                break
            try:
                self._set_node(await self._client.patch(f"/api/v1/nodes/{self.name}", patch, "merge"))
                log.info("updated labels and taints of the node", extra={"node": self.name})
                break
            except ApiStatusError as exc:
                if exc.status == 404:
                    self._missing = True
                    return
                if exc.status != 409:
                    raise
                self._set_node(await self._client.get(f"/api/v1/nodes/{self.name}"), force=True)
        self._applied_meta = want

    async def _sync_status(self) -> None:
        if self._node is None:
            return
        api_status = self._node.get("status") or {}
        conditions = desired_conditions(self._runtime_error, self._network_error)
        probe = desired_status(self.config, self._info, self.node_ip, conditions)
        due = time.monotonic() - self._last_status_write >= self.config.node.status_report_interval
        if not due and self._last_status_write and not status_differs(api_status, probe):
            return
        if (
            not due
            and self._runtime_error is not None
            and ready_status(api_status.get("conditions") or []) == "Unknown"
        ):
            # The lease stopped on purpose; the node lifecycle controller's Unknown stands until
            # the runtime answers again (rewriting False would only ping-pong with it).
            return
        now = self._now()
        stamped = stamp_conditions(api_status.get("conditions") or [], conditions, now)
        status = desired_status(self.config, self._info, self.node_ip, stamped)
        try:
            node = await self._client.patch(f"/api/v1/nodes/{self.name}/status", {"status": status})
        except ApiStatusError as exc:
            if exc.status == 404:
                self._missing = True
                self._kick.set()
                return
            raise
        self._set_node(node)
        self._last_status_write = time.monotonic()
        new_ready = ready_status(stamped)
        if new_ready != self._last_ready:
            self._last_ready = new_ready
            reason = "NodeReady" if new_ready == "True" else "NodeNotReady"
            log.info("node status changed", extra={"node": self.name, "reason": reason})
            self._recorder.event(node, "Normal", reason, f"Node {self.name} status is now: {reason}")

    # --- helpers ----------------------------------------------------------------------

    async def _on_node_event(self, type_: str, node: dict[str, Any]) -> None:
        if type_ == "DELETED":
            if uid_of(node) == self._node_uid:
                log.warning("node was deleted", extra={"node": self.name})
                self._missing = True
                self._node = None
                self._kick.set()
            return
        uid = uid_of(node)
        if self._node_uid and uid and uid != self._node_uid:
            log.warning("node was re-created by someone else; taking it over", extra={"node": self.name})
            self._node_uid = uid
            self._applied_meta = None
            self._set_node(node, force=True)
            self._kick.set()
            return
        self._set_node(node)

    def _set_node(self, node: dict[str, Any], *, force: bool = False) -> None:
        """Keep the newest view of our Node (watch events may trail our own writes)."""
        if force or self._node is None or _rv_number(node) >= _rv_number(self._node):
            self._node = node

    def node_ref(self) -> dict[str, Any]:
        """The Node as an event's involved object (the kubelet uses the node name as its UID)."""
        return {"kind": "Node", "metadata": {"name": self.name}}

    def _now(self) -> str:
        return format_time(self._clock())
