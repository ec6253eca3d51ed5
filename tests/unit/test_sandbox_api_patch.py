"""PATCH semantics: strategic merge (schema-driven), JSON merge patch, JSON patch, media types."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from vk_sandbox.api.patch import PatchError, apply_patch, json_patch, merge_patch, strategic_merge


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "u1",
            "labels": {"app": "web", "tier": "front"},
            "finalizers": ["a", "b"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "n-uid-1"},
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "busybox:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "command": ["sh", "-c", "sleep 1"],
                },
                {"name": "side", "image": "pause:1"},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "k1", "operator": "Exists"}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "False"},
                {"type": "PodScheduled", "status": "True"},
            ],
            "containerStatuses": [{"name": "app", "ready": False}, {"name": "side", "ready": False}],
        },
    }


def smp(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    return strategic_merge(obj, patch, kind="Pod", api_version="v1")


def test_condition_merged_by_type_keeps_the_others() -> None:
    out = smp(_pod(), {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert out["status"]["conditions"] == [
        {"type": "Initialized", "status": "True"},
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]


def test_original_not_modified() -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    smp(pod, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "metadata": {"labels": None}})
    assert pod == before


def test_kubelet_status_patch_with_set_element_order() -> None:
    # The shape the kubelet's status manager sends (CreateTwoWayMergePatch).
    patch = {
        "metadata": {"uid": "u1"},
        "status": {
            "$setElementOrder/conditions": [
                {"type": "PodReadyToStartContainers"},
                {"type": "Initialized"},
                {"type": "Ready"},
                {"type": "PodScheduled"},
            ],
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
            "containerStatuses": [{"name": "app", "ready": True}],
            "phase": "Running",
            "podIP": "10.0.0.2",
            "podIPs": [{"ip": "10.0.0.2"}],
        },
    }
    out = smp(_pod(), patch)
    assert [c["type"] for c in out["status"]["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "PodScheduled",
    ]
    assert out["status"]["conditions"][2]["status"] == "True"
    # containerStatuses has no patch strategy (it is an atomic list): the list is replaced whole.
    assert out["status"]["containerStatuses"] == [{"name": "app", "ready": True}]
    assert out["status"]["phase"] == "Running"
    assert "$setElementOrder/conditions" not in out["status"]


def test_containers_env_ports_volumes_by_merge_key() -> None:
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "busybox:2",
                    "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}],
                    "ports": [{"containerPort": 8080}],
                }
            ],
            "volumes": [{"name": "cache", "emptyDir": {}}],
        }
    }
    out = smp(_pod(), patch)
    app = out["spec"]["containers"][0]
    assert [c["name"] for c in out["spec"]["containers"]] == ["app", "side"]
    assert app["image"] == "busybox:2"
    assert app["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "20"},
        {"name": "C", "value": "3"},
    ]
    # Upstream's mergeSortedSlice puts patch items the server does not know before server-only ones
    # when the patch carries no $setElementOrder.
    assert [p["containerPort"] for p in app["ports"]] == [8080, 80]
    assert app["command"] == ["sh", "-c", "sleep 1"]
    assert [v["name"] for v in out["spec"]["volumes"]] == ["cache", "data"]


def test_tolerations_and_command_are_replaced() -> None:
    out = smp(_pod(), {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}})
    assert out["spec"]["tolerations"] == [{"key": "k2", "operator": "Exists"}]
    out = smp(_pod(), {"spec": {"containers": [{"name": "app", "command": ["true"]}]}})
    assert out["spec"]["containers"][0]["command"] == ["true"]


def test_labels_map_merge_and_null_deletes() -> None:
    out = smp(_pod(), {"metadata": {"labels": {"tier": None, "env": "prod"}}})
    assert out["metadata"]["labels"] == {"app": "web", "env": "prod"}
    out = smp(_pod(), {"metadata": {"annotations": {"a": "1", "gone": None}}})
    assert out["metadata"]["annotations"] == {"a": "1"}


def test_owner_references_by_uid() -> None:
    ref2 = {"apiVersion": "v1", "kind": "Node", "name": "n2", "uid": "n-uid-2"}
    order = [{"uid": "n-uid-1"}, {"uid": "n-uid-2"}]
    out = smp(_pod(), {"metadata": {"$setElementOrder/ownerReferences": order, "ownerReferences": [ref2]}})
    assert [r["uid"] for r in out["metadata"]["ownerReferences"]] == ["n-uid-1", "n-uid-2"]
    out = smp(_pod(), {"metadata": {"ownerReferences": [{"uid": "n-uid-1", "name": "renamed"}]}})
    assert out["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "renamed", "uid": "n-uid-1"}
    ]


def test_finalizers_as_set_and_delete_from_primitive_list() -> None:
    out = smp(_pod(), {"metadata": {"finalizers": ["b", "c"]}})
    assert out["metadata"]["finalizers"] == ["a", "b", "c"]
    out = smp(_pod(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b"]


def test_patch_delete_list_element_and_replace_directives() -> None:
    out = smp(_pod(), {"status": {"conditions": [{"$patch": "delete", "type": "Ready"}]}})
    assert [c["type"] for c in out["status"]["conditions"]] == ["Initialized", "PodScheduled"]
    out = smp(
        _pod(), {"status": {"conditions": [{"$patch": "replace"}, {"type": "Ready", "status": "True"}]}}
    )
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    out = smp(_pod(), {"metadata": {"labels": {"$patch": "replace", "only": "this"}}})
    assert out["metadata"]["labels"] == {"only": "this"}
    out = smp(_pod(), {"metadata": {"labels": {"$patch": "delete"}}})
    assert out["metadata"]["labels"] == {}


def test_unknown_patch_type_in_map_is_invalid() -> None:
    with pytest.raises(PatchError) as e:
        smp(_pod(), {"metadata": {"labels": {"$patch": "bogus"}}})
    assert e.value.code == 422
    assert e.value.message.startswith("unknown patch type: bogus in map")


def test_retain_keys_clears_other_union_members() -> None:
    pod = _pod()
    patch = {
        "spec": {
            "volumes": [{"name": "data", "$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/x"}}]
        }
    }
    out = smp(pod, patch)
    assert out["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/x"}}]


def test_null_inside_new_value_is_discarded() -> None:
    out = smp(_pod(), {"spec": {"nodeSelector": {"a": "1", "b": None}}})
    assert out["spec"]["nodeSelector"] == {"a": "1"}


def test_missing_merge_key_is_an_error() -> None:
    with pytest.raises(PatchError) as e:
        smp(_pod(), {"spec": {"containers": [{"image": "x"}]}})
    assert "does not contain declared merge key: name" in e.value.message


def test_node_status_conditions_and_addresses_by_type() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "MemoryPressure", "status": "False"},
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": "n"},
            ],
        },
    }
    out = strategic_merge(
        node,
        {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}},
        kind="Node",
        api_version="v1",
    )
    assert out["status"]["conditions"][0]["status"] == "Unknown"
    assert len(out["status"]["conditions"]) == 2
    assert len(out["status"]["addresses"]) == 2


def test_lease_patch() -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"holderIdentity": "n"}}
    out = apply_patch(
        lease,
        json.dumps({"spec": {"renewTime": "2026-01-01T00:00:00.000000Z"}}),
        "application/strategic-merge-patch+json",
        kind="Lease",
        api_version="coordination.k8s.io/v1",
    )
    assert out["spec"] == {"holderIdentity": "n", "renewTime": "2026-01-01T00:00:00.000000Z"}


# --- RFC 7386 --------------------------------------------------------------------------------


def test_merge_patch_rfc7386_examples() -> None:
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}


def test_merge_patch_replaces_lists_of_conditions() -> None:
    out = apply_patch(
        _pod(),
        json.dumps({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        "application/merge-patch+json",
        kind="Pod",
        api_version="v1",
    )
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"}]


# --- RFC 6902 --------------------------------------------------------------------------------


def jp(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    return apply_patch(obj, json.dumps(ops), "application/json-patch+json", kind="Pod", api_version="v1")


def test_json_patch_operations() -> None:
    out = jp(
        _pod(),
        [
            {"op": "add", "path": "/metadata/labels/x", "value": "1"},
            {"op": "remove", "path": "/metadata/labels/tier"},
            {"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:3"},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "c"},
            {"op": "add", "path": "/metadata/finalizers/0", "value": "z"},
            {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/copied"},
            {"op": "move", "from": "/metadata/labels/x", "path": "/metadata/labels/moved"},
            {"op": "test", "path": "/metadata/name", "value": "web"},
            {"op": "add", "path": "/metadata/labels/a~1b", "value": "slash"},
        ],
    )
    assert out["metadata"]["labels"] == {
        "app": "web",
        "copied": "web",
        "moved": "1",
        "a/b": "slash",
    }
    assert out["spec"]["containers"][0]["image"] == "busybox:3"
    assert out["metadata"]["finalizers"] == ["z", "a", "b", "c"]


def test_json_patch_failures() -> None:
    with pytest.raises(PatchError) as e:
        json_patch(_pod(), [{"op": "test", "path": "/metadata/name", "value": "other"}])
    assert (e.value.code, e.value.message) == (422, "testing value /metadata/name failed: test failed")
    with pytest.raises(PatchError) as e:
        json_patch(_pod(), [{"op": "remove", "path": "/metadata/labels/nope"}])
    assert e.value.code == 422
    assert e.value.message == "Unable to remove nonexistent key: nope: missing value"
    # evanphx/json-patch v4, the apiserver's: replacing a missing member sets it, a missing index fails.
    added = json_patch(_pod(), [{"op": "replace", "path": "/metadata/nope", "value": 1}])
    assert added["metadata"]["nope"] == 1
    with pytest.raises(PatchError) as e:
        json_patch(_pod(), [{"op": "replace", "path": "/spec/containers/5", "value": {}}])
    assert e.value.message == "Unable to access invalid index: 5: invalid index referenced"
    with pytest.raises(PatchError) as e:
        json_patch(_pod(), [{"op": "add", "path": "/nope/deeper", "value": 1}])
    assert (
        e.value.message == 'add operation does not apply: doc is missing path: "/nope/deeper": missing value'
    )
    # Over HTTP the server hides the json-patch error behind its generic 422 text.
    with pytest.raises(PatchError) as e:
        jp(_pod(), [{"op": "test", "path": "/metadata/name", "value": "other"}])
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    assert e.value.message == "the server rejected our request due to an error in our request"
    assert e.value.detail == "testing value /metadata/name failed: test failed"
    with pytest.raises(PatchError) as e:
        apply_patch(_pod(), "{not json", "application/json-patch+json", kind="Pod", api_version="v1")
    assert e.value.code == 400


def test_json_patch_failure_leaves_object_untouched() -> None:
    pod = _pod()
    with pytest.raises(PatchError):
        jp(pod, [{"op": "remove", "path": "/metadata/labels/app"}, {"op": "test", "path": "/x", "value": 1}])
    assert pod["metadata"]["labels"]["app"] == "web"


# --- media types -----------------------------------------------------------------------------


def test_unsupported_media_types_are_415() -> None:
    for content_type in ("application/json", "text/plain", "application/apply-patch+yaml"):
        with pytest.raises(PatchError) as e:
            apply_patch(_pod(), "{}", content_type, kind="Pod", api_version="v1")
        assert e.value.code == 415
        assert e.value.reason == "UnsupportedMediaType"
        # go-restful's answer for a Content-Type the PATCH route does not consume
        assert e.value.message == "415: Unsupported Media Type"


def test_content_type_parameters_are_ignored() -> None:
    out = apply_patch(
        _pod(),
        b'{"metadata":{"labels":{"x":"y"}}}',
        "application/merge-patch+json; charset=utf-8",
        kind="Pod",
        api_version="v1",
    )
    assert out["metadata"]["labels"]["x"] == "y"


def test_smp_on_unknown_kind_is_415() -> None:
    with pytest.raises(PatchError) as e:
        apply_patch(
            {}, "{}", "application/strategic-merge-patch+json", kind="Widget", api_version="example.com/v1"
        )
    assert e.value.code == 415


@pytest.mark.parametrize("path", ["/metadata/finalizers/²", "/metadata/finalizers/٣"])
def test_non_ascii_digits_are_no_list_index(path: str) -> None:
    """str.isdigit takes "²" and "٣" (int() refuses the first): like Go's strconv.Atoi, an index
    is ASCII digits only, so these paths are missing members (422), not a crash."""
    obj = {"metadata": {"name": "x", "finalizers": ["a.io/b"]}}
    for op in ({"op": "replace", "path": path, "value": "x"}, {"op": "add", "path": path + "/k", "value": 1}):
        with pytest.raises(PatchError) as e:
            json_patch(obj, [op])
        assert e.value.code == 422


def test_a_patch_nested_deeper_than_the_parser_is_a_400() -> None:
    with pytest.raises(PatchError) as e:
        apply_patch({}, "[" * 100_000, "application/merge-patch+json", kind="ConfigMap", api_version="v1")
    assert e.value.code == 400 and e.value.message.startswith("error decoding patch")
