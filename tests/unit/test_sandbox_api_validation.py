"""Validation against the official KUBE_VERSION schemas plus the pod rules, with the real server's causes."""

from __future__ import annotations

import copy
from typing import Any

from vk_common.kube_version import KUBE_VERSION
from vk_sandbox.api.validation.kinds import validate_mirror_pod, validate_object, validate_pod_update
from vk_sandbox.api.validation.schema import decode, decode_errors, too_deep, unknown_fields


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "app", "image": "vk-test/busybox:1", "ports": [{"containerPort": 80}]}],
            "restartPolicy": "Always",
            **spec,
        },
    }


def by_field(causes: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {c["field"]: c for c in causes}


def test_valid_pod_has_no_causes() -> None:
    pod = _pod(
        volumes=[{"name": "data", "emptyDir": {}}],
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        nodeSelector={"disk": "ssd"},
    )
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": 1024}}
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    assert validate_object(pod) == []


def test_unknown_field_strict() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["foo"] = 1
    pod["spec"]["bogus"] = True
    assert sorted(unknown_fields(pod)) == ["spec.bogus", "spec.containers[0].foo"]
    causes = by_field(validate_object(pod))
    assert causes["spec.containers[0].foo"] == {
        "reason": "FieldValueInvalid",
        "message": 'unknown field "spec.containers[0].foo"',
        "field": "spec.containers[0].foo",
    }
    assert "spec.containers[0].foo" not in by_field(validate_object(pod, strict=False))


def test_image_required_and_names_unique_across_init_and_app() -> None:
    pod = _pod(initContainers=[{"name": "app", "image": "x"}])
    pod["spec"]["containers"].append({"name": "side"})
    causes = by_field(validate_object(pod))
    assert causes["spec.containers[1].image"] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.containers[1].image",
    }
    assert causes["spec.initContainers[0].name"]["reason"] == "FieldValueDuplicate"
    assert causes["spec.initContainers[0].name"]["message"] == 'Duplicate value: "app"'


def test_container_name_required_by_schema() -> None:
    pod = _pod()
    del pod["spec"]["containers"][0]["name"]
    assert by_field(validate_object(pod))["spec.containers[0].name"]["reason"] == "FieldValueRequired"


def test_containers_required() -> None:
    pod = _pod()
    pod["spec"]["containers"] = []
    assert by_field(validate_object(pod))["spec.containers"]["reason"] == "FieldValueRequired"


def test_restart_policy_enum() -> None:
    causes = by_field(validate_object(_pod(restartPolicy="Sometimes")))
    assert causes["spec.restartPolicy"] == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        "field": "spec.restartPolicy",
    }


def test_metadata_name_dns_subdomain() -> None:
    pod = _pod()
    pod["metadata"]["name"] = "Web_1"
    cause = by_field(validate_object(pod))["metadata.name"]
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["message"].startswith(
        'Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
        "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        "regex used for validation is"
    )
    del pod["metadata"]["name"]
    assert by_field(validate_object(pod))["metadata.name"]["message"] == (
        "Required value: name or generateName is required"
    )
    pod["metadata"]["generateName"] = "web-"
    assert "metadata.name" not in by_field(validate_object(pod))


def test_namespace_name_is_dns_label() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    assert by_field(validate_object(ns))["metadata.name"]["message"].startswith(
        'Invalid value: "a.b": a lowercase RFC 1123 label'
    )


def test_type_errors_and_bad_labels() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["ports"][0]["containerPort"] = "80"
    pod["spec"]["containers"][0]["image"] = ""
    causes = by_field(validate_object(pod))
    assert causes["spec.containers[0].ports[0].containerPort"]["reason"] == "FieldValueInvalid"
    # Like the real server, which stops at decoding, no kind rules run on a mistyped object.
    assert "spec.containers[0].image" not in causes
    pod = _pod()
    pod["metadata"]["labels"]["bad key"] = "x"
    causes = by_field(validate_object(pod))
    assert causes["metadata.labels"]["message"].startswith(
        'Invalid value: "bad key": name part must consist of'
    )


