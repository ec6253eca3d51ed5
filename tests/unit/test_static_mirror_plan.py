"""Mirror pod decisions (pure): create, replace, force-delete, wait, orphans; the mirror pod body."""

from __future__ import annotations

from typing import Any

from tests.support.manifests import by_uid
from vk_common.objects import MIRROR_ANNOTATION
from vk_provider.static.mirror import MirrorPods, retry_delay
from vk_provider.static.mirror_plan import (
    BEING_DELETED,
    DUPLICATE,
    ORPHANED,
    OUTDATED,
    MirrorDecision,
    build_mirror_pod,
    find_mirror,
    plan_mirrors,
)

NODE = "node-a"
NODE_UID = "node-uid-1"


def static(name: str = "web", hash_: str = "h1", namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{NODE}",
            "namespace": namespace,
            "uid": hash_,
            "labels": {"app": name},
            "annotations": {
                "kubernetes.io/config.hash": hash_,
                "kubernetes.io/config.source": "file",
                "kubernetes.io/config.seen": "2026-11-30T00:00:00Z",
                "team": "infra",
            },
            **meta,
        },
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "main", "image": "vk-test/busybox:1"}],
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
        },
        "status": {"phase": "Pending"},
    }


def mirror(
    name: str = "web",
    hash_: str = "h1",
    uid: str = "m1",
    created: str = "2026-11-30T00:00:01Z",
    **meta: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{NODE}",
            "namespace": "default",
            "uid": uid,
            "creationTimestamp": created,
            "annotations": {"kubernetes.io/config.hash": hash_, MIRROR_ANNOTATION: hash_},
            **meta,
        },
        "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "vk-test/busybox:1"}]},
    }


def uids(decision: MirrorDecision) -> list[tuple[str, str]]:
    return [(m["metadata"]["uid"], why) for m, why in decision.delete]


def test_missing_mirror_is_created() -> None:
    pod = static()
    assert plan_mirrors(by_uid(pod), []) == [MirrorDecision("default/web-node-a", create=pod)]


def test_current_mirror_needs_nothing() -> None:
    assert plan_mirrors(by_uid(static()), [mirror()]) == []


def test_changed_hash_replaces_the_mirror() -> None:
    pod = static(hash_="h2")
    (decision,) = plan_mirrors(by_uid(pod), [mirror(hash_="h1")])
    assert uids(decision) == [("m1", OUTDATED)]
    assert decision.create is pod


def test_gracefully_deleted_mirror_is_force_deleted_then_recreated() -> None:
    pod = static()
    deleting = mirror(deletionTimestamp="2026-11-30T00:01:00Z", deletionGracePeriodSeconds=30)
    (decision,) = plan_mirrors(by_uid(pod), [deleting])
    assert uids(decision) == [("m1", BEING_DELETED)]
    assert decision.create is pod


def test_force_deleted_mirror_held_by_finalizers_is_waited_for() -> None:
    held = mirror(
        deletionTimestamp="2026-11-30T00:01:00Z", deletionGracePeriodSeconds=0, finalizers=["example.com/x"]
    )
    (decision,) = plan_mirrors(by_uid(static()), [held])
    assert decision.delete == () and decision.create is None and decision.waiting is held


def test_orphans_are_deleted_but_not_twice_when_already_force_deleted() -> None:
    orphan = mirror(name="gone", uid="o1")
    held = mirror(
        name="held", uid="o2", deletionTimestamp="2026-11-30T00:01:00Z", deletionGracePeriodSeconds=0
    )
    (decision,) = plan_mirrors({}, [orphan, held])
    assert decision.full_name == "default/gone-node-a"
    assert uids(decision) == [("o1", ORPHANED)] and decision.create is None


def test_a_mirror_in_another_namespace_is_not_the_static_pods() -> None:
    pod = static(namespace="kube-system")
    decisions = plan_mirrors(by_uid(pod), [mirror()])
    assert decisions == [
        MirrorDecision("default/web-node-a", delete=((mirror(), ORPHANED),)),
        MirrorDecision("kube-system/web-node-a", create=pod),
    ]


def test_of_several_current_mirrors_the_newest_is_kept() -> None:
    old = mirror(uid="m-old", created="2026-11-30T00:00:01Z")
    new = mirror(uid="m-new", created="2026-11-30T00:00:05Z")
    (decision,) = plan_mirrors(by_uid(static()), [new, old])
    assert uids(decision) == [("m-old", DUPLICATE)] and decision.create is None


def test_pods_without_the_mirror_annotation_are_never_touched() -> None:
    api_pod = mirror(name="other")
    del api_pod["metadata"]["annotations"][MIRROR_ANNOTATION]
    assert plan_mirrors({}, [api_pod]) == []
    pod = static(name="other")
    assert plan_mirrors(by_uid(pod), [api_pod]) == [MirrorDecision("default/other-node-a", create=pod)]


def test_decisions_cover_several_pods_in_name_order() -> None:
    a, b, c = static("a", "ha"), static("b", "hb2"), static("c", "hc")
    decisions = plan_mirrors(by_uid(c, b, a), [mirror("b", "hb1", "mb"), mirror("c", "hc", "mc")])
    assert [d.full_name for d in decisions] == ["default/a-node-a", "default/b-node-a"]
    assert decisions[0].create is a and uids(decisions[1]) == [("mb", OUTDATED)]


def test_find_mirror_needs_name_hash_and_no_deletion() -> None:
    pod = static()
    assert find_mirror(pod, [mirror(hash_="h0")]) is None
    assert find_mirror(pod, [mirror(deletionTimestamp="2026-11-30T00:01:00Z")]) is None
    current = mirror(uid="m2")
    assert find_mirror(pod, [mirror(hash_="h0"), current]) is current


def test_mirror_pod_body_follows_the_mirror_client() -> None:
    pod = static(resourceVersion="7", ownerReferences=[{"kind": "Other"}], finalizers=["x"])
    body = build_mirror_pod(pod, NODE, NODE_UID)
    meta = body["metadata"]
    assert body["apiVersion"] == "v1" and body["kind"] == "Pod"
    assert set(meta) == {"name", "namespace", "labels", "annotations", "ownerReferences"}
    assert meta["name"] == "web-node-a" and meta["namespace"] == "default"
    assert meta["labels"] == {"app": "web"}
    assert meta["annotations"] == {**pod["metadata"]["annotations"], MIRROR_ANNOTATION: "h1"}
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": NODE_UID, "controller": True}
    ]
    assert body["spec"] == pod["spec"] and body["spec"] is not pod["spec"]
    assert "status" not in body
    assert MIRROR_ANNOTATION not in pod["metadata"]["annotations"]  # the static pod is untouched


def test_retry_delay_doubles_up_to_the_resync_period() -> None:
    assert [retry_delay(n, 10.0) for n in range(7)] == [10.0, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0]


def test_observed_mirrors_of_this_node_give_the_status_target() -> None:
    mirrors = MirrorPods(None, NODE, None)
    pod = static()
    mirrors.observed_synced()
    assert mirrors.mirror_uid(pod) is None
    mirrors.observe("ADDED", mirror(uid="m1"))
    other_node = mirror(uid="m9")
    other_node["spec"]["nodeName"] = "elsewhere"
    mirrors.observe("ADDED", other_node)
    assert mirrors.mirror_uid(pod) == "m1"
    mirrors.observe("DELETED", mirror(uid="m1"))
    assert mirrors.mirror_uid(pod) is None
    mirrors.observe("ADDED", other_node | {"spec": {"nodeName": NODE}})
    assert mirrors.mirror_uid(pod) == "m9"
