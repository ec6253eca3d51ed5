"""Fidelity scenarios, part one: writes (create, update, resize, patch, delete, status, binding).

Must not: hold anything but data (harness.py runs it, builders.py builds it).
"""

from __future__ import annotations

import json

import yaml

from tests.support.fidelity.builders import (
    POD_FIELDS,
    container,
    create,
    create_then_request,
    edited,
    grace_is,
    headline,
    labelled,
    listing,
    pod,
    pod_life_watched,
    read_back,
    rv_changed,
    set_label,
    set_path,
    vector,
)
from tests.support.fidelity.harness import (
    FAKE_NODE,
    JSON,
    JSON_PATCH,
    MERGE,
    PODS,
    SMP,
    Request,
    Scenario,
    at,
)

PROTOBUF = "application/vnd.kubernetes.protobuf"
UNKNOWN_UID = "00000000-0000-0000-0000-000000000000"
IMAGES = ("spec.containers[*].name", "spec.containers[*].image")
_RESOURCES = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}
_RESIZED = {"requests": {"cpu": "150m", "memory": "32Mi"}, "limits": {"cpu": "300m", "memory": "96Mi"}}
_GUARANTEED = {"requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}


OBJECT_SCENARIOS: tuple[Scenario, ...] = (
    # The watch cache of a fresh real server reaches back to its start, so RV 1 replays the
    # history; keep this first, before the many scenarios below fill and rotate that history.
    pod_life_watched(
        "watch-from-rv-1",
        "watch from resourceVersion 1: the whole history of the selected pods, in order",
        "fid-w1",
        since="1",
    ),
    # --- create, get, NotFound, AlreadyExists
    Scenario(
        "pod-create",
        "POST a pod: 201 and the whole defaulted, admitted pod",
        (create(PODS, pod("fid-create"), fields=POD_FIELDS),),
    ),
    Scenario(
        "pod-create-bound",
        "POST a pod with spec.nodeName (a node that does not exist)",
        (create(PODS, pod("fid-create-bound", node=FAKE_NODE), fields=POD_FIELDS),),
    ),
    Scenario(
        "pod-get",
        "GET a pod after creating it",
        (create(PODS, pod("fid-get")), Request("GET", at(PODS, "fid-get"), fields=POD_FIELDS)),
    ),
    Scenario(
        "pod-get-missing",
        "GET a pod that does not exist: 404 NotFound",
        (Request("GET", at(PODS, "fid-none")),),
    ),
    Scenario(
        "pod-create-duplicate",
        "POST the same pod twice: 409 AlreadyExists",
        (create(PODS, pod("fid-dup")), create(PODS, pod("fid-dup"))),
    ),
    Scenario(
        "pod-create-with-rv",
        "POST a pod carrying metadata.resourceVersion",
        (create(PODS, pod("fid-create-rv", meta={"resourceVersion": "5"})),),
    ),
    Scenario(
        "pod-create-namespace-mismatch",
        "POST to one namespace a pod whose metadata.namespace names another: 400",
        (create(PODS, pod("fid-ns-mismatch", meta={"namespace": "kube-system"})),),
    ),
    Scenario(
        "create-unsupported-type",
        "POST with Content-Type text/plain: 415, the media types the server decodes",
        (create(PODS, json.dumps(pod("fid-text")), content_type="text/plain"),),
    ),
    Scenario(
        "create-yaml",
        "POST with Content-Type application/yaml",
        (create(PODS, yaml.safe_dump(pod("fid-yaml")), content_type="application/yaml"),),
    ),
    Scenario(
        "create-protobuf",
        "POST a pod in protobuf as client-go encodes it (zero pointers, inline members, quantities)",
        (create(PODS, vector("pod"), content_type=PROTOBUF, fields=POD_FIELDS),),
    ),
    Scenario(
        "delete-protobuf-options",
        "DELETE with protobuf DeleteOptions: gracePeriodSeconds 0, propagationPolicy, dryRun All",
        (
            create(PODS, pod("fid-pb-delete", node=FAKE_NODE)),
            Request(
                "DELETE", at(PODS, "fid-pb-delete"), vector("deleteoptions"), PROTOBUF, fields=POD_FIELDS
            ),
        ),
    ),
    Scenario(
        "generate-name",
        "POST with generateName: the prefix plus 5 random characters",
        (create(PODS, pod("", meta={"generateName": "fid-gen-"})),),
        generated=("fid-gen-",),
    ),
    # --- updates
    Scenario(
        "update-stale-rv",
        "PUT with the resourceVersion of before a PATCH: 409 Conflict (the text clients match)",
        (
            create(PODS, pod("fid-stale")),
            Request("PATCH", at(PODS, "fid-stale"), {"metadata": {"labels": {"x": "1"}}}, MERGE),
            Request("PUT", at(PODS, "fid-stale"), edited(0, set_label("y", "2"))),
        ),
    ),
    *(
        create_then_request(name, about, pod(pod_name), "PUT", edited(0, change, rv=rv), derive=rv_changed)
        for name, about, pod_name, change, rv in (
            (
                "update-fresh-rv",
                "PUT with the current resourceVersion: 200, a new resourceVersion",
                "fid-fresh",
                set_label("y", "2"),
                None,
            ),
            (
                "update-without-rv",
                "PUT without a resourceVersion: an unconditional update for pods",
                "fid-no-rv",
                set_label("y", "2"),
                "",
            ),
            (
                "update-noop",
                "PUT of the unchanged object: 200, the resourceVersion stays",
                "fid-noop",
                lambda o: None,
                None,
            ),
        )
    ),
    *(
        create_then_request(
            name, about, pod(pod_name), "PUT", edited(0, set_path(path, value)), fields=fields, derive=derive
        )
        for name, about, pod_name, path, value, fields, derive in (
            (
                "update-name-mismatch",
                "PUT to one name a body naming another: 400",
                "fid-name-a",
                "metadata.name",
                "fid-name-b",
                (),
                None,
            ),
            (
                "update-image",
                "PUT changing a container image (allowed on pods)",
                "fid-image",
                "spec.containers[0].image",
                "busybox:2",
                IMAGES,
                None,
            ),
            (
                "immutable-pod-spec",
                "PUT changing restartPolicy: 422, pod updates may not change other fields",
                "fid-immutable",
                "spec.restartPolicy",
                "Never",
                (),
                headline,
            ),
        )
    ),
    create_then_request(
        "immutable-node-name",
        "PATCH setting spec.nodeName on an unbound pod: 422",
        pod("fid-set-node"),
        "PATCH",
        {"spec": {"nodeName": FAKE_NODE}},
        SMP,
        derive=headline,
    ),
    # --- pods/resize (podResizeStrategy, ValidatePodResize)
    Scenario(
        "resize-subresource",
        "PATCH pods/x/resize: the resources change, the generation moves, an image change is dropped",
        (
            create(PODS, pod("fid-resize", containers=[container(resources=_RESOURCES)])),
            Request(
                "PATCH",
                at(PODS, "fid-resize", "resize"),
                {"spec": {"containers": [{"name": "c", "image": "busybox:2", "resources": _RESIZED}]}},
                SMP,
                fields=(*IMAGES, "spec.containers[*].resources"),
            ),
            Request("GET", at(PODS, "fid-resize", "resize"), fields=("spec.containers[*].resources",)),
        ),
    ),
    *(
        create_then_request(
            name,
            about,
            pod(pod_name, containers=[container(resources=_RESOURCES)]),
            "PATCH",
            {"spec": {"containers": [{"name": "c", "resources": resources}]}},
            SMP,
            sub=sub,
            derive=derive,
        )
        for name, about, pod_name, sub, resources, derive in (
            (
                "resize-remove-limits",
                "PATCH pods/x/resize removing a limit: 422, resource limits cannot be removed",
                "fid-resize-rm",
                "resize",
                {"limits": {"memory": None}},
                None,
            ),
            (
                "resize-qos-change",
                "PATCH pods/x/resize making a Burstable pod Guaranteed: 422, the QoS class may not change",
                "fid-resize-qos",
                "resize",
                _GUARANTEED,
                None,
            ),
            (
                "resize-other-resource",
                "PATCH pods/x/resize of ephemeral-storage: 422, only cpu and memory are mutable",
                "fid-resize-eph",
                "resize",
                {"limits": {"ephemeral-storage": "1Gi"}},
                None,
            ),
            (
                "resize-main-resource",
                "PATCH of a container's resources through the pod itself: 422, a forbidden pod update",
                "fid-resize-main",
                "",
                _RESIZED,
                headline,
            ),
        )
    ),
    # --- patches
    create_then_request(
        "patch-strategic-containers",
        "strategic merge patch of one container of two, by its merge key `name`",
        pod("fid-smp", containers=[container("a"), container("b")]),
        "PATCH",
        {"spec": {"containers": [{"name": "b", "image": "busybox:2"}]}},
        SMP,
        fields=IMAGES,
    ),
    create_then_request(
        "patch-strategic-env-forbidden",
        "strategic merge patch adding a container env var (merge key `name`): 422, a forbidden pod update",
        pod("fid-smp-env", containers=[container(env=[{"name": "A", "value": "1"}])]),
        "PATCH",
        {"spec": {"containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]}]}},
        SMP,
        derive=headline,
    ),
    *(
        create_then_request(
            name,
            about,
            pod(pod_name, meta={"labels": {"a": "1", "b": "2"}, "finalizers": ["x.io/a"]}),
            "PATCH",
            {"metadata": {"labels": {"a": None, "c": "3"}, "finalizers": ["x.io/b"]}},
            content_type,
            then=(Request("PATCH", at(PODS, pod_name), {"metadata": {"finalizers": None}}, MERGE),),
        )
        for name, about, pod_name, content_type in (
            (
                "patch-strategic-metadata",
                "strategic merge patch of labels (null deletes) and finalizers (a merged set)",
                "fid-smp-meta",
                SMP,
            ),
            (
                "patch-merge",
                "JSON merge patch: labels merged, null deletes, a list (finalizers) replaced",
                "fid-merge",
                MERGE,
            ),
        )
    ),
    create_then_request(
        "patch-json",
        "JSON patch: add a label, replace an image",
        pod("fid-jsonpatch"),
        "PATCH",
        [
            {"op": "add", "path": "/metadata/labels/j", "value": "1"},
            {"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:2"},
        ],
        JSON_PATCH,
        fields=IMAGES,
    ),
    create_then_request(
        "patch-json-test-fails",
        "JSON patch whose `test` operation fails: 422",
        pod("fid-jsontest"),
        "PATCH",
        [{"op": "test", "path": "/metadata/labels/fidelity", "value": "no"}],
        JSON_PATCH,
    ),
    create_then_request(
        "patch-json-bad-path",
        "JSON patch removing a path that does not exist",
        pod("fid-jsonbad"),
        "PATCH",
        [{"op": "remove", "path": "/metadata/labels/nope"}],
        JSON_PATCH,
    ),
    create_then_request(
        "patch-unsupported-type",
        "PATCH with Content-Type text/plain: 415",
        pod("fid-415"),
        "PATCH",
        "{}",
        "text/plain",
        then=(Request("PATCH", at(PODS, "fid-415"), "{}", JSON),),
    ),
    Scenario(
        "patch-missing",
        "PATCH of a pod that does not exist: 404",
        (Request("PATCH", at(PODS, "fid-none"), {"metadata": {"labels": {"a": "1"}}}, SMP),),
    ),
    Scenario(
        "patch-rv-precondition",
        "PATCH carrying a stale metadata.resourceVersion: 409 Conflict",
        (
            create(PODS, pod("fid-patch-rv")),
            Request("PATCH", at(PODS, "fid-patch-rv"), {"metadata": {"labels": {"x": "1"}}}, MERGE),
            Request(
                "PATCH",
                at(PODS, "fid-patch-rv"),
                lambda a: {"metadata": {"resourceVersion": a[0].rv, "labels": {"y": "1"}}},
                MERGE,
            ),
        ),
    ),
    # --- delete
    create_then_request(
        "delete-unbound",
        "DELETE an unbound pod: gone at once, the answer is the pod",
        pod("fid-del"),
        "DELETE",
        then=(read_back("fid-del"),),
    ),
    Scenario(
        "delete-missing", "DELETE a pod that does not exist: 404", (Request("DELETE", at(PODS, "fid-none")),)
    ),
    create_then_request(
        "delete-precondition-uid",
        "DELETE with a uid precondition that does not match: 409",
        pod("fid-del-uid"),
        "DELETE",
        {"preconditions": {"uid": UNKNOWN_UID}},
    ),
    create_then_request(
        "delete-precondition-rv",
        "DELETE with a resourceVersion precondition that does not match: 409",
        pod("fid-del-rv"),
        "DELETE",
        {"preconditions": {"resourceVersion": "1"}},
    ),
    create_then_request(
        "delete-grace-unbound",
        "DELETE gracePeriodSeconds=30 of an unbound pod: removed at once (grace forced to 0)",
        pod("fid-grace-unbound"),
        "DELETE",
        {"gracePeriodSeconds": 30},
        then=(read_back("fid-grace-unbound"),),
    ),
    Scenario(
        "delete-grace-bound",
        "DELETE gracePeriodSeconds=30 of a bound pod: deletionTimestamp now+30 s, still there; a longer "
        "grace changes nothing, a shorter one moves it",
        (
            create(PODS, pod("fid-grace-bound", node=FAKE_NODE)),
            Request("DELETE", at(PODS, "fid-grace-bound"), {"gracePeriodSeconds": 30}, derive=grace_is(30)),
            Request("GET", at(PODS, "fid-grace-bound")),
            Request("DELETE", at(PODS, "fid-grace-bound"), {"gracePeriodSeconds": 60}, derive=grace_is(30)),
            Request("DELETE", at(PODS, "fid-grace-bound"), {"gracePeriodSeconds": 10}, derive=grace_is(10)),
        ),
    ),
    Scenario(
        "delete-finalizer",
        "DELETE of a pod with a finalizer: it stays, deleting; removing the finalizer removes it",
        (
            create(PODS, pod("fid-fin", meta={"finalizers": ["x.io/hold"]})),
            Request("DELETE", at(PODS, "fid-fin")),
            Request("GET", at(PODS, "fid-fin")),
            Request("PATCH", at(PODS, "fid-fin"), {"metadata": {"finalizers": None}}, MERGE),
            Request("GET", at(PODS, "fid-fin")),
        ),
    ),
    Scenario(
        "delete-collection",
        "DELETE of a collection by label selector: the list of what was deleted",
        (
            create(PODS, labelled("fid-dc-a", s="dc")),
            create(PODS, labelled("fid-dc-b", s="dc")),
            Request("DELETE", PODS, query={"labelSelector": "s=dc"}),
            listing(PODS, labelSelector="s=dc"),
        ),
    ),
    # --- status subresource
    create_then_request(
        "status-put-ignores-spec",
        "PUT pods/status: status changes, spec changes are ignored",
        pod("fid-status-put"),
        "PUT",
        edited(
            0,
            lambda o: (
                set_path("spec.containers[0].image", "busybox:9")(o),
                set_path("status.message", "hi")(o),
            ),
        ),
        sub="status",
        fields=(*IMAGES, "status.message"),
    ),
    create_then_request(
        "status-patch-conditions",
        "strategic merge patches of pods/status: conditions merged by `type`, spec ignored",
        pod("fid-status-patch"),
        "PATCH",
        {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        SMP,
        sub="status",
        fields=("status.conditions",),
        then=(
            Request(
                "PATCH",
                at(PODS, "fid-status-patch", "status"),
                {
                    "spec": {"activeDeadlineSeconds": 5},
                    "status": {"conditions": [{"type": "Initialized", "status": "True"}]},
                },
                SMP,
                fields=("status.conditions", "spec.activeDeadlineSeconds"),
            ),
        ),
    ),
    create_then_request(
        "main-ignores-status",
        "PUT of the pod with a changed status: the status change is ignored",
        pod("fid-main-status"),
        "PUT",
        edited(0, lambda o: (set_path("status.phase", "Running")(o), set_label("z", "1")(o))),
        fields=("status",),
    ),
    Scenario(
        "status-missing",
        "PATCH pods/status of a pod that does not exist: 404",
        (Request("PATCH", at(PODS, "fid-none", "status"), {"status": {"message": "x"}}, SMP),),
    ),
    # --- binding
    Scenario(
        "pod-binding",
        "POST pods/binding: 201 Success, the pod is bound; a second binding: 409",
        (
            create(PODS, pod("fid-bind")),
            create(
                at(PODS, "fid-bind", "binding"),
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "fid-bind"},
                    "target": {"kind": "Node", "name": FAKE_NODE},
                },
            ),
            Request("GET", at(PODS, "fid-bind"), fields=("spec.nodeName", "status.conditions")),
            create(
                at(PODS, "fid-bind", "binding"),
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "fid-bind"},
                    "target": {"kind": "Node", "name": "other"},
                },
            ),
        ),
    ),
)