def test_volume_mount_must_name_a_volume_and_ports_in_range() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "nope", "mountPath": "/x"}]
    pod["spec"]["containers"][0]["ports"][0]["containerPort"] = 70000
    causes = by_field(validate_object(pod))
    assert causes["spec.containers[0].volumeMounts[0].name"]["reason"] == "FieldValueNotFound"
    assert causes["spec.containers[0].ports[0].containerPort"]["message"] == (
        "Invalid value: 70000: must be between 1 and 65535, inclusive"
    )


def test_other_kinds() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    assert validate_object(cm) == []
    cm["data"]["n"] = 1
    assert by_field(validate_object(cm))["data[n]"]["reason"] == "FieldValueInvalid"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": "not base64!"}}
    assert by_field(validate_object(secret))["data[a]"]["reason"] == "FieldValueInvalid"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "n1", "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": "n1",
            "leaseDurationSeconds": 40,
            "renewTime": "2026-01-01T00:00:00.000000Z",
        },
    }
    assert validate_object(lease) == []


def test_pod_update_allows_image_and_toleration_additions() -> None:
    old = _pod(tolerations=[{"key": "a", "operator": "Exists"}], activeDeadlineSeconds=100)
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "vk-test/busybox:2"
    new["spec"]["tolerations"].append({"key": "b", "operator": "Exists"})
    new["spec"]["activeDeadlineSeconds"] = 50
    new["metadata"]["labels"]["x"] = "y"
    assert validate_pod_update(old, new) == []


def test_pod_update_forbidden_spec_change() -> None:
    old = _pod()
    new = copy.deepcopy(old)
    new["spec"]["restartPolicy"] = "Never"
    causes = validate_pod_update(old, new)
    assert len(causes) == 1
    assert causes[0]["reason"] == "FieldValueForbidden"
    assert causes[0]["field"] == "spec"
    assert causes[0]["message"].startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
    )
    assert '- \tspec.restartPolicy: "Always",\n+ \tspec.restartPolicy: "Never",' in causes[0]["message"]


def test_pod_update_removing_toleration_and_raising_deadline() -> None:
    old = _pod(tolerations=[{"key": "a", "operator": "Exists"}], activeDeadlineSeconds=100)
    new = copy.deepcopy(old)
    new["spec"]["tolerations"] = []
    new["spec"]["activeDeadlineSeconds"] = 200
    causes = by_field(validate_pod_update(old, new))
    assert causes["spec.activeDeadlineSeconds"]["message"] == (
        "Invalid value: 200: must be less than or equal to previous value"
    )
    assert causes["spec.tolerations"]["message"] == (
        "Forbidden: existing toleration can not be modified except its tolerationSeconds"
    )
    assert "spec" not in causes
    seconds = copy.deepcopy(old)
    seconds["spec"]["tolerations"][0]["tolerationSeconds"] = 5
    assert validate_pod_update(old, seconds) == []


def test_pod_update_compares_tolerations_as_go_structs() -> None:
    """validateOnlyAddedTolerations: an absent field is its zero value, but an absent operator is
    not "Equal" (it has no default); tolerationSeconds may change."""
    old = _pod(tolerations=[{"key": "a", "value": "v", "effect": "NoSchedule"}])
    same = copy.deepcopy(old)
    same["spec"]["tolerations"] = [{"key": "a", "operator": "", "value": "v", "effect": "NoSchedule"}]
    assert validate_pod_update(old, same) == []
    equal = copy.deepcopy(old)
    equal["spec"]["tolerations"][0]["operator"] = "Equal"
    assert by_field(validate_pod_update(old, equal))["spec.tolerations"]["reason"] == "FieldValueForbidden"
    exists = _pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute"}])
    timed = copy.deepcopy(exists)
    timed["spec"]["tolerations"][0]["tolerationSeconds"] = 300
    assert validate_pod_update(exists, timed) == []
    assert validate_pod_update(timed, exists) == []


