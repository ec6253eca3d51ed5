"""Discovery and server-info endpoints of the sandbox: /api, /apis, group versions, /version.

What lives here: the legacy discovery documents (APIVersions, APIGroupList, APIGroup,
APIResourceList with subresources) built from the resource registry, answered as plain
`application/json` so client-go and kubectl use the legacy format (reference §6.1), and the
/version body. Must not: answer resource requests.
"""

from __future__ import annotations

from typing import Any

from vk_provider.sandbox.resources import ResourceInfo, group_versions, in_group_version

Obj = dict[str, Any]

KUBERNETES_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23.3",
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
        if sub.group != info.group or sub.version != info.version:
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
