"""The sandbox's resource registry: which kinds it serves, in which group/version, how they behave.

What lives here: `ResourceInfo` (plural name, kind, group, version, scope, verbs, short names,
categories, subresources, and the registry-strategy flags the store needs) and the lookups by
store key ("pods", "leases.coordination.k8s.io") or by URL parts; also the discovery-only entries
of metrics.k8s.io (served by api/metrics.py). Values follow the real discovery documents of
KUBE_VERSION. Must not: hold objects or do I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION_DELETE = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Subresource:
    name: str
    verbs: tuple[str, ...]
    kind: str
    group: str = ""
    version: str = "v1"


@dataclass(frozen=True)
class ResourceInfo:
    name: str
    singular: str
    kind: str
    group: str
    version: str
    namespaced: bool
    verbs: tuple[str, ...] = ALL_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    # registry strategy flags (pkg/registry/...):
    graceful_delete: bool = False  # implements CheckGracefulDelete (pods)
    allow_create_on_update: bool = False  # PUT of a missing object creates it
    return_deleted_object: bool = False  # DELETE answers with the object, not a Status
    unconditional_update: bool = True  # AllowUnconditionalUpdate: a PUT may leave out resourceVersion
    status_keeps_metadata: bool = False  # the status strategy calls metav1.ResetObjectMetaForStatus

    @property
    def key(self) -> str:
        return f"{self.name}.{self.group}" if self.group else self.name

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return any(s.name == "status" for s in self.subresources)

    def subresource(self, name: str) -> Subresource | None:
        return next((s for s in self.subresources if s.name == name), None)


_STATUS = ("get", "patch", "update")
_DRA = "resource.k8s.io"

_REGISTRY: tuple[ResourceInfo, ...] = (
    ResourceInfo(
        "namespaces",
        "namespace",
        "Namespace",
        "",
        "v1",
        False,
        verbs=NO_COLLECTION_DELETE,
        short_names=("ns",),
        subresources=(
            Subresource("finalize", ("update",), "Namespace"),
            Subresource("status", _STATUS, "Namespace"),
        ),
        return_deleted_object=True,
    ),
    ResourceInfo(
        "pods",
        "pod",
        "Pod",
        "",
        "v1",
        True,
        short_names=("po",),
        categories=("all",),
        subresources=(
            Subresource("attach", ("create", "get"), "PodAttachOptions"),
            Subresource("binding", ("create",), "Binding"),
            Subresource("ephemeralcontainers", _STATUS, "Pod"),
            Subresource("eviction", ("create",), "Eviction", "policy", "v1"),
            Subresource("exec", ("create", "get"), "PodExecOptions"),
            Subresource("log", ("get",), "Pod"),
            Subresource("portforward", ("create", "get"), "PodPortForwardOptions"),
            Subresource("proxy", ("create", "delete", "get", "patch", "update"), "PodProxyOptions"),
            Subresource("resize", _STATUS, "Pod"),
            Subresource("status", _STATUS, "Pod"),
        ),
        graceful_delete=True,
        return_deleted_object=True,
    ),
    ResourceInfo(
        "nodes",
        "node",
        "Node",
        "",
        "v1",
        False,
        short_names=("no",),
        subresources=(
            Subresource("proxy", ("create", "delete", "get", "patch", "update"), "NodeProxyOptions"),
            Subresource("status", _STATUS, "Node"),
        ),
        return_deleted_object=True,
    ),
    ResourceInfo(
        "events", "event", "Event", "", "v1", True, short_names=("ev",), allow_create_on_update=True
    ),
    ResourceInfo("configmaps", "configmap", "ConfigMap", "", "v1", True, short_names=("cm",)),
    ResourceInfo("secrets", "secret", "Secret", "", "v1", True),
    ResourceInfo("podtemplates", "podtemplate", "PodTemplate", "", "v1", True),
    ResourceInfo(
        "serviceaccounts",
        "serviceaccount",
        "ServiceAccount",
        "",
        "v1",
        True,
        short_names=("sa",),
        subresources=(Subresource("token", ("create",), "TokenRequest", "authentication.k8s.io", "v1"),),
    ),
    ResourceInfo(
        "services",
        "service",
        "Service",
        "",
        "v1",
        True,
        short_names=("svc",),
        categories=("all",),
        subresources=(Subresource("status", _STATUS, "Service"),),
        return_deleted_object=True,
    ),
    ResourceInfo("leases", "lease", "Lease", "coordination.k8s.io", "v1", True, allow_create_on_update=True),
    ResourceInfo("runtimeclasses", "runtimeclass", "RuntimeClass", "node.k8s.io", "v1", False),
    # create-only reviews, answered and never stored (api/handlers/auth.py)
    *(
        ResourceInfo(name, kind.lower(), kind, group, "v1", False, verbs=("create",))
        for name, kind, group in (
            ("tokenreviews", "TokenReview", "authentication.k8s.io"),
            ("selfsubjectreviews", "SelfSubjectReview", "authentication.k8s.io"),
            ("selfsubjectaccessreviews", "SelfSubjectAccessReview", "authorization.k8s.io"),
            ("subjectaccessreviews", "SubjectAccessReview", "authorization.k8s.io"),
        )
    ),
    ResourceInfo(
        "certificatesigningrequests",
        "certificatesigningrequest",
        "CertificateSigningRequest",
        "certificates.k8s.io",
        "v1",
        False,
        short_names=("csr",),
        subresources=(
            Subresource("approval", _STATUS, "CertificateSigningRequest", "certificates.k8s.io"),
            Subresource("status", _STATUS, "CertificateSigningRequest", "certificates.k8s.io"),
        ),
    ),
    # resource.k8s.io/v1, dynamic resource allocation (pkg/registry/resource/*/storage/storage.go;
    # their strategies' rules are in api/dynamic_resources.py). No short names or categories.
    ResourceInfo(
        "deviceclasses", "deviceclass", "DeviceClass", _DRA, "v1", False, return_deleted_object=True
    ),
    ResourceInfo(
        "devicetaintrules",
        "devicetaintrule",
        "DeviceTaintRule",
        _DRA,
        "v1",
        False,
        subresources=(Subresource("status", _STATUS, "DeviceTaintRule", _DRA),),
        # NewRESTv1: returnDeletedObject false; AllowUnconditionalUpdate false for v1
        unconditional_update=False,
        status_keeps_metadata=True,
    ),
    ResourceInfo(
        "resourceclaims",
        "resourceclaim",
        "ResourceClaim",
        _DRA,
        "v1",
        True,
        subresources=(Subresource("status", _STATUS, "ResourceClaim", _DRA),),
        return_deleted_object=True,
        status_keeps_metadata=True,
    ),
    ResourceInfo(
        "resourceclaimtemplates",
        "resourceclaimtemplate",
        "ResourceClaimTemplate",
        _DRA,
        "v1",
        True,
        return_deleted_object=True,
    ),
    ResourceInfo(
        "resourceslices", "resourceslice", "ResourceSlice", _DRA, "v1", False, return_deleted_object=True
    ),
)

RESOURCES: dict[str, ResourceInfo] = {r.key: r for r in _REGISTRY}

# metrics.k8s.io: in a real cluster an aggregated API served by metrics-server. Here api/metrics.py
# answers it from the kubelets' stats; it is in discovery only, never in the store (RESOURCES).
METRICS_GROUP = "metrics.k8s.io"
METRICS_VERSION = "v1beta1"
_READ_ONLY = ("get", "list")
_AGGREGATED: tuple[ResourceInfo, ...] = (
    ResourceInfo("nodes", "node", "NodeMetrics", METRICS_GROUP, METRICS_VERSION, False, verbs=_READ_ONLY),
    ResourceInfo("pods", "pod", "PodMetrics", METRICS_GROUP, METRICS_VERSION, True, verbs=_READ_ONLY),
)


def by_key(key: str) -> ResourceInfo | None:
    return RESOURCES.get(key)


def lookup(group: str, version: str, plural: str) -> ResourceInfo | None:
    info = RESOURCES.get(f"{plural}.{group}" if group else plural)
    return info if info is not None and info.version == version else None


def group_versions() -> dict[str, list[str]]:
    """Non-core groups and their versions, in registry order (aggregated groups last)."""
    groups: dict[str, list[str]] = {}
    for info in (*_REGISTRY, *_AGGREGATED):
        if info.group and info.version not in groups.setdefault(info.group, []):
            groups[info.group].append(info.version)
    return groups


def in_group_version(group: str, version: str) -> list[ResourceInfo]:
    return [r for r in (*_REGISTRY, *_AGGREGATED) if r.group == group and r.version == version]