def test_mirror_pod_rules() -> None:
    mirror = _pod(nodeName="vk-node")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash1"}
    assert validate_object(mirror) == []
    unbound = copy.deepcopy(mirror)
    del unbound["spec"]["nodeName"]
    assert validate_mirror_pod(mirror) == []
    assert by_field(validate_mirror_pod(unbound))["metadata.annotations[kubernetes.io/config.mirror]"][
        "message"
    ] == ('Invalid value: "hash1": must set spec.nodeName if mirror pod annotation is set')
    plain = _pod(nodeName="vk-node")
    assert validate_mirror_pod(mirror, plain) == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not add mirror pod annotation",
            "field": "metadata.annotations[kubernetes.io/config.mirror]",
        }
    ]
    assert validate_mirror_pod(plain, mirror)[0]["message"] == (
        "Forbidden: may not remove or update mirror pod annotation"
    )
    changed = copy.deepcopy(mirror)
    changed["metadata"]["annotations"]["kubernetes.io/config.mirror"] = "hash2"
    assert by_field(validate_mirror_pod(changed, mirror))["metadata.annotations[kubernetes.io/config.mirror]"]
    assert validate_pod_update(mirror, changed) == []
    assert validate_mirror_pod(mirror, copy.deepcopy(mirror)) == []


def test_decode_errors_worded_like_the_go_decoder() -> None:
    pod = _pod(hostNetwork="yes", nodeSelector="x")
    pod["spec"]["containers"][0]["ports"][0]["containerPort"] = "80"
    pod["metadata"]["labels"]["n"] = 1
    assert decode_errors(pod) == [
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        "json: cannot unmarshal string into Go struct field "
        "ContainerPort.spec.containers.ports.containerPort of type int32",
        "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool",
        "json: cannot unmarshal string into Go struct field "
        "PodSpec.spec.nodeSelector of type map[string]string",
    ]
    assert decode_errors({"apiVersion": "v1", "kind": "Pod", "spec": []}) == [
        "json: cannot unmarshal array into Go struct field Pod.spec of type v1.PodSpec"
    ]
    assert decode_errors(_pod()) == []


