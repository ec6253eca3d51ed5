"""Defaulting of objects written to the sandbox, as the real apiserver fills them in.

What lives here: `apply_defaults(info, obj)`, the versioned defaults applied whenever a body is
decoded (create, update, patch; `pkg/apis/core/v1/defaults.go`), `prepare_for_create(info,
obj)`, what only a create adds: admission (ServiceAccount with its projected token volume,
and `copy_pull_secrets` of the service account the create handler looked up,
DefaultTolerationSeconds, Priority) and the strategies' PrepareForCreate (pod status reset to
Pending with its QoS class, namespace phase, service cluster IP), and `admit_update(info, obj,
old)`, the admission an update of the main resource gets (DefaultTolerationSeconds again,
Priority keeping what it set on create), as pkg/apis/core/v1/defaults.go. The resource.k8s.io
kinds' rules are in dynamic_resources.py, called from here. Must not: touch the
store or validate (a bad object is left for validation to report).
"""

from __future__ import annotations

import base64
import ipaddress
import secrets
from typing import Any

from vk_common.objects import default_pull_policy
from vk_common.qos import pod_qos_class
from vk_sandbox.api import dynamic_resources
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.storage.objects import now_rfc3339

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
ADMIN_USER = "kubernetes-admin"
ADMIN_GROUPS = ("kubeadm:cluster-admins", "system:authenticated")
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_TOLERATION_SECONDS = 300
# The taints DefaultTolerationSeconds tolerates for DEFAULT_TOLERATION_SECONDS.
_DEFAULT_TOLERATED_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"

Obj = dict[str, Any]


def apply_defaults(info: ResourceInfo, obj: Obj) -> None:
    """The versioned defaults every decoded body of this kind gets (mutates obj)."""
    if info.group == dynamic_resources.GROUP:
        dynamic_resources.apply_defaults(info, obj)
    elif info.key == "pods":
        _default_pod_spec(obj.setdefault("spec", {}))
        obj["spec"].setdefault("enableServiceLinks", True)  # SetDefaults_Pod, not SetDefaults_PodSpec
        _null_times(obj.get("status"), ("lastProbeTime", "lastTransitionTime"))
    elif info.key == "podtemplates":
        _default_pod_spec(_template_spec(obj))
    elif info.key == "nodes":
        _default_node_status(obj.setdefault("status", {}))
    elif info.key == "secrets":
        if not obj.get("type"):
            obj["type"] = "Opaque"
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):  # v1 conversion folds stringData into data
            data = obj.setdefault("data", {})
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()
    elif info.key == "services":
        _default_service_spec(obj.setdefault("spec", {}))
    elif info.key == "certificatesigningrequests.certificates.k8s.io":
        for condition in (obj.get("status") or {}).get("conditions") or []:
            if isinstance(condition, dict) and not condition.get("lastTransitionTime"):
                condition["lastTransitionTime"] = now_rfc3339()  # csr strategy, populateConditionTimestamps
    elif info.key == "namespaces":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        labels.setdefault("kubernetes.io/metadata.name", obj["metadata"].get("name", ""))


# The string fields of NodeSystemInfo, which have no omitempty (k8s.io/api core/v1 types.go).
_NODE_INFO_FIELDS = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)


def _null_times(status: Any, keys: tuple[str, ...]) -> None:
    """Conditions' metav1.Time fields are structs, so `omitempty` never drops them: unset, the
    real server writes them as null (k8s.io/apimachinery pkg/apis/meta/v1/time.go MarshalJSON)."""
    if not isinstance(status, dict):
        return
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict):
            for key in keys:
                condition.setdefault(key, None)


def _default_node_status(status: Any) -> None:
    """SetDefaults_NodeStatus (pkg/apis/core/v1/defaults.go: allocatable from capacity), and the
    NodeStatus struct fields the real server always writes: daemonEndpoints.kubeletEndpoint.Port
    and the nodeInfo strings, zero-valued when unset."""
    if not isinstance(status, dict):
        return
    if status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])
    _null_times(status, ("lastHeartbeatTime", "lastTransitionTime"))
    endpoints = status.setdefault("daemonEndpoints", {})
    if isinstance(endpoints, dict):
        kubelet = endpoints.setdefault("kubeletEndpoint", {})
        if isinstance(kubelet, dict):
            kubelet.setdefault("Port", 0)
    info = status.setdefault("nodeInfo", {})
    if isinstance(info, dict):
        for key in _NODE_INFO_FIELDS:
            info.setdefault(key, "")


