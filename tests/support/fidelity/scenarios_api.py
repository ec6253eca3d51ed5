"""Fidelity scenarios, part two: watch, validation, dry run, kubectl, Tables, configmaps, nodes, leases.

Must not: hold anything but data (harness.py runs it, builders.py builds it).
"""

from __future__ import annotations

import json

from tests.support.fidelity.builders import (
    POD_FIELDS,
    configmap,
    create,
    create_then_request,
    edited,
    labelled,
    labels,
    lease,
    listing,
    node,
    pod,
    pod_life_watched,
    pods_watched,
    secret,
    set_path,
)
from tests.support.fidelity.harness import (
    CONFIGMAPS,
    FAKE_NODE,
    JSON_PATCH,
    LEASES,
    MARK,
    MERGE,
    NODES,
    NS,
    PODS,
    PODTEMPLATES,
    RUNTIMECLASSES,
    SECRETS,
    SMP,
    TABLE,
    Kubectl,
    Request,
    Scenario,
    Watch,
    at,
)

POD_TEMPLATE = {
    "apiVersion": "v1",
    "kind": "PodTemplate",
    "metadata": {"name": "fid-pt", "labels": labels()},
    "template": {
        "metadata": {"labels": {"app": "web", "tier": "front"}},
        "spec": {"containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "nginx"}]},
    },
}

RUNTIME_CLASS = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "fid-rc", "labels": labels()},
    "handler": "runc",
    "overhead": {"podFixed": {"cpu": "10m", "memory": "1Mi"}},
    "scheduling": {
        "nodeSelector": {"sandbox": "yes"},
        "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}],
    },
}