def test_resources_probes_env() -> None:
    pod = _pod()
    c = pod["spec"]["containers"][0]
    c["resources"] = {"limits": {"cpu": "1", "memory": "64Mi"}, "requests": {"cpu": "2", "memory": "-1"}}
    c["livenessProbe"] = {"periodSeconds": 5}
    c["readinessProbe"] = {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}
    c["env"] = [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    causes = by_field(validate_object(pod))
    assert causes["spec.containers[0].resources.requests"]["message"] == (
        'Invalid value: "2": must be less than or equal to cpu limit of 1'
    )
    assert causes["spec.containers[0].resources.requests[memory]"]["message"] == (
        'Invalid value: "-1": must be greater than or equal to 0'
    )
    assert (
        causes["spec.containers[0].livenessProbe"]["message"] == "Required value: must specify a handler type"
    )
    assert causes["spec.containers[0].readinessProbe.tcpSocket"]["message"] == (
        "Forbidden: may not specify more than 1 handler type"
    )
    assert causes["spec.containers[0].env[0].valueFrom"]["message"] == (
        'Invalid value: "": may not be specified when `value` is not empty'
    )


def test_malformed_quantity_is_a_decode_error() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    assert decode_errors(pod) == [
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    ]
    assert by_field(validate_object(pod))["spec.containers[0].resources.requests[cpu]"]["reason"] == (
        "FieldValueInvalid"
    )


def _event(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "Started",
        "message": "Started container app",
        "type": "Normal",
        **fields,
    }


def test_legacy_event_rules() -> None:
    assert validate_object(_event()) == []
    other_ns = _event(involvedObject={"kind": "Pod", "name": "web", "namespace": "other"})
    assert by_field(validate_object(other_ns))["involvedObject.namespace"]["message"] == (
        'Invalid value: "other": does not match event.namespace'
    )
    # A node event (cluster-scoped object) may live in "default" without eventTime ...
    node_event = _event(involvedObject={"kind": "Node", "name": "n1"})
    assert validate_object(node_event) == []
    node_event["metadata"]["namespace"] = "kube-system"
    assert "involvedObject.namespace" in by_field(validate_object(node_event))
    # ... and in kube-system only as a "new" event, which then needs the reporting fields.
    node_event["eventTime"] = "2026-01-01T00:00:00.000000Z"
    causes = by_field(validate_object(node_event))
    assert "involvedObject.namespace" not in causes
    component = [c["message"] for c in validate_object(node_event) if c["field"] == "reportingComponent"]
    assert component[:2] == ["Required value", 'Invalid value: "": name part must be non-empty']
    assert causes["reportingInstance"]["reason"] == "FieldValueRequired"
    assert causes["action"]["reason"] == "FieldValueRequired"
    node_event.update(reportingComponent="vk-provider", reportingInstance="n1", action="Started")
    assert validate_object(node_event) == []


def test_tolerations_and_taints() -> None:
    pod = _pod(
        tolerations=[
            {"key": "k", "operator": "In"},
            {"operator": "Equal", "value": "x"},
            {"key": "k", "operator": "Exists", "value": "x"},
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5},
            {"key": "k", "operator": "Exists", "effect": "Sometimes"},
        ]
    )
    causes = validate_object(pod)
    messages = {(c["field"], c["message"]) for c in causes}
    assert (
        "spec.tolerations[0].operator",
        'Unsupported value: "In": supported values: "Equal", "Exists"',
    ) in messages
    assert (
        "spec.tolerations[1].operator",
        'Invalid value: "Equal": operator must be Exists when `key` is empty, '
        'which means "match all values and all keys"',
    ) in messages
    assert (
        "spec.tolerations[2].operator",
        "Invalid value: \"x\": value must be empty when `operator` is 'Exists'",
    ) in messages
    assert (
        "spec.tolerations[3].effect",
        "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
    ) in messages
    assert (
        "spec.tolerations[4].effect",
        'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
    ) in messages
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "spec": {
            "taints": [
                {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                {
                    "key": "node.kubernetes.io/unreachable",
                    "effect": "NoExecute",
                    "timeAdded": "2026-01-01T00:00:00Z",
                },
            ]
        },
    }
    assert validate_object(node) == []
    node["spec"]["taints"].append({"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"})
    node["spec"]["taints"].append({"key": "x"})
    causes = by_field(validate_object(node))
    assert causes["spec.taints[2]"]["reason"] == "FieldValueDuplicate"
    assert causes["spec.taints[2]"]["message"].endswith(": taints must be unique by key and effect pair")
    assert causes["spec.taints[3].effect"]["reason"] == "FieldValueRequired"


def test_schema_required_fields_outside_hand_written_rules_are_accepted() -> None:
    """A Node without status.nodeInfo.kubeProxyVersion is accepted, as the real server does."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"nodeInfo": {"kubeletVersion": KUBE_VERSION, "operatingSystem": "linux"}},
    }
    assert validate_object(node) == []


def test_owner_reference_fields_stay_required() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n"}]},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    causes = by_field(validate_object(pod))
    assert causes["metadata.ownerReferences[0].uid"]["reason"] == "FieldValueRequired"


def test_decode_reads_nulls_as_the_go_decoder() -> None:
    """Null list items and map values become zero values (the real server stores
    `conditions: [null]` as one empty condition), null struct/map/list fields are left out, a
    null time stays null, undeclared fields are dropped."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "labels": {"a": None}, "annotations": None},
        "spec": {"podCIDRs": [None], "taints": None, "bogus": 1},
        "status": {"conditions": [None, {"type": "Ready", "lastHeartbeatTime": None}]},
    }
    assert decode(node) == ([], ["spec.bogus"])
    assert node["metadata"] == {"name": "n", "labels": {"a": ""}}
    assert node["spec"] == {"podCIDRs": [""]}
    assert node["status"] == {
        "conditions": [{"type": "", "status": ""}, {"type": "Ready", "lastHeartbeatTime": None}]
    }


