"""Parsing an API request path into verb, group, version, namespace, resource, name and subresource.

What lives here: `RequestInfo` and `parse_request(method, path, query)`, following the real
server's `staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go` (including its
`namespaces/<ns>/status|finalize` special case and `watch=true` turning list into watch).
Must not: look anything up in the store or answer requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(frozen=True)
class RequestInfo:
    is_resource: bool
    verb: str  # get list watch create update patch delete deletecollection (or the HTTP method, lowercased)
    group: str = ""
    version: str = ""
    namespace: str | None = None
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()  # path parts after /api/<v> or /apis/<g>/<v>

    @property
    def resource_key(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


def parse_request(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    parts = tuple(p for p in path.strip("/").split("/") if p)
    verb = _METHOD_VERBS.get(method.upper(), method.lower())
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(False, verb)
    if parts[0] == "api":
        if len(parts) < 2:
            return RequestInfo(False, verb)
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 3:
            return RequestInfo(False, verb, group=parts[1] if len(parts) > 1 else "")
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return RequestInfo(False, verb, group, version)
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if resource == "namespaces":
        namespace = None
    if verb == "get" and not name:
        verb = "list"
    if verb == "delete" and not name:
        verb = "deletecollection"
    if verb in ("list", "get") and query.get("watch", "").lower() in ("true", "1"):
        verb = "watch"
    return RequestInfo(True, verb, group, version, namespace, resource, name, subresource, rest)
