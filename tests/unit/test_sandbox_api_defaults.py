"""Unit tests of create-time defaulting, update admission and request path parsing."""

from __future__ import annotations

from typing import Any

from vk_sandbox.api.defaults import (
    admit_update,
    apply_defaults,
    copy_pull_secrets,
    prepare_for_create,
    qos_class,
    service_account_of,
)
from vk_sandbox.api.requestinfo import parse_request
from vk_sandbox.api.resources import RESOURCES


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


def test_default_toleration_seconds_leaves_covered_taints_alone() -> None:
    """A toleration of the same key or of every key, with NoExecute or every effect, covers it."""
    info = RESOURCES["pods"]
    pod = _pod()
    pod["spec"]["tolerations"] = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
        {"operator": "Exists", "effect": "NoExecute"},
    ]
    prepare_for_create(info, pod)
    assert len(pod["spec"]["tolerations"]) == 2
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (0, "PreemptLowerPriority")


def test_update_admission_puts_back_what_create_admission_added() -> None:
    info = RESOURCES["pods"]
    old = _pod()
    old["spec"]["tolerations"] = [{"key": "example.com/dedicated", "value": "batch", "effect": "NoSchedule"}]
    prepare_for_create(info, old)
    new = _pod()
    new["spec"]["tolerations"] = [{"key": "example.com/dedicated", "value": "batch", "effect": "NoSchedule"}]
    admit_update(info, new, old)
    assert new["spec"]["tolerations"] == old["spec"]["tolerations"]
    assert (new["spec"]["priority"], new["spec"]["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "serviceAccountName" not in new["spec"]  # ServiceAccount admission mutates creates only
    lease: dict[str, Any] = {"metadata": {"name": "l"}, "spec": {}}
    admit_update(RESOURCES["leases.coordination.k8s.io"], lease, lease)
    assert lease == {"metadata": {"name": "l"}, "spec": {}}


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


def test_service_account_pull_secrets_are_copied_only_into_pods_without_any() -> None:
    account = {"imagePullSecrets": [{"name": "a"}, {"name": "b"}]}
    pod: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"serviceAccountName": "builder"}}
    assert service_account_of(pod) == "builder"
    copy_pull_secrets(pod, account)
    assert pod["spec"]["imagePullSecrets"] == [{"name": "a"}, {"name": "b"}]
    assert service_account_of(pod) is None  # it names pull secrets now: they are kept
    mirror = {"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {}}
    assert service_account_of(mirror) is None
    bare: dict[str, Any] = {"spec": {"serviceAccountName": "default"}}
    copy_pull_secrets(bare, {})
    assert "imagePullSecrets" not in bare["spec"]
