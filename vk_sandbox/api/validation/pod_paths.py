"""Pod fields the real apiserver refuses for the path they hold, and its hostProcess rule.

What lives here: `pod_path_errors(spec)`, the causes of a pod spec's
- volumeMount `subPath` and `subPathExpr` that are absolute or hold a `..` element
  (validateLocalDescendingPath), or both set at once;
- `path` of an item of a configMap, secret or downwardAPI volume, or of a projected volume's
  sources, that is absolute, holds `..` or starts with `..` (ValidateLocalNonReservedPath);
- `hostProcess` containers (Windows options, the pod's or a container's) in a pod without
  `hostNetwork`, or beside containers that are not (validateWindowsHostProcessPod).
Upstream: pkg/apis/core/validation/validation.go. Must not: look at anything but the spec it is
given, or raise (the caller turns causes into a 422).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

from vk_sandbox.api.validation.field import invalid

Causes = list[dict[str, str]]
_ITEM_SOURCES = ("configMap", "secret", "downwardAPI")


def _no_backsteps(value: str, field: str) -> Causes:
    return (
        [invalid(field, value, "must not contain '..'")]
        if ".." in value.replace("\\", "/").split("/")
        else []
    )


def _descending(value: str, field: str) -> Causes:
    """validateLocalDescendingPath."""
    out = [invalid(field, value, "must be a relative path")] if value.startswith("/") else []
    return out + _no_backsteps(value, field)


def _non_reserved(value: str, field: str) -> Causes:
    """ValidateLocalNonReservedPath: also not a name starting with `..` (the atomic writer's)."""
    out = _descending(value, field)
    if not out and posixpath.basename(value).startswith(".."):
        out.append(invalid(field, value, "must not start with '..'"))
    return out


def _items(source: Any, field: str, kind: str) -> Causes:
    """A configMap's or secret's item is `items[i].path`; a downwardAPI file's path is named
    without its index (validateDownwardAPIVolumeFile is given the source's path)."""
    out: Causes = []
    items = source.get("items") if isinstance(source, dict) else None
    for i, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict) and isinstance(item.get("path"), str) and item["path"]:
            where = f"{field}.path" if kind == "downwardAPI" else f"{field}.items[{i}].path"
            out += _non_reserved(item["path"], where)
    return out


def _volume_items(volumes: Any) -> Causes:
    out: Causes = []
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        if not isinstance(volume, dict):
            continue
        for kind in _ITEM_SOURCES:
            out += _items(volume.get(kind), f"spec.volumes[{i}].{kind}", kind)
        projected = volume.get("projected")
        sources = projected.get("sources") if isinstance(projected, dict) else None
        for j, source in enumerate(sources if isinstance(sources, list) else []):
            for kind in _ITEM_SOURCES:
                if isinstance(source, dict):
                    out += _items(source.get(kind), f"spec.volumes[{i}].projected.sources[{j}].{kind}", kind)
    return out


def _containers(spec: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """Init containers, then containers, with their field paths (VisitContainersWithPath)."""
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        for i, c in enumerate(containers if isinstance(containers, list) else []):
            if isinstance(c, dict):
                yield c, f"spec.{key}[{i}]"


def _mount_paths(spec: dict[str, Any]) -> Causes:
    out: Causes = []
    for c, path in _containers(spec):
        mounts = c.get("volumeMounts")
        for j, m in enumerate(mounts if isinstance(mounts, list) else []):
            if not isinstance(m, dict):
                continue
            # ValidateVolumeMounts names the path checks without the mount's index and the
            # exclusivity with it: upstream's field paths, quirk included.
            field = f"{path}.volumeMounts"
            sub, expr = m.get("subPath"), m.get("subPathExpr")
            if isinstance(sub, str) and sub:
                out += _descending(sub, f"{field}.subPath")
            if isinstance(expr, str) and expr:
                if isinstance(sub, str) and sub:
                    exclusive = "subPathExpr and subPath are mutually exclusive"
                    out.append(invalid(f"{field}[{j}].subPathExpr", expr, exclusive))
                out += _descending(expr, f"{field}.subPathExpr")
    return out


def _host_process(options: Any) -> bool | None:
    windows = options.get("windowsOptions") if isinstance(options, dict) else None
    value = windows.get("hostProcess") if isinstance(windows, dict) else None
    return value if isinstance(value, bool) else None


def _host_process_pod(spec: dict[str, Any]) -> Causes:
    out: Causes = []
    pod_value = _host_process(spec.get("securityContext"))
    count = host_process = 0
    for c, path in _containers(spec):
        count += 1
        value = _host_process(c.get("securityContext"))
        if pod_value is not None and value is not None and pod_value != value:
            detail = (
                f"pod hostProcess value must be identical if both are specified, was {str(pod_value).lower()}"
            )
            out.append(invalid(f"{path}.securityContext.windowsOptions.hostProcess", value, detail))
        if value or (value is None and pod_value):
            host_process += 1
    if host_process:
        if host_process != count:
            detail = "If pod contains any hostProcess containers then all containers must be "
            detail += "HostProcess containers"
            out.append(invalid("spec", "", detail))
        host_network = bool(spec.get("hostNetwork"))
        if not host_network:
            detail = "hostNetwork must be true if pod contains any hostProcess containers"
            out.append(invalid("spec.hostNetwork", host_network, detail))
    return out


def pod_path_errors(spec: dict[str, Any]) -> Causes:
    """In upstream's order: the volumes' items, the containers' mounts, then hostProcess."""
    return _volume_items(spec.get("volumes")) + _mount_paths(spec) + _host_process_pod(spec)