def test_decode_leaves_out_empty_omitempty_maps_and_lists() -> None:
    """What json.Marshal of the stored object leaves out: an empty map or slice of an omitempty
    field (a ConfigMap's `data: {}`); an empty struct stays, and so do empty items and values."""
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {}, "annotations": {"a": ""}, "finalizers": []},
        "data": {},
        "binaryData": {},
    }
    assert decode(cm) == ([], [])
    assert cm == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "annotations": {"a": ""}},
    }
    pod = _pod(securityContext={}, volumes=[{"name": "v", "emptyDir": {}}], tolerations=[])
    decode(pod)
    assert pod["spec"]["securityContext"] == {}
    assert pod["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]
    assert "tolerations" not in pod["spec"]


def test_decode_refuses_integers_outside_their_go_type() -> None:
    pod = _pod(priority=2**31, terminationGracePeriodSeconds=1.5, activeDeadlineSeconds=1e99)
    assert decode(pod)[0] == [
        "json: cannot unmarshal number 2147483648 into Go struct field PodSpec.spec.priority of type int32",
        "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.terminationGracePeriodSeconds "
        "of type int64",
        "json: cannot unmarshal number 1e+99 into Go struct field PodSpec.spec.activeDeadlineSeconds of type "
        "int64",
    ]
    assert decode(_pod(priority=2**31 - 1, terminationGracePeriodSeconds=30.0))[0] == []


def test_decode_as_a_named_type() -> None:
    assert decode({"preconditions": 5}, "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions")[0] == [
        "json: cannot unmarshal number into Go struct field DeleteOptions.preconditions of type "
        "v1.Preconditions"
    ]


def test_generate_name_is_validated_as_a_name_prefix() -> None:
    """ValidateObjectMeta checks generateName with its trailing '-' masked, then the name."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": "Bad\\Name,x=", "name": "Bad\\Name,x=ab"},
    }
    fields = [c["field"] for c in validate_object(node)]
    assert fields == ["metadata.generateName", "metadata.name"]
    ok = {"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": "node-"}}
    assert validate_object(ok) == []


def test_too_deep_counts_objects_and_lists() -> None:
    value: Any = "leaf"
    for i in range(100):
        value = [value] if i % 2 else {"a": value}
    assert not too_deep(value)
    assert too_deep([value])
    assert not too_deep([[1] * 10_000])


def test_probe_and_hook_ports_are_numbers_in_range_or_port_names() -> None:
    """ValidatePortNumOrName, as the real server's 422 (the invalid-probe-ports fidelity scenario)."""
    pod = _pod()
    container = pod["spec"]["containers"][0]
    container["readinessProbe"] = {"tcpSocket": {"port": -1}}
    container["livenessProbe"] = {"httpGet": {"path": "/", "port": "Web--1"}}
    container["startupProbe"] = {"grpc": {"port": 70000}}
    container["lifecycle"] = {"preStop": {"tcpSocket": {"port": 0}}, "postStart": {}}
    causes = [(c["field"], c["message"]) for c in validate_object(pod)]
    p = "spec.containers[0]"
    assert causes == [
        (f"{p}.lifecycle.postStart", "Required value: must specify a handler type"),
        (f"{p}.lifecycle.preStop.tcpSocket.port", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        (
            f"{p}.livenessProbe.httpGet.port",
            'Invalid value: "Web--1": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
        ),
        (f"{p}.livenessProbe.httpGet.port", 'Invalid value: "Web--1": must not contain consecutive hyphens'),
        (f"{p}.readinessProbe.tcpSocket.port", "Invalid value: -1: must be between 1 and 65535, inclusive"),
        (f"{p}.startupProbe.grpc.port", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
    ]
    container["readinessProbe"] = {"tcpSocket": {"port": "http"}}
    container["livenessProbe"] = {"httpGet": {"path": "/", "port": 8080}}
    container["startupProbe"] = {"grpc": {"port": 9000}}
    container["lifecycle"] = {"preStop": {"sleep": {"seconds": 1}}}
    assert validate_object(pod) == []
