"""What the resilience suite checks after a fault: the API, Docker and the pods' history agree.

What lives here: `PodHistory`, a watch on one node's pods for the whole test that keeps every
status it saw (resuming from the last resourceVersion when the server ends the stream, and
relisting when the stream breaks or expires, so a fault on the apiserver does not end it) and
names every transition that went backwards (`watched_sandbox`: the sandbox without a provider
and a PodHistory of the node, not yet started, both stopped afterwards); `docker_disagreements`,
the differences between the pods the API holds and the containers the engine holds;
`pod_deletes`, the count of pod DELETE requests the control plane has answered (the emulator's
request counters, or the real kube-apiserver's `apiserver_request_total`), from which a test
subtracts its own to get the provider's final DELETEs.
Must not: reach into the provider, or change anything it checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.containers import labelled
from tests.support.planes import EmulatorPlane, Plane, RealPlane
from tests.support.provider_harness import ProviderHarness
from vk_common.tasks import BackgroundTask
from vk_provider.kube.client import KubeClient

NAMESPACE = "default"
NODE_LABEL = "io.vk-provider.node"
POD_UID_LABEL = "io.vk-provider.pod.uid"
ROLE_LABEL = "io.vk-provider.role"
NAME_LABEL = "io.vk-provider.container.name"
ATTEMPT_LABEL = "io.vk-provider.container.attempt"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"  # on a mirror pod: the UID of its static pod
_PHASE_RANK = {"Pending": 0, "Running": 1, "Succeeded": 2, "Failed": 2}
_TERMINAL = ("Succeeded", "Failed")


@dataclass
class _Seen:
    name: str
    statuses: list[dict[str, Any]] = field(default_factory=list)


def _restart_counts(status: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for entry in status.get(key) or []:
            counts[f"{key}/{entry.get('name')}"] = int(entry.get("restartCount", 0))
    return counts


def backwards_steps(name: str, statuses: list[dict[str, Any]]) -> list[str]:
    """The steps of one pod's status history that went backwards: a terminal phase that changed,
    a phase of lower rank (Running back to Pending), a container's restartCount that fell."""
    problems: list[str] = []
    for before, after in itertools.pairwise(statuses):
        old, new = before.get("phase"), after.get("phase")
        if old in _TERMINAL and new != old:
            problems.append(f"{name}: terminal phase {old} became {new}")
        elif _PHASE_RANK.get(str(new), 0) < _PHASE_RANK.get(str(old), 0):
            problems.append(f"{name}: phase went back from {old} to {new}")
        old_counts, new_counts = _restart_counts(before), _restart_counts(after)
        for key, count in new_counts.items():
            if count < old_counts.get(key, 0):
                problems.append(f"{name}: {key} restartCount fell from {old_counts[key]} to {count}")
    return problems


class PodHistory:
    """Every status of every pod bound to `node`, from `start()` until `stop()`."""

    def __init__(self, api: KubeClient, node: str) -> None:
        self._api = api
        self._node = node
        self._seen: dict[str, _Seen] = {}
        self.deleted: set[str] = set()  # uids the watch saw DELETED, or a relist no longer listed
        self.relists = 0
        self.watches = 0  # watch requests (a test counting the server's requests takes them out)
        self._follower = BackgroundTask(f"pod history of {node}")

    async def start(self) -> None:
        resource_version = await self._relist()
        self._follower.start(lambda: self._follow(resource_version))

    async def stop(self) -> None:
        await self._follower.stop()

    def _record(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        seen = self._seen.setdefault(str(meta.get("uid")), _Seen(str(meta.get("name"))))
        status = pod.get("status") or {}
        if not seen.statuses or seen.statuses[-1] != status:
            seen.statuses.append(status)

    async def _relist(self) -> str:
        params = {"fieldSelector": f"spec.nodeName={self._node}"}
        answer = await self._api.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params)
        listed: set[str] = set()
        for pod in answer.get("items") or []:
            self._record(pod)
            listed.add(str(pod["metadata"]["uid"]))
        self.deleted |= set(self._seen) - listed  # deleted while the watch was broken
        return str((answer.get("metadata") or {}).get("resourceVersion", ""))

    async def _follow(self, resource_version: str) -> None:
        """Watch; when the server ends the stream, resume from the last resourceVersion (every
        step is seen); on an ERROR event or a broken stream (the fault under test), relist."""
        while True:
            try:
                params = {
                    "fieldSelector": f"spec.nodeName={self._node}",
                    "resourceVersion": resource_version,
                    "allowWatchBookmarks": "true",
                }
                self.watches += 1
                stream = self._api.watch(f"/api/v1/namespaces/{NAMESPACE}/pods", params)
                expired = False
                async with contextlib.aclosing(stream) as events:
                    async for event in events:
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":
                            expired = True
                            break
                        resource_version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
                        if event.get("type") == "BOOKMARK":
                            continue
                        self._record(obj)
                        if event.get("type") == "DELETED":
                            self.deleted.add(str(obj["metadata"]["uid"]))
                if not expired:
                    continue  # the server ended the stream: resume where it stopped
            except asyncio.CancelledError:
                raise
            except Exception:  # the apiserver is down or the stream broke: that is the fault
                await asyncio.sleep(0.5)
            with contextlib.suppress(Exception):
                resource_version = await self._relist()
                self.relists += 1

    def backwards(self) -> list[str]:
        """Every backwards step of every pod seen (empty when no status went backwards)."""
        problems: list[str] = []
        for seen in self._seen.values():
            problems += backwards_steps(seen.name, seen.statuses)
        return problems

    def transitions(self) -> int:
        return sum(max(len(seen.statuses) - 1, 0) for seen in self._seen.values())