def _template_spec(template: Obj) -> Any:
    inner = template.setdefault("template", {})
    return inner.setdefault("spec", {}) if isinstance(inner, dict) else None


def prepare_for_create(info: ResourceInfo, obj: Obj) -> None:
    """What a create adds on top of apply_defaults: admission and PrepareForCreate (mutates obj)."""
    if info.group == dynamic_resources.GROUP:
        dynamic_resources.prepare_for_create(info, obj)
    if info.key == "podtemplates":
        # podTemplateStrategy.PrepareForCreate (pkg/registry/core/podtemplate/strategy.go)
        obj.setdefault("metadata", {})["generation"] = 1
    if info.key == "pods":
        _admit_pod(obj)
        # podStrategy.PrepareForCreate (k8s.io/kubernetes pkg/registry/core/pod/strategy.go): a pod
        # starts at generation 1; the store bumps it on spec changes and graceful deletes
        obj.setdefault("metadata", {})["generation"] = 1
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}
    elif info.key == "namespaces":
        obj["status"] = {"phase": "Active"}
    elif info.key == "services":
        obj["status"] = {"loadBalancer": {}}
        spec = obj["spec"]
        if spec.get("type") != "ExternalName" and not spec.get("clusterIP"):
            ip = str(_SERVICE_CIDR[secrets.randbelow(_SERVICE_CIDR.num_addresses - 20) + 10])
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
    elif info.key == "certificatesigningrequests.certificates.k8s.io":
        obj["status"] = {}
        spec = obj.setdefault("spec", {})
        spec["username"] = ADMIN_USER  # the requesting user; every sandbox client is the admin
        spec["groups"] = list(ADMIN_GROUPS)


def admit_update(info: ResourceInfo, obj: Obj, old: Obj) -> None:
    """The mutating admission of an update of the main resource, subresources excluded (mutates obj).

    Pods: DefaultTolerationSeconds handles Update as well as Create
    (plugin/pkg/admission/defaulttolerationseconds/admission.go), so an update that leaves out the
    tolerations it added gets them back; Priority keeps the priority and preemption policy it set
    on create when the update leaves them out (plugin/pkg/admission/priority/admission.go admitPod).
    resource.k8s.io kinds: their strategies' PrepareForUpdate (api/dynamic_resources.py).
    """
    if info.group == dynamic_resources.GROUP:
        dynamic_resources.prepare_for_update(info, obj, old)
    if info.key != "pods" or not isinstance(obj.get("spec"), dict):
        return
    spec, old_spec = obj["spec"], old.get("spec") or {}
    _default_toleration_seconds(spec)
    for key in ("priority", "preemptionPolicy"):
        if spec.get(key) is None and old_spec.get(key) is not None:
            spec[key] = old_spec[key]


# ---------------------------------------------------------------- pods


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    if isinstance(probe.get("httpGet"), dict):
        probe["httpGet"].setdefault("path", "/")
        probe["httpGet"].setdefault("scheme", "HTTP")


def _default_container(c: Any) -> None:
    if not isinstance(c, dict):
        return
    if isinstance(c.get("image"), str) and c["image"]:
        c.setdefault("imagePullPolicy", default_pull_policy(c["image"]))
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    resources = c.setdefault("resources", {})
    if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
        requests = resources.setdefault("requests", {})
        for name, value in resources["limits"].items():
            requests.setdefault(name, value)
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(probe))


def _default_volume(v: Any) -> None:
    if not isinstance(v, dict):
        return
    for source in ("configMap", "secret", "projected", "downwardAPI"):
        if isinstance(v.get(source), dict):
            v[source].setdefault("defaultMode", 420)
    if isinstance(v.get("hostPath"), dict):
        v["hostPath"].setdefault("type", "")
    if not any(k != "name" for k in v):
        v["emptyDir"] = {}


def _default_pod_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            _default_container(c)
    for v in spec.get("volumes") or []:
        _default_volume(v)


