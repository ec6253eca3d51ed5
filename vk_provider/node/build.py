"""The Node object from the configuration and the runtime's host facts: pure functions over dicts.

What lives here: the node's labels, taints, providerID, capacity/allocatable, addresses,
daemon endpoint, nodeInfo and declared features (`build_node`, `desired_status`), the
kubeletVersion we advertise, and `node_ip_from(...)`, which picks the InternalIP from the
config and the environment. Conditions are in `vk_provider.node.conditions`. Must not: do I/O or read
the clock; the agent passes in everything that varies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_common.kube_version import KUBE_VERSION
from vk_provider import __version__
from vk_provider.config import DEFAULT_TAINT, Config, NodeConfig, Taint
from vk_provider.runtime.types import RuntimeInfo

# The Kubernetes version we emulate; semver pre-release suffix names us, like other virtual
# kubelets (e.g. ACI's `v1.19.10-vk-azure-aci-v1.4.1`), and kubectl shows it as VERSION.
KUBELET_VERSION = f"{KUBE_VERSION}-vk-provider-{__version__}"
DEFAULT_KUBELET_PORT = 10250
# Annotations through which we remember what we own on a Node we take over.
OWNED_LABELS_ANNOTATION = "vk-provider.io/owned-labels"
CORDONED_ANNOTATION = "vk-provider.io/cordoned-on-shutdown"


def provider_id(node: NodeConfig) -> str:
    return node.provider_id or f"docker://{node.name}"


# The labels a kubelet may set on its own Node under the NodeRestriction admission plugin:
# k8s.io/kubelet/pkg/apis/well_known_labels.go (kubeletLabels, kubeletLabelNamespaces) and
# plugin/pkg/admission/noderestriction/admission.go (getForbiddenLabels) in kubernetes v1.37.
KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    }
)
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _in_namespace(namespace: str, parent: str) -> bool:
    return namespace == parent or namespace.endswith("." + parent)


def kubelet_may_set(key: str) -> bool:
    """Whether NodeRestriction lets a node identity (system:node:<name>) set label `key`."""
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if _in_namespace(namespace, "node-restriction.kubernetes.io"):
        return False
    if not (_in_namespace(namespace, "kubernetes.io") or _in_namespace(namespace, "k8s.io")):
        return True
    return key in KUBELET_LABELS or any(_in_namespace(namespace, ns) for ns in KUBELET_LABEL_NAMESPACES)


def node_labels(node: NodeConfig, info: RuntimeInfo | None, *, as_kubelet: bool = False) -> dict[str, str]:
    """The well-known labels plus the configured ones (which win). `as_kubelet`: the provider
    runs with a node identity, so labels NodeRestriction forbids (`kubernetes.io/role`, …)
    are left out rather than having every Node write refused."""
    os_name = info.os_type if info and info.os_type else "linux"
    labels = {
        "type": "virtual-kubelet",
        "kubernetes.io/role": "agent",
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": os_name,
        "beta.kubernetes.io/os": os_name,
        "node.kubernetes.io/exclude-from-external-load-balancers": "true",
    }
    if info and info.architecture:
        labels["kubernetes.io/arch"] = info.architecture
        labels["beta.kubernetes.io/arch"] = info.architecture
    labels.update(node.labels)
    if as_kubelet:
        return {k: v for k, v in labels.items() if kubelet_may_set(k)}
    return labels


def taint_dict(taint: Taint) -> dict[str, str]:
    result = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        result["value"] = taint.value
    return result


def node_taints(node: NodeConfig) -> list[dict[str, str]]:
    return [taint_dict(t) for t in node.taints]


def owned_taint_keys(node: NodeConfig) -> set[str]:
    """Taint keys we manage: the configured ones and the default one (so disabling it removes it)."""
    return {t.key for t in node.taints} | {DEFAULT_TAINT.key}


def _kibibytes(size: int) -> str:
    return f"{size // 1024}Ki"


def node_capacity(node: NodeConfig, info: RuntimeInfo | None) -> dict[str, str]:
    """cpu, memory, ephemeral-storage from the config, or from the runtime when `auto`; pods from the config.

    A resource that is `auto` while the runtime's facts are unknown (or zero) is left out.
    """
    cap = node.capacity
    result: dict[str, str] = {}
    if cap.cpu != "auto":
        result["cpu"] = cap.cpu
    elif info and info.cpus > 0:
        result["cpu"] = str(info.cpus)
    if cap.memory != "auto":
        result["memory"] = cap.memory
    elif info and info.memory_bytes > 0:
        result["memory"] = _kibibytes(info.memory_bytes)
    if cap.ephemeral_storage != "auto":
        result["ephemeral-storage"] = cap.ephemeral_storage
    elif info and info.storage_bytes > 0:
        result["ephemeral-storage"] = _kibibytes(info.storage_bytes)
    result["pods"] = cap.pods
    return result


def kubelet_port(listen: str) -> int:
    """The port of `host:port` (IPv6 `[::]:port` too); the kubelet default when there is none."""
    _, sep, port = listen.rpartition(":")
    if sep and port.isdigit():
        return int(port)
    return DEFAULT_KUBELET_PORT


def node_ip_from(configured: str, environ: Mapping[str, str]) -> str:
    """`node.internalIP`, else `$NODE_IP`, else `$POD_IP`; empty when none is set (the agent detects one)."""
    return configured or environ.get("NODE_IP", "") or environ.get("POD_IP", "")


def node_addresses(node_ip: str, hostname: str) -> list[dict[str, str]]:
    return [{"type": "InternalIP", "address": node_ip}, {"type": "Hostname", "address": hostname}]


# The node features (KEP-5328) this node declares, sorted as node validation requires. The
# apiserver's NodeDeclaredFeatureValidator refuses a pod update that needs a feature its node
# does not declare, e.g. resizing a non-sidecar init container (pods/resize.py). Upstream:
# k8s.io/component-helpers/nodedeclaredfeatures/features (v0.37), pkg/kubelet/
# kubelet_node_declared_features.go. Not ExtendWebSocketsToKubelet: with it the apiserver
# stops translating kubectl's WebSocket exec/attach/port-forward and proxies them to the
# kubelet API as they come (pkg/registry/core/pod/rest/subresources.go), and a refused stream
# (no such container) then reaches kubectl as a failed upgrade instead of the translator's
# Status; the translated path is the one our tests and docs hold to.
# RestartAllContainersOnContainerExits: a pod with a RestartAllContainers rule is scheduled only
# to a node that declares it (kuberuntime/restart_all.py).
# InPlacePodLevelResourcesVerticalScaling: a resize of the pod-level spec.resources is accepted
# only for a pod on a node that declares it (inplacepodresize/pod_level_resource_resize.go;
# pods/resize.py).
DECLARED_FEATURES = (
    "InPlacePodLevelResourcesVerticalScaling",
    "InPlacePodVerticalScalingInitContainers",
    "RestartAllContainersOnContainerExits",
)


def node_info(info: RuntimeInfo | None) -> dict[str, str]:
    result = {
        "kubeletVersion": KUBELET_VERSION,
        "operatingSystem": "linux",
        "architecture": "",
        "containerRuntimeVersion": "",
        "kernelVersion": "",
        "osImage": "",
        "machineID": "",
        "systemUUID": "",
        "bootID": "",
        # Deprecated and no longer set by the kubelet, but a required key of NodeSystemInfo
        # (no omitempty): the kubelet's JSON carries it empty too.
        "kubeProxyVersion": "",
    }
    if info is not None:
        result.update(
            operatingSystem=info.os_type or "linux",
            architecture=info.architecture,
            containerRuntimeVersion=info.runtime_version,
            kernelVersion=info.kernel_version,
            osImage=info.os_image,
        )
    return result


def runtime_handlers(info: RuntimeInfo | None) -> list[dict[str, Any]]:
    """status.runtimeHandlers (the kubelet's RuntimeHandlers setter, from the runtime's status):
    each handler the engine can run, "" its default; neither recursive read-only mounts nor user
    namespaces are offered here."""
    handlers = info.runtime_handlers if info is not None else ("",)
    features = {"recursiveReadOnlyMounts": False, "userNamespaces": False}
    return [{"name": name, "features": dict(features)} for name in handlers]


def desired_status(
    config: Config, info: RuntimeInfo | None, node_ip: str, conditions: list[dict[str, str]]
) -> dict[str, Any]:
    """The kubelet-owned part of NodeStatus (conditions as given, with their times)."""
    capacity = node_capacity(config.node, info)
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": conditions,
        "addresses": node_addresses(node_ip, config.node.name),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port(config.kubelet_server.listen)}},
        "nodeInfo": node_info(info),
        "runtimeHandlers": runtime_handlers(info),
        "declaredFeatures": list(DECLARED_FEATURES),
    }


def build_node(
    config: Config,
    info: RuntimeInfo | None,
    node_ip: str,
    conditions: list[dict[str, str]],
    *,
    as_kubelet: bool = False,
) -> dict[str, Any]:
    """The Node to create when none exists."""
    labels = node_labels(config.node, info, as_kubelet=as_kubelet)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": config.node.name,
            "labels": labels,
            "annotations": {OWNED_LABELS_ANNOTATION: ",".join(sorted(labels))},
        },
        "spec": {"providerID": provider_id(config.node), "taints": node_taints(config.node)},
        "status": desired_status(config, info, node_ip, conditions),
    }


def metadata_patch(
    current: Mapping[str, Any], config: Config, info: RuntimeInfo | None, *, as_kubelet: bool = False
) -> dict[str, Any] | None:
    """The JSON merge patch that brings an existing Node's labels, taints and spec to ours; None if in step.

    Labels: ours are set; labels we set before (remembered in an annotation) but no longer
    want are removed; anyone else's stay. Taints: ours are added, stale ones with our keys
    removed, others' kept. providerID is set only if empty (the API forbids changing it).
    A cordon we left at shutdown is lifted. The patch carries the resourceVersion it was
    computed from, so a concurrent change makes it fail with 409 instead of losing data.
    """
    meta = current.get("metadata") or {}
    spec = current.get("spec") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    desired = node_labels(config.node, info, as_kubelet=as_kubelet)

    label_patch: dict[str, str | None] = {k: v for k, v in desired.items() if labels.get(k) != v}
    previously_owned = {k for k in str(annotations.get(OWNED_LABELS_ANNOTATION, "")).split(",") if k}
    for key in previously_owned - set(desired):
        if key in labels:
            label_patch[key] = None
    annotation_patch: dict[str, str | None] = {}
    owned = ",".join(sorted(desired))
    if annotations.get(OWNED_LABELS_ANNOTATION) != owned:
        annotation_patch[OWNED_LABELS_ANNOTATION] = owned

    spec_patch: dict[str, Any] = {}
    current_taints = list(spec.get("taints") or [])
    wanted = node_taints(config.node)
    keys = owned_taint_keys(config.node)
    kept = [t for t in current_taints if t.get("key") not in keys or _bare_taint(t) in wanted]
    merged = kept + [t for t in wanted if t not in [_bare_taint(k) for k in kept]]
    if merged != current_taints:
        spec_patch["taints"] = merged
    if not spec.get("providerID"):
        spec_patch["providerID"] = provider_id(config.node)
    if CORDONED_ANNOTATION in annotations:
        annotation_patch[CORDONED_ANNOTATION] = None
        if spec.get("unschedulable"):
            spec_patch["unschedulable"] = False

    if not (label_patch or annotation_patch or spec_patch):
        return None
    patch: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion")}}
    if label_patch:
        patch["metadata"]["labels"] = label_patch
    if annotation_patch:
        patch["metadata"]["annotations"] = annotation_patch
    if spec_patch:
        patch["spec"] = spec_patch
    return patch


def _bare_taint(taint: Mapping[str, Any]) -> dict[str, str]:
    """A taint without its timeAdded, as we write them."""
    result = {"key": str(taint.get("key", "")), "effect": str(taint.get("effect", ""))}
    if taint.get("value"):
        result["value"] = str(taint["value"])
    return result
