"""MirrorPods control flow over an in-memory apiserver double: races and failures the sandbox
cannot be made to produce on demand (AlreadyExists, a UID precondition that fails, finalizers,
late watch events, an unreachable apiserver). The real apiserver behaviour is covered by
tests/integration/test_static_mirror_pods.py.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any, cast

from vk_common.objects import MIRROR_ANNOTATION
from vk_provider.kube.client import ApiConnectionError, ApiStatusError, KubeClient
from vk_provider.kube.events import EventRecorder
from vk_provider.static.mirror import MirrorPods
from vk_provider.static.mirror_plan import build_mirror_pod

NODE = "node-a"
POD_PATH = "/api/v1/namespaces/default/pods/web-node-a"


class FakeApi:
    """Pods by name in namespace `default` and one Node; DELETE honours preconditions and finalizers."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.down = False
        self._uids = itertools.count(1)

    def add(self, pod: dict[str, Any]) -> dict[str, Any]:
        pod = copy.deepcopy(pod)
        pod["metadata"].setdefault("uid", f"uid-{next(self._uids)}")
        self.pods[pod["metadata"]["name"]] = pod
        return pod

    def _check(self, method: str, path: str) -> None:
        self.requests.append((method, path))
        if self.down:
            raise ApiConnectionError(f"{method} {path}: connection refused")

    async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._check("GET", path)
        if path == f"/api/v1/nodes/{NODE}":
            return {"kind": "Node", "metadata": {"name": NODE, "uid": "node-uid"}}
        if path == "/api/v1/pods":
            return {"kind": "PodList", "items": copy.deepcopy(list(self.pods.values()))}
        name = path.rsplit("/", 1)[1]
        if name not in self.pods:
            raise ApiStatusError(404, "NotFound", f'pods "{name}" not found')
        return copy.deepcopy(self.pods[name])

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._check("POST", path)
        name = body["metadata"]["name"]
        if name in self.pods:
            raise ApiStatusError(409, "AlreadyExists", f'pods "{name}" already exists')
        return copy.deepcopy(self.add(body))

    async def delete(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        self._check("DELETE", path)
        assert body is not None and body["gracePeriodSeconds"] == 0
        pod = self.pods.get(path.rsplit("/", 1)[1])
        if pod is None:
            raise ApiStatusError(404, "NotFound", "not found")
        if body["preconditions"]["uid"] != pod["metadata"]["uid"]:
            raise ApiStatusError(409, "Conflict", "Precondition failed: UID in precondition")
        pod["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
        pod["metadata"]["deletionGracePeriodSeconds"] = 0
        if not pod["metadata"].get("finalizers"):
            del self.pods[pod["metadata"]["name"]]
        return copy.deepcopy(pod)

    def count(self, method: str) -> int:
        return sum(1 for m, _ in self.requests if m == method)


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.seen.append((obj["kind"], type_, reason, message))


def static(hash_: str = "h1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-node-a",
            "namespace": "default",
            "uid": hash_,
            "annotations": {"kubernetes.io/config.hash": hash_, "kubernetes.io/config.source": "file"},
        },
        "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "busybox"}]},
    }


def make(api: FakeApi, *, fed: bool = False) -> tuple[MirrorPods, Events]:
    events = Events()
    mirrors = MirrorPods(cast(KubeClient, api), NODE, cast(EventRecorder, events))
    if fed:
        for pod in api.pods.values():
            mirrors.observe("ADDED", copy.deepcopy(pod))
        mirrors.observed_synced()
    return mirrors, events


async def test_existing_mirror_with_the_same_hash_counts_as_created() -> None:
    api = FakeApi()
    mirrors, events = make(api, fed=True)  # synced before the mirror appeared: the view lacks it
    existing = api.add(build_mirror_pod(static(), NODE, "node-uid"))
    mirrors.set_static_pods({"h1": static()})

    assert await mirrors.reconcile()
    assert mirrors.mirror_uid(static()) == existing["metadata"]["uid"]
    assert events.seen == [] and api.count("DELETE") == 0


async def test_a_pod_that_is_not_a_mirror_holding_the_name_is_reported_not_deleted() -> None:
    api = FakeApi()
    plain = static()
    del plain["metadata"]["annotations"]
    api.add(plain)
    mirrors, events = make(api, fed=True)
    mirrors.set_static_pods({"h1": static()})

    assert not await mirrors.reconcile()
    assert [(kind, type_, reason) for kind, type_, reason, _ in events.seen] == [
        ("Node", "Warning", "FailedCreateMirrorPod")
    ]
    assert api.count("DELETE") == 0 and "web-node-a" in api.pods


async def test_mirror_replaced_meanwhile_is_not_deleted_and_not_created_over() -> None:
    api = FakeApi()
    stale = api.add(build_mirror_pod(static("h0"), NODE, "node-uid"))
    mirrors, events = make(api, fed=True)
    # Someone else replaces the pod before our delete: our UID precondition fails.
    del api.pods["web-node-a"]
    newer = api.add(build_mirror_pod(static("h1"), NODE, "node-uid"))
    mirrors.set_static_pods({"h1": static()})

    assert not await mirrors.reconcile()
    assert api.count("POST") == 0 and api.pods["web-node-a"]["metadata"]["uid"] == newer["metadata"]["uid"]
    mirrors.observe("MODIFIED", stale)  # a late event about the pod we gave up on is ignored
    mirrors.observe("ADDED", api.pods["web-node-a"])
    assert await mirrors.reconcile()
    assert mirrors.mirror_uid(static()) == newer["metadata"]["uid"] and events.seen == []


async def test_mirror_kept_by_finalizers_is_waited_for_then_recreated() -> None:
    api = FakeApi()
    old = build_mirror_pod(static("h0"), NODE, "node-uid")
    old["metadata"]["finalizers"] = ["example.com/hold"]
    held = api.add(old)
    mirrors, _ = make(api)  # not fed: each pass lists
    mirrors.set_static_pods({"h1": static()})

    assert not await mirrors.reconcile()
    assert api.count("DELETE") == 1 and api.count("POST") == 0
    assert await mirrors.reconcile()  # force-deleted already: waiting, no second DELETE
    assert api.count("DELETE") == 1 and api.count("POST") == 0

    del api.pods[held["metadata"]["name"]]  # the finalizer is gone
    assert await mirrors.reconcile()
    mirror = api.pods["web-node-a"]
    assert mirror["metadata"]["annotations"][MIRROR_ANNOTATION] == "h1"
    assert mirrors.mirror_uid(static()) == mirror["metadata"]["uid"]


async def test_deleted_mirror_late_events_do_not_bring_it_back() -> None:
    api = FakeApi()
    orphan = api.add(build_mirror_pod(static("h0"), NODE, "node-uid"))
    mirrors, _ = make(api, fed=True)
    mirrors.set_static_pods({})
    assert await mirrors.reconcile()
    assert api.pods == {}

    mirrors.observe("MODIFIED", orphan)  # sent before our delete, received after it
    assert await mirrors.reconcile()
    assert api.count("DELETE") == 1


async def test_unreachable_apiserver_is_retried_without_events() -> None:
    api = FakeApi()
    api.down = True
    mirrors, events = make(api)
    mirrors.set_static_pods({"h1": static()})

    assert not await mirrors.reconcile()
    assert events.seen == [] and mirrors.mirror_uid(static()) is None
    api.down = False
    assert await mirrors.reconcile()
    assert mirrors.mirror_uid(static()) == api.pods["web-node-a"]["metadata"]["uid"]


async def test_without_a_client_nothing_is_mirrored() -> None:
    mirrors = MirrorPods(None, NODE, None)
    mirrors.set_static_pods({"h1": static()})
    await mirrors.start()
    assert await mirrors.reconcile()
    assert mirrors.mirror_uid(static()) is None
    await mirrors.stop()


async def test_nothing_is_deleted_before_the_static_pods_are_known() -> None:
    api = FakeApi()
    existing = api.add(build_mirror_pod(static(), NODE, "node-uid"))  # left by an earlier run
    for fed in (True, False):
        mirrors, events = make(api, fed=fed)
        assert await mirrors.reconcile()  # the static source has not delivered yet
        assert api.requests == [] and events.seen == []

    mirrors.set_static_pods({"h1": static()})  # the same static pod as before the restart
    assert await mirrors.reconcile()
    assert api.pods["web-node-a"]["metadata"]["uid"] == existing["metadata"]["uid"]
    assert api.count("DELETE") == 0 and api.count("POST") == 0

    mirrors.set_static_pods({})  # no static pods: now it is an orphan
    assert await mirrors.reconcile()
    assert api.pods == {}