def qos_class(spec: Obj) -> str:
    """Guaranteed, Burstable or BestEffort (pkg/apis/core/helper/qos); a pod with pod-level
    resources is classed by them (ComputePodQOS with PodLevelResources)."""
    if spec.get("resources"):
        return pod_qos_class({"spec": spec})
    containers = [
        c for k in ("initContainers", "containers") for c in spec.get(k) or [] if isinstance(c, dict)
    ]
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or str(requests.get(name, limits[name])) != str(limits[name]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _default_toleration_seconds(spec: Obj) -> None:
    """DefaultTolerationSeconds' Admit: tolerate not-ready and unreachable NoExecute taints for
    300 s unless a toleration already covers them (the same key or none, NoExecute or any effect)."""
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = spec["tolerations"] = []
    for key in _DEFAULT_TOLERATED_TAINTS:
        if not any(
            isinstance(t, dict)
            and t.get("key") in (key, None, "")
            and t.get("effect") in ("NoExecute", None, "")
            for t in tolerations
        ):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )


def _admit_pod(pod: Obj) -> None:
    spec = pod.setdefault("spec", {})
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    # Priority with no PriorityClass: getDefaultPriority's 0 and PreemptLowerPriority.
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    _default_toleration_seconds(spec)
    if MIRROR_POD_ANNOTATION in annotations:
        return
    sa = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = sa
    spec["serviceAccount"] = sa
    if spec.get("automountServiceAccountToken") is False:
        return
    containers = [
        c for k in ("initContainers", "containers") for c in spec.get(k) or [] if isinstance(c, dict)
    ]
    if any(
        m.get("mountPath") == SERVICE_ACCOUNT_MOUNT for c in containers for m in c.get("volumeMounts") or []
    ):
        return
    name = "kube-api-access-" + "".join(secrets.choice(_SUFFIX_CHARS) for _ in range(5))
    spec.setdefault("volumes", []).append(_token_volume(name))
    for c in containers:
        c.setdefault("volumeMounts", []).append(
            {"name": name, "readOnly": True, "mountPath": SERVICE_ACCOUNT_MOUNT}
        )


def service_account_of(pod: Obj) -> str | None:
    """The service account whose imagePullSecrets ServiceAccount admission copies into this new
    pod: the admitted pod's own, unless it is a mirror pod or already names pull secrets."""
    spec = pod.get("spec") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if MIRROR_POD_ANNOTATION in annotations or spec.get("imagePullSecrets"):
        return None
    return str(spec.get("serviceAccountName") or "") or None


def copy_pull_secrets(pod: Obj, service_account: Obj) -> None:
    """plugin/pkg/admission/serviceaccount/admission.go Admit: a pod without imagePullSecrets
    gets its service account's (names only)."""
    names = [
        {"name": ref.get("name", "")}
        for ref in service_account.get("imagePullSecrets") or []
        if isinstance(ref, dict)
    ]
    if names:
        pod.setdefault("spec", {})["imagePullSecrets"] = names


def _token_volume(name: str) -> Obj:
    """The projected volume ServiceAccount admission adds (plugin/pkg/admission/serviceaccount)."""
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    }


def mirror_pod_refusal(pod: Obj) -> str | None:
    """Why ServiceAccount admission refuses this mirror pod (None if it does not, or not a mirror).

    plugin/pkg/admission/serviceaccount/admission.go: mirror pods may not reference service
    accounts, secrets or service account token projections."""
    meta = pod.get("metadata") or {}
    if MIRROR_POD_ANNOTATION not in (meta.get("annotations") or {}):
        return None
    spec = pod.get("spec") or {}
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        return "a mirror pod may not reference service accounts"
    if spec.get("imagePullSecrets"):
        return "a mirror pod may not reference secrets"
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict) and volume.get("secret"):
            return "a mirror pod may not reference secrets"
        for source in (
            (volume.get("projected") or {}).get("sources") or [] if isinstance(volume, dict) else []
        ):
            if source.get("secret"):
                return "a mirror pod may not reference secrets"
            if source.get("serviceAccountToken"):
                return "a mirror pod may not use ServiceAccountToken volume projections"
    containers = [
        c for k in ("initContainers", "containers") for c in spec.get(k) or [] if isinstance(c, dict)
    ]
    for c in containers:
        if any((e.get("valueFrom") or {}).get("secretKeyRef") for e in c.get("env") or []):
            return "a mirror pod may not reference secrets"
        if any(e.get("secretRef") for e in c.get("envFrom") or []):
            return "a mirror pod may not reference secrets"
    return None


# ---------------------------------------------------------------- services


def _default_service_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])