API_SCENARIOS: tuple[Scenario, ...] = (
    # --- watch
    pod_life_watched(
        "watch-from-rv",
        "watch from the resourceVersion of a create: MODIFIED then DELETED, nothing synthetic",
        "fid-watch",
        since=None,
    ),
    pods_watched(
        "watch-without-rv",
        "watch without a resourceVersion: one synthetic ADDED per existing object",
        ("fid-wa", "fid-wb"),
        "watch-now",
        {"labelSelector": "s=watch-now"},
    ),
    Scenario(
        "watch-selector-transitions",
        "watch with a label selector while a pod's label moves in and out: ADDED, then DELETED",
        (
            create(PODS, labelled("fid-wsel", s="wsel", tier="a")),
            Request("PATCH", at(PODS, "fid-wsel"), {"metadata": {"labels": {"tier": "b"}}}, MERGE),
            Request("PATCH", at(PODS, "fid-wsel"), {"metadata": {"labels": {"tier": "a"}}}, MERGE),
            Watch(PODS, lambda a: {"resourceVersion": a[0].rv, "labelSelector": "s=wsel,tier=b"}),
        ),
    ),
    pods_watched(
        "watch-field-selector",
        "watch with fieldSelector metadata.name, as kubectl get -w NAME",
        ("fid-wf", "fid-wf-other"),
        "wf",
        {"resourceVersion": "0", "fieldSelector": "metadata.name=fid-wf"},
    ),
    Scenario(
        "watch-future-rv",
        "watch from a resourceVersion far ahead of the server's",
        (Watch(PODS, {"resourceVersion": "999999999", "labelSelector": MARK}),),
    ),
    Scenario(
        "bad-resource-version",
        "a resourceVersion that is not a number: GET, LIST and WATCH each answer it their way",
        (
            create(PODS, pod("fid-bad-rv")),
            Request("GET", at(PODS, "fid-bad-rv"), query={"resourceVersion": "abc"}),
            listing(PODS, resourceVersion="abc"),
            Watch(PODS, {"resourceVersion": "abc", "labelSelector": MARK}),
        ),
    ),
    Scenario(
        "list-label-selectors",
        "list with label selectors: =, !=, in, notin, exists, !exists",
        (
            create(PODS, labelled("fid-l-web", tier="web", env="prod")),
            create(PODS, labelled("fid-l-db", tier="db")),
            create(PODS, labelled("fid-l-none")),
            listing(PODS, labelSelector="fidelity,tier=web"),
            listing(PODS, labelSelector="fidelity,tier!=web"),
            listing(PODS, labelSelector="fidelity,tier in (web,db)"),
            listing(PODS, labelSelector="fidelity,tier notin (web)"),
            listing(PODS, labelSelector="fidelity,env"),
            listing(PODS, labelSelector="fidelity,!env"),
            listing(PODS, labelSelector="fidelity,tier in (web"),
        ),
    ),
    Scenario(
        "list-field-selectors",
        "list with field selectors: metadata.name, spec.nodeName, status.phase, !=",
        (
            create(PODS, pod("fid-f-unbound")),
            create(PODS, pod("fid-f-bound", node=FAKE_NODE)),
            listing(PODS, labelSelector=MARK, fieldSelector="metadata.name=fid-f-unbound"),
            listing(PODS, labelSelector=MARK, fieldSelector=f"spec.nodeName={FAKE_NODE}"),
            listing(PODS, labelSelector=MARK, fieldSelector="spec.nodeName="),
            listing(
                PODS, labelSelector=MARK, fieldSelector="status.phase=Pending,metadata.name!=fid-f-bound"
            ),
        ),
    ),
    Scenario(
        "list-field-selector-unsupported",
        "list with a field the server cannot select on: 400",
        (listing(PODS, fieldSelector="spec.priority=0"),),
    ),
    Scenario(
        "list-resource-version",
        "list resourceVersion rules: the list RV, RV=0, Exact at an older RV, match without RV",
        (
            create(PODS, labelled("fid-lrv", s="lrv")),
            Request(
                "GET",
                PODS,
                query={"labelSelector": "s=lrv"},
                derive=lambda a, e: {"list_rv_not_older": int(a.rv) >= int(e[0].rv)},
            ),
            listing(PODS, labelSelector="s=lrv", resourceVersion="0"),
            create(PODS, labelled("fid-lrv-2", s="lrv")),
            Request(
                "GET",
                PODS,
                query=lambda a: {
                    "labelSelector": "s=lrv",
                    "resourceVersion": a[0].rv,
                    "resourceVersionMatch": "Exact",
                },
            ),
            listing(PODS, labelSelector="s=lrv", resourceVersionMatch="NotOlderThan"),
        ),
    ),
    Scenario(
        "list-limit-continue",
        "list with limit=2 of 3 pods: a continue token and remainingItemCount, then the rest",
        (
            create(PODS, labelled("fid-page-a", s="page")),
            create(PODS, labelled("fid-page-b", s="page")),
            create(PODS, labelled("fid-page-c", s="page")),
            Request(
                "GET",
                PODS,
                query={"labelSelector": "s=page", "limit": "2"},
                derive=lambda a, e: {"continue": bool(a.obj["metadata"].get("continue"))},
            ),
            Request(
                "GET",
                PODS,
                query=lambda a: {
                    "labelSelector": "s=page",
                    "limit": "2",
                    "continue": a[3].obj["metadata"].get("continue", ""),
                },
            ),
            Request("GET", PODS, query={"limit": "1"}),
        ),
    ),
    Scenario(
        "namespace-missing",
        "a namespace that does not exist: create 404 (the namespace), get 404 (the pod), list 200 empty",
        (
            create("/api/v1/namespaces/fid-nope/pods", pod("fid-nons")),
            Request("GET", "/api/v1/namespaces/fid-nope/pods/fid-nons"),
            listing("/api/v1/namespaces/fid-nope/pods"),
        ),
    ),
    Scenario(
        "unknown-resource",
        "GET of a resource type the server does not have: 404",
        (Request("GET", f"/api/v1/namespaces/{NS}/frobs/x"),),
    ),
    Scenario(
        "get-future-rv",
        "GET with a resourceVersion far ahead: after ~3 s, 504 Timeout, ResourceVersionTooLarge",
        (
            create(PODS, pod("fid-future")),
            Request("GET", at(PODS, "fid-future"), query={"resourceVersion": "999999999"}),
        ),
    ),
    # --- validation
    Scenario(
        "invalid-missing-image",
        "a container without image: 422 Invalid with a FieldValueRequired cause",
        (create(PODS, pod("fid-noimage", containers=[{"name": "c"}])),),
    ),
    Scenario(
        "invalid-name",
        "a pod named Bad_Name: 422 Invalid, metadata.name",
        (create(PODS, pod("Bad_Name")),),
    ),
    Scenario(
        "invalid-restart-policy",
        "restartPolicy Sometimes: 422 Invalid, FieldValueNotSupported",
        (create(PODS, pod("fid-restart", restartPolicy="Sometimes")),),
    ),
    Scenario(
        "invalid-probe-ports",
        "probe and lifecycle handler ports: out of range, a bad port name: 422 Invalid with each cause",
        (
            create(
                PODS,
                pod(
                    "fid-ports",
                    containers=[
                        {
                            "name": "c",
                            "image": "busybox",
                            "readinessProbe": {"tcpSocket": {"port": -1}},
                            "livenessProbe": {"httpGet": {"path": "/", "port": "Web--1"}},
                            "startupProbe": {"grpc": {"port": 70000}},
                            "lifecycle": {"preStop": {"tcpSocket": {"port": 0}}},
                        }
                    ],
                ),
            ),
        ),
    ),
    Scenario(
        "invalid-sysctls",
        "sysctl names: foo- and bar.. invalid, a repeated one a duplicate, kernel.shmmax fine (upstream's "
        "reject invalid sysctls conformance spec): 422 with each cause",
        (
            create(
                PODS,
                pod(
                    "fid-sysctls",
                    securityContext={
                        "sysctls": [
                            {"name": "foo-", "value": "bar"},
                            {"name": "kernel.shmmax", "value": "100000000"},
                            {"name": "safe-and-unsafe", "value": "1"},
                            {"name": "bar..", "value": "42"},
                            {"name": "kernel.shmmax", "value": "1"},
                        ]
                    },
                ),
            ),
        ),
    ),
    Scenario(
        "invalid-hostname-override",
        "hostnameOverride: not an RFC 1123 subdomain, with setHostnameAsFQDN, with hostNetwork: 422 each "
        "(upstream's Override hostname of Pod specs)",
        (
            create(PODS, pod("fid-ho-1", hostnameOverride="Bad_Name")),
            create(PODS, pod("fid-ho-2", hostnameOverride="ok", setHostnameAsFQDN=True, subdomain="s")),
            create(PODS, pod("fid-ho-3", hostnameOverride="ok", hostNetwork=True)),
            create(PODS, pod("fid-ho-4", hostnameOverride="a" * 70)),
        ),
    ),
    Scenario(
        "invalid-many",
        "several errors at once: every cause, in the server's order",
        (create(PODS, pod("fid-many", containers=[{"name": "Bad Name"}], restartPolicy="Sometimes")),),
    ),
    Scenario(
        "field-validation-strict",
        "unknown fields with fieldValidation=Strict: rejected",
        (create(PODS, pod("fid-strict", bogus=1), query={"fieldValidation": "Strict"}),),
    ),
    Scenario(
        "field-validation-strict-duplicate",
        "a duplicated JSON field with fieldValidation=Strict: rejected",
        (
            create(
                PODS,
                '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fid-dupfield","name":"fid-dupfield",'
                '"labels":{"fidelity":"yes"}},"spec":{"schedulerName":"fidelity-none",'
                '"containers":[{"name":"c","image":"busybox:1"}]}}',
                query={"fieldValidation": "Strict"},
            ),
        ),
    ),
    Scenario(
        "field-validation-warn",
        "unknown fields with fieldValidation=Warn: created, with Warning headers",
        (create(PODS, pod("fid-warn", bogus=1, meta={"bogus": 2}), query={"fieldValidation": "Warn"}),),
    ),
    Scenario(
        "field-validation-ignore",
        "unknown fields with fieldValidation=Ignore: created, no warning",
        (create(PODS, pod("fid-ignore", bogus=1), query={"fieldValidation": "Ignore"}),),
    ),
    Scenario(
        "field-validation-default",
        "unknown fields without fieldValidation",
        (create(PODS, pod("fid-fv-default", bogus=1)),),
    ),
    Scenario(
        "field-validation-bad-value",
        "fieldValidation=Loud: 400",
        (create(PODS, pod("fid-fv-bad"), query={"fieldValidation": "Loud"}),),
    ),
    # --- dry run
    Scenario(
        "dry-run-create",
        "POST with dryRun=All: 201, nothing stored",
        (
            create(PODS, pod("fid-dry"), query={"dryRun": "All"}, fields=POD_FIELDS),
            Request("GET", at(PODS, "fid-dry")),
        ),
    ),
    Scenario(
        "dry-run-delete",
        "DELETE with dryRun=All: the object stays",
        (
            create(PODS, pod("fid-dry-del")),
            Request("DELETE", at(PODS, "fid-dry-del"), query={"dryRun": "All"}),
            Request("GET", at(PODS, "fid-dry-del")),
        ),
    ),
    Scenario(
        "dry-run-bad-value",
        "dryRun=Some: 400",
        (create(PODS, pod("fid-dry-bad"), query={"dryRun": "Some"}),),
    ),
    # --- kubectl
    Scenario(
        "kubectl-apply-twice",
        "kubectl apply of an unchanged pod, twice: created, then unchanged",
        (
            Kubectl(("apply", "-f", "-"), json.dumps(pod("fid-apply"))),
            Kubectl(("apply", "-f", "-"), json.dumps(pod("fid-apply"))),
        ),
    ),
    Scenario(
        "kubectl-apply-change",
        "kubectl apply of a changed label: configured",
        (
            Kubectl(("apply", "-f", "-"), json.dumps(pod("fid-apply-chg"))),
            Kubectl(("apply", "-f", "-"), json.dumps(pod("fid-apply-chg", meta={"labels": {"v": "2"}}))),
            Request("GET", at(PODS, "fid-apply-chg")),
        ),
    ),
    Scenario(
        "kubectl-delete",
        "kubectl delete of an unbound pod",
        (create(PODS, pod("fid-kdel")), Kubectl(("delete", "pod", "fid-kdel"))),
    ),
    # --- Tables
    Scenario(
        "table-pods",
        "list pods as a Table: columns and cells",
        (
            create(PODS, pod("fid-t-unbound")),
            create(PODS, pod("fid-t-bound", node=FAKE_NODE)),
            listing(PODS, accept=TABLE, labelSelector=MARK),
        ),
    ),
    Scenario(
        "table-review-406",
        "POST a SelfSubjectAccessReview accepting only a Table: 406, the review has no Table form "
        "(upstream's Table transformation conformance spec)",
        (
            Request(
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                {
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SelfSubjectAccessReview",
                    "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}},
                },
                accept=TABLE,
            ),
        ),
    ),
    Scenario(
        "table-pod-get",
        "GET one pod as a Table",
        (create(PODS, pod("fid-t-one")), Request("GET", at(PODS, "fid-t-one"), accept=TABLE)),
    ),
    create_then_request(
        "table-nodes",
        "list nodes as a Table, with a Ready node that reports addresses and a version",
        node("fid-t-node"),
        "PATCH",
        {
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
                "nodeInfo": {
                    "kubeletVersion": "v1.37.2",
                    "osImage": "Fidelity OS",
                    "kernelVersion": "6.1",
                    "containerRuntimeVersion": "docker://27",
                },
            }
        },
        SMP,
        collection=NODES,
        sub="status",
        then=(listing(NODES, accept=TABLE, labelSelector=MARK),),
    ),
    # --- configmaps, secrets
    Scenario(
        "configmap-crud",
        "configmap: create, update its data, delete (a Status answer)",
        (
            create(CONFIGMAPS, configmap("fid-cm"), fields=("data",)),
            Request("PUT", at(CONFIGMAPS, "fid-cm"), edited(0, set_path("data.k", "w")), fields=("data",)),
            Request("DELETE", at(CONFIGMAPS, "fid-cm")),
            Request("GET", at(CONFIGMAPS, "fid-cm")),
        ),
    ),
    Scenario(
        "podtemplate-crud",
        "podtemplates (upstream's PodTemplates conformance specs): create (defaulted), patch the "
        "labels, then the template (generation 2), list as a Table, delete the collection",
        (
            create(PODTEMPLATES, POD_TEMPLATE, fields=("template",)),
            Request("PATCH", at(PODTEMPLATES, "fid-pt"), {"metadata": {"labels": {"x": "1"}}}, MERGE),
            Request(
                "PATCH", at(PODTEMPLATES, "fid-pt"), {"template": {"metadata": {"labels": {"v": "2"}}}}, MERGE
            ),
            listing(PODTEMPLATES, accept=TABLE, labelSelector=MARK),
            Request("DELETE", PODTEMPLATES, query={"labelSelector": MARK}),
            listing(PODTEMPLATES, labelSelector=MARK),
        ),
    ),
    Scenario(
        "runtime-class-admission",
        "a RuntimeClass's overhead and scheduling join the pod (upstream's RuntimeClass Overhead "
        "conformance spec); a conflicting nodeSelector or an overhead without a class: 403",
        (
            create(RUNTIMECLASSES, RUNTIME_CLASS, fields=("overhead", "scheduling")),
            create(
                PODS,
                pod("fid-rc-pod", runtimeClassName="fid-rc", nodeSelector={"disk": "ssd"}),
                fields=("spec",),
            ),
            create(PODS, pod("fid-rc-conflict", runtimeClassName="fid-rc", nodeSelector={"sandbox": "no"})),
            create(PODS, pod("fid-rc-overhead", runtimeClassName="fid-rc", overhead={"cpu": "20m"})),
            create(PODS, pod("fid-no-rc-overhead", overhead={"cpu": "10m"})),
        ),
    ),
    Scenario(
        "configmap-empty-maps",
        "empty data, binaryData and annotations are not stored (omitempty): a JSON patch adding to "
        "/data is 422",
        (
            create(
                CONFIGMAPS,
                {**configmap("fid-cm-empty", {}, annotations={}), "binaryData": {}},
                fields=("data", "binaryData"),
            ),
            Request(
                "PATCH",
                at(CONFIGMAPS, "fid-cm-empty"),
                [{"op": "add", "path": "/data/k", "value": "v"}],
                JSON_PATCH,
            ),
            Request("PATCH", at(CONFIGMAPS, "fid-cm-empty"), {"data": {"k": "v"}}, MERGE, fields=("data",)),
            Request("PATCH", at(CONFIGMAPS, "fid-cm-empty"), {"data": {"k": None}}, MERGE, fields=("data",)),
        ),
    ),
    Scenario(
        "configmap-immutable",
        "an immutable configmap: changing its data is 422",
        (
            create(CONFIGMAPS, {**configmap("fid-cm-imm"), "immutable": True}),
            Request("PUT", at(CONFIGMAPS, "fid-cm-imm"), edited(0, set_path("data.k", "w"))),
        ),
    ),
    Scenario(
        "configmap-invalid-key",
        "a configmap key with a space: 422",
        (create(CONFIGMAPS, configmap("fid-cm-bad", {"bad key": "v"})),),
    ),
    Scenario(
        "secret-string-data",
        "a secret with stringData: stored base64 in data, type Opaque",
        (
            create(
                SECRETS,
                secret("fid-secret", stringData={"user": "admin"}),
                fields=("data", "type", "stringData"),
            ),
            Request("GET", at(SECRETS, "fid-secret"), fields=("data", "type")),
        ),
    ),
    Scenario(
        "secret-type-immutable",
        "changing a secret's type: 422",
        (
            create(SECRETS, secret("fid-secret-type", data={"a": "YQ=="})),
            Request("PUT", at(SECRETS, "fid-secret-type"), edited(0, set_path("type", "kubernetes.io/tls"))),
        ),
    ),
    # --- nodes, leases
    Scenario(
        "node-create",
        "POST a node: what admission and defaulting add (taints, status)",
        (create(NODES, node("fid-node")), Request("GET", at(NODES, "fid-node"), fields=("spec", "status"))),
    ),
    create_then_request(
        "node-status-patch",
        "strategic merge patch of nodes/status: conditions merged by `type`, spec unchanged",
        node("fid-node-st"),
        "PATCH",
        {"spec": {"unschedulable": True}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        SMP,
        collection=NODES,
        sub="status",
        fields=("spec.unschedulable", "status.conditions"),
        then=(
            Request(
                "PATCH",
                at(NODES, "fid-node-st", "status"),
                {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}]}},
                SMP,
                fields=("status.conditions[*].type",),
            ),
        ),
    ),
    Scenario("node-missing", "GET a node that does not exist: 404", (Request("GET", at(NODES, "fid-none")),)),
    Scenario(
        "lease-crud",
        "a lease: create, renew (MicroTime), renew with a stale resourceVersion: 409 for a grouped resource",
        (
            create(LEASES, lease("fid-lease"), fields=("spec",)),
            Request(
                "PUT",
                at(LEASES, "fid-lease"),
                edited(0, set_path("spec.renewTime", "2026-01-01T00:00:00.123456Z")),
                fields=("spec",),
            ),
            Request(
                "PUT",
                at(LEASES, "fid-lease"),
                edited(0, set_path("spec.renewTime", "2026-01-01T00:00:01.000000Z")),
            ),
        ),
    ),
    Scenario(
        "lease-missing",
        "GET a lease that does not exist: 404 for a grouped resource",
        (Request("GET", at(LEASES, "fid-none")),),
    ),
    Scenario(
        "lease-invalid",
        "a lease with leaseDurationSeconds 0: 422",
        (
            create(
                LEASES, {**lease("fid-lease-bad"), "spec": {"holderIdentity": "x", "leaseDurationSeconds": 0}}
            ),
        ),
    ),
)
