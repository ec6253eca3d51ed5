"""EventRecorder: kubelet-style Event shape, naming, aggregation of repeats, never raising."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

from tests.support.polling import eventually
from vk_provider.kube.client import ApiConnectionError, ApiStatusError, KubeClient
from vk_provider.kube.events import EventRecorder, involved_reference, make_event

POD = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "42"},
    "spec": {"containers": [{"name": "nginx"}]},
}
NODE = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "vk-1", "uid": "real-uid"}}


class MemoryEvents:
    """Stores Events like the apiserver would, for create and strategic-merge patch of top-level fields."""

    def __init__(self, fail_first: int = 0) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []
        self.fail_first = fail_first

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("POST")
        if self.fail_first:
            self.fail_first -= 1
            raise ApiConnectionError("connection refused")
        self.events[f"{path}/{body['metadata']['name']}"] = dict(body)
        return body

    async def patch(self, path: str, body: dict[str, Any], patch_type: str = "strategic") -> dict[str, Any]:
        self.calls.append("PATCH")
        if path not in self.events:
            raise ApiStatusError(404, "NotFound", "events not found")
        self.events[path].update(body)
        return self.events[path]


def test_pod_reference_and_event_shape() -> None:
    ref = involved_reference(POD, "vk-1", "spec.containers{nginx}")
    assert ref == {
        "kind": "Pod",
        "namespace": "shop",
        "name": "web",
        "uid": "u-1",
        "apiVersion": "v1",
        "resourceVersion": "42",
        "fieldPath": "spec.containers{nginx}",
    }
    now = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    event = make_event(ref, "Normal", "Pulled", "Container image already present", "vk-1", now, "web.abc")
    assert event["metadata"] == {"name": "web.abc", "namespace": "shop"}
    assert event["source"] == {"component": "kubelet", "host": "vk-1"}
    assert (event["reportingComponent"], event["reportingInstance"]) == ("kubelet", "vk-1")
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-02T03:04:05Z"
    assert event["count"] == 1


def test_node_reference_uses_the_node_name_as_uid_and_default_namespace() -> None:
    ref = involved_reference(NODE, "vk-1")
    assert ref == {"kind": "Node", "name": "vk-1", "uid": "vk-1"}
    event = make_event(
        ref, "Normal", "NodeReady", "Node vk-1 status is now: NodeReady", "vk-1", datetime.now(UTC), "x"
    )
    assert event["metadata"]["namespace"] == "default"


async def test_repeats_are_aggregated_on_one_event() -> None:
    times = iter(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i) for i in range(10))
    store = MemoryEvents()
    recorder = EventRecorder(cast(KubeClient, store), "vk-1", clock=lambda: next(times))
    await recorder.start()
    for _ in range(3):
        recorder.event(
            POD,
            "Warning",
            "BackOff",
            "Back-off restarting failed container",
            field_path="spec.containers{nginx}",
        )
    recorder.event(POD, "Normal", "Killing", "Stopping container nginx")
    await recorder.stop()
    assert store.calls == ["POST", "PATCH", "PATCH", "POST"]
    backoff = [e for e in store.events.values() if e["reason"] == "BackOff"]
    assert len(backoff) == 1
    assert backoff[0]["count"] == 3
    assert backoff[0]["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert backoff[0]["lastTimestamp"] == "2026-01-01T00:00:02Z"
    assert all(name.split("/")[-1].startswith("web.") for name in store.events)


async def posted_node_event(
    store: MemoryEvents, type_: str, reason: str, message: str, *, retry_seconds: float, within: float
) -> EventRecorder:
    """A started recorder once it has posted this Event of the node to `store`, retries and all."""
    recorder = EventRecorder(cast(KubeClient, store), "vk-1", retry_seconds=retry_seconds)
    await recorder.start()
    recorder.event(NODE, type_, reason, message)
    await eventually(lambda: store.events, within=within, interval=0.05, what="the event posted")
    return recorder


async def test_deleted_event_is_recreated_and_transient_errors_retried() -> None:
    store = MemoryEvents(fail_first=1)
    registered = ("Normal", "RegisteredNode", "Node vk-1 event: Registered Node vk-1")
    recorder = await posted_node_event(store, *registered, retry_seconds=0.05, within=5)
    assert len(store.events) == 1
    store.events.clear()  # expired by the apiserver's TTL
    recorder.event(NODE, *registered)
    await recorder.stop()
    assert store.calls == ["POST", "POST", "PATCH", "POST"]
    assert len(store.events) == 1


async def test_an_event_outlives_an_apiserver_outage_of_several_tries() -> None:
    """Like client-go's recorder, an Event is tried up to 12 times before it is given up."""
    store = MemoryEvents(fail_first=8)
    failed = ("Warning", "FailedStaticPodManifest", "/etc/m/x.yaml: bad")
    recorder = await posted_node_event(store, *failed, retry_seconds=0.01, within=10)
    await recorder.stop()
    assert len(store.events) == 1
    assert store.calls == ["POST"] * 9


async def test_without_client_events_are_only_logged() -> None:
    recorder = EventRecorder(None, "vk-1")
    await recorder.start()
    recorder.event(POD, "Normal", "Started", "Started container nginx")
    recorder.event({}, "Normal", "Weird", "no metadata at all")
    await recorder.stop()


async def test_full_queue_drops_instead_of_blocking() -> None:
    recorder = EventRecorder(cast(KubeClient, MemoryEvents()), "vk-1", queue_size=2)
    for i in range(5):
        recorder.event(POD, "Normal", "Pulled", f"message {i}")
    assert recorder.dropped == 3


async def test_repeats_past_25_at_once_are_counted_and_sent_as_the_bucket_refills() -> None:
    """client-go's spam filter, as the kubelet's recorder has it: 25 at once, then one every
    300 s; a repeat held back still counts in the next PATCH."""
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    store = MemoryEvents()
    recorder = EventRecorder(cast(KubeClient, store), "vk-1", clock=lambda: clock[0])
    await recorder.start()
    missing = ("Warning", "MissingClusterDNS", "kubelet does not have ClusterDNS IP configured")
    for _ in range(30):
        recorder.event(NODE, *missing)
    await recorder.stop()
    assert store.calls == ["POST"] + ["PATCH"] * 24
    assert recorder.held_back == 5
    clock[0] += timedelta(seconds=300)
    await recorder.start()
    recorder.event(NODE, *missing)
    recorder.event(NODE, *missing)
    await recorder.stop()
    assert store.calls[25:] == ["PATCH"]
    (event,) = store.events.values()
    assert event["count"] == 31  # 30 + the one sent; the last one is held back again
    assert event["lastTimestamp"] == "2026-01-01T00:05:00Z"


async def test_an_event_seen_for_the_first_time_is_always_sent() -> None:
    """Only repeats are held back: forty different failures about the node are forty Events."""
    store = MemoryEvents()
    recorder = EventRecorder(cast(KubeClient, store), "vk-1")
    await recorder.start()
    for i in range(40):
        recorder.event(NODE, "Warning", "FailedStaticPodManifest", f"/etc/m/bad-{i}.yaml: not YAML")
    await recorder.stop()
    assert store.calls == ["POST"] * 40
    assert recorder.held_back == 0
