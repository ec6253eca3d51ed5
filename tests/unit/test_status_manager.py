"""StatusManager control flow over an in-memory apiserver double: doorbell, versions, static pods, deletes.

The double keeps pods by namespace/name, applies strategic merge patches with the sandbox's
patch engine, and checks `metadata.uid` in a patch and `preconditions.uid` in a delete like the
apiserver. The real apiserver behaviour is covered by tests/integration/test_status_manager*.py.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from tests.support.metrics import sample
from tests.support.polling import eventually
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.status.manager import StatusManager
from vk_sandbox.api.patch import strategic_merge

NODE_IP = "10.0.0.7"


class FakeApi:
    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail_next: list[int] = []

    def add(self, pod: dict[str, Any]) -> None:
        self.pods[pod["metadata"]["name"]] = pod

    def _pod(self, path: str) -> dict[str, Any]:
        name = path.split("/")[6]
        if name not in self.pods:
            raise ApiStatusError(404, "NotFound", f'pods "{name}" not found')
        return self.pods[name]

    def _maybe_fail(self) -> None:
        if self.fail_next:
            code = self.fail_next.pop(0)
            raise ApiStatusError(code, "Conflict" if code == 409 else "InternalError", "injected")

    async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.requests.append(("GET", path))
        return copy.deepcopy(self._pod(path))

    async def patch(self, path: str, body: dict[str, Any], patch_type: str = "strategic") -> dict[str, Any]:
        self.requests.append(("PATCH", path))
        self._maybe_fail()
        pod = self._pod(path)
        if body.get("metadata", {}).get("uid") not in (None, pod["metadata"]["uid"]):
            raise ApiStatusError(409, "Conflict", "Precondition failed: UID in precondition")
        merged = strategic_merge(pod, {"status": body["status"]}, kind="Pod", api_version="v1")
        self.pods[pod["metadata"]["name"]] = merged
        return copy.deepcopy(merged)

    async def delete(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        self.requests.append(("DELETE", path))
        pod = self._pod(path)
        assert body is not None and body["gracePeriodSeconds"] == 0
        if body["preconditions"]["uid"] != pod["metadata"]["uid"]:
            raise ApiStatusError(409, "Conflict", "Precondition failed: UID in precondition")
        del self.pods[pod["metadata"]["name"]]
        return {}

    def count(self, method: str) -> int:
        return sum(1 for m, _ in self.requests if m == method)


def make_pod(name: str = "p", uid: str = "uid-1", **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "annotations": dict(annotations)},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "x"}]},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def running_status(ready: bool = True) -> dict[str, Any]:
    flag = "True" if ready else "False"
    return {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": flag},
            {"type": "ContainersReady", "status": flag},
            {"type": "PodScheduled", "status": "True"},
        ],
        "hostIP": NODE_IP,
        "podIP": "172.17.0.2",
        "containerStatuses": [
            {
                "name": "a",
                "state": {"running": {"startedAt": "2026-11-30T00:00:00Z"}},
                "lastState": {},
                "ready": ready,
                "restartCount": 0,
                "image": "x",
                "imageID": "",
                "containerID": "docker://c1",
                "started": True,
            }
        ],
        "qosClass": "BestEffort",
    }


def succeeded_status() -> dict[str, Any]:
    status = running_status(ready=False)
    status["phase"] = "Succeeded"
    status["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    status["containerStatuses"][0]["started"] = False
    return status


def ready_of(pod: Mapping[str, Any]) -> str:
    return str(next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")["status"])


async def foreign_ready_edit(
    api: FakeApi, sm: StatusManager, base: Mapping[str, Any], resource_version: str | None = None
) -> None:
    """Another writer sets Ready False on the API's copy of `base` (the watch delivers it), then a
    full pass runs."""
    tampered = copy.deepcopy(dict(base))
    if resource_version is not None:
        tampered["metadata"]["resourceVersion"] = resource_version
    next(c for c in tampered["status"]["conditions"] if c["type"] == "Ready")["status"] = "False"
    api.pods["p"] = tampered
    sm.observe_pod(copy.deepcopy(tampered))
    await sm.sync_batch(full=True)


def manager(api: FakeApi, mirrors: Mapping[str, str] | None = None) -> StatusManager:
    table = mirrors if mirrors is not None else {}
    return StatusManager(
        cast(KubeClient, api),
        sync_period=3600,
        mirror_uid=lambda pod: table.get(pod["metadata"]["uid"]),
    )


def manager_of_one_pod() -> tuple[FakeApi, StatusManager]:
    """A manager over an API that holds the pod `p` (make_pod), Pending."""
    api = FakeApi()
    api.add(make_pod())
    return api, manager(api)


async def test_same_status_twice_writes_once_and_full_pass_is_quiet() -> None:
    api, sm = manager_of_one_pod()
    sm.set_pod_status(make_pod(), running_status())
    sm.set_pod_status(make_pod(), running_status())
    await sm.sync_batch(full=False)
    await sm.sync_batch(full=False)
    await sm.sync_batch(full=True)
    assert api.count("PATCH") == 1 and sample(sm.metrics, "vk_provider_pod_status_patches_total") == 1
    assert api.pods["p"]["status"]["phase"] == "Running"


async def test_doorbell_wakes_the_loop() -> None:
    api, sm = manager_of_one_pod()
    await sm.start()
    try:
        sm.set_pod_status(make_pod(), running_status())
        await eventually(lambda: api.count("PATCH"), within=2, interval=0.01, what="a status PATCH")
        assert api.pods["p"]["status"]["phase"] == "Running"
    finally:
        await sm.stop()


async def test_errors_are_retried_on_the_next_pass() -> None:
    api, sm = manager_of_one_pod()
    api.fail_next = [409, 500]
    sm.set_pod_status(make_pod(), running_status())
    await sm.sync_batch(full=False)
    await sm.sync_batch(full=True)
    assert (
        sample(sm.metrics, "vk_provider_pod_status_conflicts_total"),
        sample(sm.metrics, "vk_provider_pod_status_errors_total"),
        sample(sm.metrics, "vk_provider_pod_status_patches_total"),
    ) == (1, 1, 0)
    await sm.sync_batch(full=True)
    assert sample(sm.metrics, "vk_provider_pod_status_patches_total") == 1
    assert api.pods["p"]["status"]["phase"] == "Running"


async def test_foreign_ready_edit_is_repaired_by_full_pass_only() -> None:
    api, sm = manager_of_one_pod()
    sm.set_pod_status(make_pod(), running_status())
    await sm.sync_batch(full=False)
    ready = next(c for c in api.pods["p"]["status"]["conditions"] if c["type"] == "Ready")
    ready["status"] = "False"
    await sm.sync_batch(full=False)
    assert ready["status"] == "False"
    await sm.sync_batch(full=True)
    fixed = next(c for c in api.pods["p"]["status"]["conditions"] if c["type"] == "Ready")
    assert fixed["status"] == "True"


async def test_terminal_phase_withheld_while_a_container_runs() -> None:
    api, sm = manager_of_one_pod()
    status = running_status()
    status["phase"] = "Failed"
    sm.set_pod_status(make_pod(), status)
    await sm.sync_batch(full=False)
    assert api.pods["p"]["status"]["phase"] == "Pending"


async def test_final_delete_after_terminate_with_uid_precondition() -> None:
    api = FakeApi()
    pod = make_pod()
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    api.add(copy.deepcopy(pod))
    sm = manager(api)
    sm.set_pod_status(pod, succeeded_status())
    await sm.sync_batch(full=False)
    assert "p" in api.pods and api.pods["p"]["status"]["phase"] == "Succeeded"
    sm.terminate_pod(pod)
    await sm.sync_batch(full=False)
    assert "p" not in api.pods
    assert sm.get_pod_status("uid-1") is None
    assert sample(sm.metrics, "vk_provider_pod_deletions_total") == 1


async def test_stop_lets_the_final_delete_in_flight_finish() -> None:
    """A provider stopped while its final DELETE is with the apiserver waits for the answer: an
    abandoned DELETE may or may not have happened, and the next start would send it again."""
    api = FakeApi()
    pod = make_pod()
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    api.add(copy.deepcopy(pod))
    sent = asyncio.Event()
    answer = asyncio.Event()
    real_delete = api.delete

    async def slow_delete(path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        sent.set()
        await answer.wait()
        return await real_delete(path, body)

    api.delete = slow_delete  # type: ignore[method-assign]
    sm = manager(api)
    await sm.start()
    sm.set_pod_status(pod, succeeded_status())
    sm.terminate_pod(pod)
    await asyncio.wait_for(sent.wait(), timeout=5)
    stopping = asyncio.create_task(sm.stop())
    await asyncio.sleep(0.05)
    assert not stopping.done(), "stop waits for the DELETE in flight"
    answer.set()
    await asyncio.wait_for(stopping, timeout=5)
    assert "p" not in api.pods and sample(sm.metrics, "vk_provider_pod_deletions_total") == 1
    assert api.count("DELETE") == 1


async def test_stop_sends_nothing_more_after_the_write_in_flight() -> None:
    api = FakeApi()
    for n in range(3):
        api.add(make_pod(f"p{n}", f"uid-{n}"))
    sm = manager(api)
    for n in range(3):
        sm.set_pod_status(make_pod(f"p{n}", f"uid-{n}"), running_status())
    real_get = api.get
    stops: list[asyncio.Task[None]] = []

    async def get_then_stop(path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if not stops:  # the provider is told to stop while the first pod's sync is under way
            stops.append(asyncio.get_running_loop().create_task(sm.stop()))
            await asyncio.sleep(0)
        return await real_get(path, params)

    api.get = get_then_stop  # type: ignore[method-assign]
    await sm.start()
    await eventually(lambda: stops, within=5, interval=0.01, what="a sync under way")
    await asyncio.wait_for(stops[0], timeout=5)
    assert api.count("PATCH") == 1, "the pod in flight is written, the others wait for the next start"


async def test_a_stopped_manager_started_again_writes_again() -> None:
    api, sm = manager_of_one_pod()
    await sm.start()
    await sm.stop()
    await sm.start()
    try:
        sm.set_pod_status(make_pod(), running_status())
        await eventually(lambda: api.count("PATCH"), within=2, interval=0.01, what="a status PATCH")
    finally:
        await sm.stop()


async def test_recreated_pod_is_neither_written_nor_deleted() -> None:
    api = FakeApi()
    old = make_pod(uid="old")
    old["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    api.add(make_pod(uid="new"))
    sm = manager(api)
    sm.set_pod_status(old, succeeded_status())
    sm.terminate_pod(old)
    await sm.sync_batch(full=False)
    await sm.sync_batch(full=True)
    assert api.pods["p"]["metadata"]["uid"] == "new"
    assert api.pods["p"]["status"]["phase"] == "Pending"
    assert api.count("PATCH") == 0 and api.count("DELETE") == 0
    assert sm.get_pod_status("old") is None


async def test_static_pod_waits_for_its_mirror_and_mirror_is_never_deleted() -> None:
    api = FakeApi()
    static = make_pod(uid="static-uid", **{"kubernetes.io/config.source": "file"})
    static["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    mirrors: dict[str, str] = {}
    sm = manager(api, mirrors)
    sm.set_pod_status(static, succeeded_status())
    sm.terminate_pod(static)
    await sm.sync_batch(full=False)
    await sm.sync_batch(full=True)
    assert api.requests == []
    mirror = make_pod(uid="mirror-uid", **{"kubernetes.io/config.mirror": "hash"})
    mirror["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    api.add(mirror)
    mirrors["static-uid"] = "mirror-uid"
    await sm.sync_batch(full=True)
    assert api.pods["p"]["status"]["phase"] == "Succeeded"
    await sm.sync_batch(full=True)
    assert api.count("DELETE") == 0
    assert sm.get_pod_status("static-uid") is not None


@pytest.mark.parametrize("ready", [False, True])
async def test_container_readiness_updates_cache_and_api(ready: bool) -> None:
    api, sm = manager_of_one_pod()
    sm.set_pod_status(make_pod(), running_status(ready=not ready))
    sm.set_container_readiness("uid-1", "a", ready)
    cached = sm.get_pod_status("uid-1")
    assert cached is not None and cached["containerStatuses"][0]["ready"] is ready
    await sm.sync_batch(full=False)
    conds = {c["type"]: c["status"] for c in api.pods["p"]["status"]["conditions"]}
    assert conds["Ready"] == conds["ContainersReady"] == ("True" if ready else "False")
    assert api.count("PATCH") == 1


async def test_watch_fed_full_pass_reads_no_pods_and_repairs_observed_edits() -> None:
    api, sm = manager_of_one_pod()
    sm.set_pod_status(make_pod(), running_status())
    await sm.sync_batch(full=False)
    sm.observe_pod(copy.deepcopy(api.pods["p"]))
    gets = api.count("GET")
    await sm.sync_batch(full=True)
    assert api.count("GET") == gets and api.count("PATCH") == 1
    await foreign_ready_edit(api, sm, api.pods["p"])
    assert api.count("PATCH") == 2
    assert ready_of(api.pods["p"]) == "True"


async def test_get_pod_status_is_a_copy_and_resolves_mirror_uid() -> None:
    api = FakeApi()
    sm = manager(api, {"static-uid": "mirror-uid"})
    static = make_pod(uid="static-uid", **{"kubernetes.io/config.source": "file"})
    sm.set_pod_status(static, running_status())
    got = sm.get_pod_status("mirror-uid")
    assert got is not None and got["phase"] == "Running"
    got["phase"] = "Failed"
    assert sm.get_pod_status("static-uid")["phase"] == "Running"  # type: ignore[index]
    assert sm.get_pod_status("unknown") is None
    # The pod sync reads the cache itself (it copies nothing of it twice in one pass).
    assert sm.cached_status("mirror-uid") is sm.cached_status("static-uid")
    assert sm.cached_status("static-uid") == sm.get_pod_status("static-uid")
    assert sm.cached_status("unknown") is None


async def test_status_set_again_after_remove_is_written() -> None:
    api, sm = manager_of_one_pod()
    sm.set_pod_status(make_pod(), running_status())
    sm.set_pod_status(make_pod(), running_status(ready=False))
    await sm.sync_batch(full=False)
    sm.remove_pod("uid-1")
    assert sm.get_pod_status("uid-1") is None
    sm.set_pod_status(make_pod(), running_status())
    await sm.sync_batch(full=False)
    assert api.count("PATCH") == 2
    assert next(c for c in api.pods["p"]["status"]["conditions"] if c["type"] == "Ready")["status"] == "True"


async def test_the_pod_start_duration_is_observed_once_from_creation_to_the_first_running() -> None:
    api = FakeApi()
    created = datetime.now(UTC) - timedelta(seconds=7)
    pod = make_pod()
    pod["metadata"]["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    api.add(pod)
    sm = manager(api)
    sm.set_pod_status(pod, {"phase": "Pending", "qosClass": "BestEffort"})
    assert sample(sm.metrics, "kubelet_pod_start_duration_seconds_count") == 0
    sm.set_pod_status(pod, running_status())
    sm.set_pod_status(pod, running_status(ready=False))  # still Running: not a second start
    assert sample(sm.metrics, "kubelet_pod_start_duration_seconds_count") == 1
    assert 7 <= sample(sm.metrics, "kubelet_pod_start_duration_seconds_sum") < 60
    await sm.sync_batch(full=False)
    assert sample(sm.metrics, "kubelet_pod_status_sync_duration_seconds_count") == 1


async def test_a_pod_the_api_already_shows_running_is_no_new_start() -> None:
    """After a restart the provider adopts pods started long ago: no start duration for them."""
    pod = make_pod()
    pod["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
    pod["status"] = running_status()
    sm = manager(FakeApi())
    sm.set_pod_status(pod, running_status())
    assert sample(sm.metrics, "kubelet_pod_start_duration_seconds_count") == 0


async def test_a_failed_write_is_sent_again_at_the_next_pass_not_only_the_full_one() -> None:
    api, sm = manager_of_one_pod()
    api.fail_next = [500]
    sm.set_pod_status(make_pod(), running_status())
    await sm.sync_batch(full=False)
    assert sample(sm.metrics, "vk_provider_pod_status_patches_total") == 0
    await sm.sync_batch(full=False)
    assert api.pods["p"]["status"]["phase"] == "Running"


async def test_a_static_pod_is_written_at_the_next_pass_once_its_mirror_exists() -> None:
    api = FakeApi()
    static = make_pod(uid="static-uid", **{"kubernetes.io/config.source": "file"})
    mirrors: dict[str, str] = {}
    sm = manager(api, mirrors)
    sm.set_pod_status(static, running_status())
    await sm.sync_batch(full=False)
    assert api.requests == []
    api.add(make_pod(uid="mirror-uid", **{"kubernetes.io/config.mirror": "hash"}))
    mirrors["static-uid"] = "mirror-uid"
    await sm.sync_batch(full=False)  # no new version of the static pod's: its new mirror alone
    assert api.pods["p"]["status"]["phase"] == "Running"
    assert sm.get_pod_status("mirror-uid") is not None


async def test_a_pass_writes_the_one_changed_pod_among_many_written_ones() -> None:
    api = FakeApi()
    sm = manager(api)
    pods = [make_pod(name=f"p{i}", uid=f"uid-{i}") for i in range(200)]
    for pod in pods:
        api.add(copy.deepcopy(pod))
        sm.set_pod_status(pod, running_status())
    await sm.sync_batch(full=False)
    assert api.count("PATCH") == 200
    api.requests.clear()
    sm.set_pod_status(pods[7], running_status(ready=False))
    await sm.sync_batch(full=False)
    assert api.requests == [
        ("GET", "/api/v1/namespaces/default/pods/p7"),
        ("PATCH", "/api/v1/namespaces/default/pods/p7/status"),
    ]
    assert sm.get_pod_status("uid-unknown") is None


async def test_a_full_pass_that_found_a_pod_equal_still_repairs_its_next_edit() -> None:
    api, sm = manager_of_one_pod()
    sm.set_pod_status(make_pod(), running_status())
    await sm.sync_batch(full=False)
    seen = copy.deepcopy(api.pods["p"])
    seen["metadata"]["resourceVersion"] = "41"
    sm.observe_pod(seen)
    await sm.sync_batch(full=True)
    await sm.sync_batch(full=True)  # the same resourceVersion, the same cached version: equal again
    assert api.count("PATCH") == 1
    await foreign_ready_edit(api, sm, seen, resource_version="42")
    assert api.count("PATCH") == 2
    assert ready_of(api.pods["p"]) == "True"
    sm.set_pod_status(make_pod(), running_status(ready=False))  # a new version against the same copy
    await sm.sync_batch(full=False)
    assert ready_of(api.pods["p"]) == "False"
