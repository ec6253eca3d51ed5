"""Making a missing permission visible: the apiserver answered 403 to something the provider needs.

What lives here: `request_attributes(method, path, params)` (pure: the RBAC verb and
resource, `patch pods/status`, of an API request path) and `PermissionReporter`, the
KubeClient's 403 hook: the first refusal of each verb and resource (again after
`REPEAT_SECONDS`) is an error log line saying which permission is missing and a Warning
Event `Forbidden` on the Node; repeats are debug lines. The callers still get the error and
retry as they always do. Must not: retry, change requests, or decide what the provider does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from vk_common.logging import get_logger

log = get_logger("kube.permissions")

REPEAT_SECONDS = 600.0
EVENT_REASON = "Forbidden"
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class _Recorder(Protocol):
    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None: ...


def request_attributes(method: str, path: str, params: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The RBAC verb and `resource[/subresource]` of a request to an absolute API path.

    `/api/v1/namespaces/ns/pods/p/status` is a pod's status subresource; a GET without a
    name is `list` (`watch` with watch=true), as the apiserver's RequestInfo resolves it.
    """
    parts = [p for p in path.split("?")[0].split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]  # after /api/v1 or /apis/<g>/<v>
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] if rest else ""
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    group = parts[1] if parts[:1] == ["apis"] and len(parts) > 1 else ""
    if group:
        resource = f"{resource}.{group}" if "/" not in resource else resource.replace("/", f".{group}/", 1)
    if method == "GET":
        verb = "watch" if (params or {}).get("watch") else "get" if named else "list"
    else:
        verb = _VERBS.get(method, method.lower())
    return verb, resource


class PermissionReporter:
    """The KubeClient's `on_forbidden` hook for one provider."""

    def __init__(
        self,
        recorder: _Recorder,
        node_name: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._recorder = recorder
        self._node = {"kind": "Node", "metadata": {"name": node_name}}
        self._clock = clock
        self._reported: dict[tuple[str, str], float] = {}

    def __call__(self, method: str, path: str, params: Mapping[str, Any] | None, message: str) -> None:
        key = request_attributes(method, path, params)
        now = self._clock()
        last = self._reported.get(key)
        if last is not None and now - last < REPEAT_SECONDS:
            log.debug("still forbidden", extra={"verb": key[0], "resource": key[1]})
            return
        self._reported[key] = now
        verb, resource = key
        log.error(
            "permission missing: grant it to the provider's credentials"
            " (charts/vk-provider/templates/rbac.yaml lists what it needs)",
            extra={"verb": verb, "resource": resource, "err": message},
        )
        self._recorder.event(
            self._node,
            "Warning",
            EVENT_REASON,
            f"vk-provider may not {verb} {resource}: {message}",
        )
