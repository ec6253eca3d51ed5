"""Discovery and server-info endpoints of the sandbox: /api, /apis, group versions, /version.

What lives here: the legacy discovery documents (APIVersions, APIGroupList, APIGroup,
APIResourceList with subresources) built from the resource registry (upstream
k8s.io/apiserver/pkg/endpoints/discovery), the
aggregated discovery document (`apidiscovery.k8s.io/v2` APIGroupDiscoveryList, what kubectl
asks `/api` and `/apis` for first; `staging/src/k8s.io/api/apidiscovery/v2/types.go`), and the
/version body of KUBE_VERSION. Must not: answer resource requests.
"""

from __future__ import annotations

from typing import Any

from vk_common.kube_version import KUBE_MAJOR, KUBE_MINOR, KUBE_VERSION
from vk_sandbox.api.resources import ResourceInfo, Subresource, group_versions, in_group_version

Obj = dict[str, Any]

# /version: apimachinery's version.Info as a kube-apiserver of KUBE_VERSION fills it
# (staging/src/k8s.io/component-base/compatibility/version.go effectiveVersion.Info): the
# emulation version is the binary's, the minimum compatibility version one minor older. The
# build fields are what an unstamped build reports (component-base/version/base.go), with the
# Go release the upstream tree builds with (.go-version).
KUBERNETES_VERSION = {
    "major": KUBE_MAJOR,
    "minor": KUBE_MINOR,
    "emulationMajor": KUBE_MAJOR,
    "emulationMinor": KUBE_MINOR,
    "minCompatibilityMajor": KUBE_MAJOR,
    "minCompatibilityMinor": str(int(KUBE_MINOR) - 1),
    "gitVersion": KUBE_VERSION,
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "1970-01-01T00:00:00Z",
    "goVersion": "go1.26.10",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list() -> Obj:
    groups = [_group(name, versions) for name, versions in group_versions().items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str) -> Obj | None:
    versions = group_versions().get(name)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _elsewhere(info: ResourceInfo, sub: Subresource) -> bool:
    """Whether the subresource's kind is of another group/version than its resource (eviction)."""
    return (sub.group, sub.version) != (info.group, info.version)


def _resource_entries(info: ResourceInfo) -> list[Obj]:
    main: Obj = {
        "name": info.name,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": list(info.verbs),
    }
    if info.short_names:
        main["shortNames"] = list(info.short_names)
    if info.categories:
        main["categories"] = list(info.categories)
    entries = [main]
    for sub in info.subresources:
        entry: Obj = {"name": f"{info.name}/{sub.name}", "singularName": "", "namespaced": info.namespaced}
        if _elsewhere(info, sub):
            entry["group"] = sub.group
            entry["version"] = sub.version
        entry["kind"] = sub.kind
        entry["verbs"] = list(sub.verbs)
        entries.append(entry)
    return entries


def api_resource_list(group: str, version: str) -> Obj | None:
    infos = in_group_version(group, version)
    if not infos:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for info in infos for entry in _resource_entries(info)],
    }


AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> bool:
    """Whether the Accept header asks for apidiscovery.k8s.io/v2 (before any other type)."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if {"g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"} <= params:
            return True
        if part.strip():
            return False
    return False


def _kind(kind: str, group: str = "", version: str = "") -> Obj:
    """A responseKind. Upstream builds them from the legacy APIResource entries
    (staging/src/k8s.io/apiserver/pkg/endpoints/installer.go ConvertGroupVersionIntoToDiscovery), so
    group and version are empty unless they differ from the resource's own (_elsewhere)."""
    return {"group": group, "version": version, "kind": kind}


def _aggregated_resource(info: ResourceInfo) -> Obj:
    entry: Obj = {
        "resource": info.name,
        "responseKind": _kind(info.kind),
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular,
        "verbs": list(info.verbs),
    }
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    if info.subresources:
        entry["subresources"] = [
            {
                "subresource": sub.name,
                "responseKind": _kind(sub.kind, sub.group, sub.version)
                if _elsewhere(info, sub)
                else _kind(sub.kind),
                "verbs": list(sub.verbs),
            }
            for sub in info.subresources
        ]
    return entry


def aggregated_discovery(legacy: bool) -> Obj:
    """APIGroupDiscoveryList for /api (legacy=True, the core group) or /apis (the named groups)."""
    groups = {"": ["v1"]} if legacy else group_versions()
    items = []
    for name, versions in groups.items():
        metadata: Obj = {"name": name} if name else {}
        items.append(
            {
                "metadata": metadata,
                "versions": [
                    {
                        "version": v,
                        "resources": [_aggregated_resource(i) for i in in_group_version(name, v)],
                        "freshness": "Current",
                    }
                    for v in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