@contextlib.asynccontextmanager
async def watched_sandbox(
    node_name: str, workdir: Path, plane: Plane, max_pods: int = 110
) -> AsyncIterator[tuple[ProviderHarness, PodHistory]]:
    """The sandbox without a provider and a PodHistory of the node's pods (the test starts both
    when it wants; its node holds `max_pods`); the history is stopped, then the sandbox, afterwards."""
    async with ProviderHarness.sandbox_only(node_name, workdir, plane=plane, max_pods=max_pods) as harness:
        history = PodHistory(harness.api, node_name)
        try:
            yield harness, history
        finally:
            await history.stop()


def docker_disagreements(docker_client: Any, node: str, pods: Iterable[dict[str, Any]]) -> list[str]:
    """How the engine's containers for `node` differ from the API's `pods` (empty if they agree).

    Each pod that is Running and not being deleted has exactly one running sandbox and, per app
    container, exactly one running instance whose attempt is the status's restartCount, with at
    most one earlier instance kept (for `logs --previous`). No container belongs to a pod the
    API does not hold (an orphan). A static pod's containers carry the static pod's UID, which
    its mirror pod names in its `kubernetes.io/config.mirror` annotation."""
    by_uid: dict[str, list[Any]] = {}
    for container in labelled(docker_client, f"{NODE_LABEL}={node}"):
        by_uid.setdefault(container.labels.get(POD_UID_LABEL, ""), []).append(container)
    problems: list[str] = []
    known: set[str] = set()
    for pod in pods:
        meta, status = pod["metadata"], pod.get("status") or {}
        pod_uid = (meta.get("annotations") or {}).get(MIRROR_ANNOTATION) or meta["uid"]
        known.add(pod_uid)
        if status.get("phase") != "Running" or meta.get("deletionTimestamp"):
            continue
        mine = by_uid.get(pod_uid, [])
        sandboxes = [c for c in mine if c.labels.get(ROLE_LABEL) == "sandbox" and c.status == "running"]
        if len(sandboxes) != 1:
            problems.append(f"{meta['name']}: {len(sandboxes)} running sandboxes")
        restarts = {s["name"]: int(s.get("restartCount", 0)) for s in status.get("containerStatuses") or []}
        for spec in pod["spec"]["containers"]:
            apps = (c for c in mine if c.labels.get(ROLE_LABEL) == "app")
            instances = [c for c in apps if c.labels.get(NAME_LABEL) == spec["name"]]
            running = [c for c in instances if c.status == "running"]
            if len(running) != 1:
                problems.append(f"{meta['name']}/{spec['name']}: {len(running)} running instances")
            if len(instances) > 2:
                problems.append(f"{meta['name']}/{spec['name']}: {len(instances)} instances kept")
            newest = max((int(c.labels.get(ATTEMPT_LABEL, 0)) for c in instances), default=-1)
            if newest != restarts.get(spec["name"], 0):
                problems.append(
                    f"{meta['name']}/{spec['name']}: newest attempt {newest}, "
                    f"restartCount {restarts.get(spec['name'])}"
                )
    for uid, containers in by_uid.items():
        if uid not in known:
            names = sorted({c.labels.get("io.vk-provider.pod.name", "?") for c in containers})
            problems.append(f"orphan: {len(containers)} container(s) of pod {names} ({uid}) not in the API")
    return problems


_REQUESTS = re.compile(r"^apiserver_request_total\{([^}]*)\}\s+([0-9.e+]+)$", re.MULTILINE)


async def pod_deletes(plane: Plane, api: KubeClient) -> int:
    """How many pod DELETE requests the control plane has answered so far (any code)."""
    if isinstance(plane, EmulatorPlane):
        counters = await api.get("/debug/sandbox/counters")
        return int((counters.get("requests") or {}).get("delete pods", 0))
    assert isinstance(plane, RealPlane)
    async with plane.cluster.admin() as admin:
        code, text = await admin.request("GET", "/metrics")
    assert code == 200, text[:300]
    total = 0.0
    for labels, value in _REQUESTS.findall(text):
        subresource = re.search(r'subresource="([^"]*)"', labels)
        if 'verb="DELETE"' in labels and 'resource="pods"' in labels and not (subresource and subresource[1]):
            total += float(value)
    return int(total)
