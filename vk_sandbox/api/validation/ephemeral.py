"""The rules of the pods/ephemeralcontainers subresource, as the real apiserver applies them.

What lives here: `ephemeral_candidate` (what an ephemeralcontainers write stores: the old pod
with only `spec.ephemeralContainers` taken from the request, as upstream's
dropNonEphemeralContainerUpdates in pkg/registry/core/pod/strategy.go) and
`validate_ephemeral_update` (ValidatePodEphemeralContainersUpdate and validateEphemeralContainers,
pkg/apis/core/validation/validation.go: static pods refused, existing ephemeral containers
neither removed nor changed, names unique across all containers, the target must be a pod
container, only the allowed fields, no subPath).
Must not: touch the store, build HTTP responses or raise ApiError (callers turn causes into 422s).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from vk_sandbox.api.validation.field import duplicate, forbidden, not_found
from vk_sandbox.api.validation.kinds import MIRROR_POD_ANNOTATION

EPHEMERAL_CONTAINERS = "ephemeralcontainers"  # the subresource
_NOT_ALLOWED = "cannot be set for an Ephemeral Container"
# EphemeralContainerCommon's fields that allowedEphemeralContainerFields refuses, in struct order.
_DISALLOWED_FIELDS = (
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
)


def _spec(pod: dict[str, Any]) -> dict[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, dict) else {}


def ephemeral_candidate(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The old pod with the request's ephemeral containers (and its resourceVersion / uid
    preconditions): nothing else changes through this write."""
    result = copy.deepcopy(old)
    for key in ("resourceVersion", "uid"):  # the request's preconditions
        value = (new.get("metadata") or {}).get(key)
        if value:
            result["metadata"][key] = value
    ephemeral = _spec(new).get("ephemeralContainers")
    if ephemeral:
        result.setdefault("spec", {})["ephemeralContainers"] = copy.deepcopy(ephemeral)
    else:
        result.setdefault("spec", {}).pop("ephemeralContainers", None)
    return result


def _is_set(value: Any) -> bool:
    return value not in (None, "", [], {}, False, 0)


def validate_ephemeral_update(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    """Causes for replacing old's ephemeral containers with new's (new: an `ephemeral_candidate`)."""
    if MIRROR_POD_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [forbidden("", "static pods do not support ephemeral containers")]
    path = "spec.ephemeralContainers"
    spec = _spec(new)
    news = [c for c in spec.get("ephemeralContainers") or [] if isinstance(c, dict)]
    out: list[dict[str, str]] = []
    others = {c.get("name") for key in ("containers", "initContainers") for c in spec.get(key) or []}
    names = set(others)
    for i, container in enumerate(news):
        where = f"{path}[{i}]"
        name = container.get("name")
        if name in names:
            out.append(duplicate(f"{where}.name", name))
        names.add(name)
        target = container.get("targetContainerName")
        if target and target not in others:
            out.append(not_found(f"{where}.targetContainerName", target))
        out += [
            forbidden(f"{where}.{f}", _NOT_ALLOWED) for f in _DISALLOWED_FIELDS if _is_set(container.get(f))
        ]
        for j, mount in enumerate(container.get("volumeMounts") or []):
            for key in ("subPath", "subPathExpr"):
                if isinstance(mount, dict) and mount.get(key):
                    out.append(forbidden(f"{where}.volumeMounts[{j}].{key}", _NOT_ALLOWED))
    by_name = {c.get("name"): c for c in news}
    for before in _spec(old).get("ephemeralContainers") or []:
        after = by_name.get(before.get("name"))
        if after is None:
            out.append(
                forbidden(
                    path,
                    f"existing ephemeral containers {json.dumps(before.get('name'))} may not be removed\n",
                )
            )
        elif after != before:
            out.append(
                forbidden(
                    path,
                    f"existing ephemeral containers {json.dumps(before.get('name'))} may not be changed\n",
                )
            )
    return out
