"""Unit tests of create-time defaulting and of request path parsing."""

from __future__ import annotations

from typing import Any

from vk_provider.sandbox.defaults import apply_defaults, prepare_for_create, qos_class
from vk_provider.sandbox.requestinfo import parse_request
from vk_provider.sandbox.resources import RESOURCES


def _pod(**container: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx", **container}]}}


def test_pod_defaults_and_admission() -> None:
    pod = _pod(ports=[{"containerPort": 80}], livenessProbe={"httpGet": {"port": 80}})
    info = RESOURCES["pods"]
    apply_defaults(info, pod)
    prepare_for_create(info, pod)
    spec, c = pod["spec"], pod["spec"]["containers"][0]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["schedulerName"]) == (
        "Always",
        "ClusterFirst",
        "default-scheduler",
    )
    assert spec["terminationGracePeriodSeconds"] == 30 and spec["enableServiceLinks"] is True
    assert c["imagePullPolicy"] == "Always"  # untagged
    assert c["terminationMessagePath"] == "/dev/termination-log" and c["ports"][0]["protocol"] == "TCP"
    assert c["livenessProbe"]["periodSeconds"] == 10 and c["livenessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert spec["serviceAccountName"] == "default"
    assert spec["volumes"][0]["name"].startswith("kube-api-access-")
    assert c["volumeMounts"][0]["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"
    assert {t["key"] for t in spec["tolerations"]} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_mirror_pods_get_no_service_account() -> None:
    pod = _pod(image="nginx:1.27")
    pod["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    info = RESOURCES["pods"]
    apply_defaults(info, pod)
    prepare_for_create(info, pod)
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert "serviceAccountName" not in pod["spec"] and "volumes" not in pod["spec"]


def test_qos_classes() -> None:
    def spec(resources: dict[str, Any]) -> dict[str, Any]:
        return {"containers": [{"name": "c", "resources": resources}]}

    both = {"cpu": "1", "memory": "1Gi"}
    assert qos_class(spec({})) == "BestEffort"
    assert qos_class(spec({"limits": both})) == "Guaranteed"  # requests default to limits
    assert qos_class(spec({"requests": {"cpu": "1"}})) == "Burstable"


def test_secret_string_data_is_folded_into_data() -> None:
    secret: dict[str, Any] = {"metadata": {"name": "s"}, "type": "", "stringData": {"k": "v"}}
    apply_defaults(RESOURCES["secrets"], secret)
    assert secret == {"metadata": {"name": "s"}, "type": "Opaque", "data": {"k": "dg=="}}


def test_request_paths() -> None:
    ri = parse_request("GET", "/api/v1/namespaces/default/pods", {"watch": "1"})
    assert (ri.verb, ri.namespace, ri.resource, ri.name) == ("watch", "default", "pods", "")
    ri = parse_request("PATCH", "/api/v1/namespaces/ns/pods/web/status", {})
    assert (ri.verb, ri.resource, ri.name, ri.subresource) == ("patch", "pods", "web", "status")
    ri = parse_request("PUT", "/api/v1/namespaces/team/finalize", {})
    assert (ri.resource, ri.name, ri.subresource, ri.namespace) == ("namespaces", "team", "finalize", None)
    ri = parse_request("DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {})
    assert (ri.verb, ri.resource_key) == ("deletecollection", "leases.coordination.k8s.io")
    ri = parse_request("GET", "/api/v1/nodes/n1/proxy/stats/summary", {})
    assert (ri.resource, ri.name, ri.subresource, ri.parts[3:]) == (
        "nodes",
        "n1",
        "proxy",
        ("stats", "summary"),
    )
    assert not parse_request("GET", "/apis/coordination.k8s.io", {}).is_resource
