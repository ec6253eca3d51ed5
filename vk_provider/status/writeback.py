"""Pure decisions of a status write: merge with the API copy, the patch body, the final delete.

What lives here: `merge_pod_status` (the kubelet's `mergePodStatus`), `status_patch` (a
two-way strategic merge patch of pods/status over the fields the kubelet writes, carrying
`metadata.uid`, as `preparePatchBytesForPodStatus` in `pkg/util/pod/pod.go`),
`could_have_running_containers`, `can_be_deleted` and `delete_options`. Upstream:
`pkg/kubelet/status/status_manager.go`. Must not: do I/O or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from vk_common.objects import copy_json, format_time, is_mirror
from vk_provider.status.cache import KUBELET_STATUS_FIELDS, QUANTITY_FIELDS, semantic, semantic_field
from vk_provider.status.fields import (
    CONTAINERS_READY,
    DISRUPTION_TARGET,
    FAILED,
    KUBELET_OWNED_CONDITIONS,
    POD_COMPLETED,
    POD_FAILED,
    READY,
    is_terminal_phase,
)

# PodStatus lists with a merge key (patchStrategy=merge); the container status lists are atomic.
_MERGE_KEYS = {"conditions": "type", "podIPs": "ip", "hostIPs": "ip"}


def could_have_running_containers(status: Mapping[str, Any], pod_is_finished: bool) -> bool:
    """False once the pod worker finished the pod, or no container of the status runs.

    The kubelet asks its pod workers (`PodCouldHaveRunningContainers`); here the cached
    status stands in for them: a finished pod, or one whose containers are all stopped and
    will not restart (its phase is terminal), has nothing running.
    """
    if pod_is_finished:
        return False
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for cstatus in status.get(key) or []:
            if "running" in (cstatus.get("state") or {}):
                return True
    return not is_terminal_phase(status.get("phase"))


def merge_pod_status(
    api_status: Mapping[str, Any],
    local: Mapping[str, Any],
    could_have_running: bool,
    now: datetime,
) -> dict[str, Any]:
    """`mergePodStatus`: the status to publish, from the API's copy and the cached one."""
    new: dict[str, Any] = copy_json(local)
    transitioning = not is_terminal_phase(api_status.get("phase")) and is_terminal_phase(new.get("phase"))
    conditions = [
        copy_json(c)
        for c in api_status.get("conditions") or []
        if c.get("type") not in KUBELET_OWNED_CONDITIONS
    ]
    for cond in new.get("conditions") or []:
        if cond.get("type") in KUBELET_OWNED_CONDITIONS:
            conditions.append(cond)
        elif cond.get("type") == DISRUPTION_TARGET and transitioning and not could_have_running:
            updated = dict(cond)
            api_conditions = api_status.get("conditions") or []
            before = next((c for c in api_conditions if c.get("type") == DISRUPTION_TARGET), None)
            if before is None or before.get("status") != cond.get("status"):
                updated["lastTransitionTime"] = format_time(now)
            else:
                updated["lastTransitionTime"] = before.get("lastTransitionTime")
            conditions = [c for c in conditions if c.get("type") != DISRUPTION_TARGET] + [updated]
    new["conditions"] = conditions
    if transitioning and could_have_running:
        for key in ("phase", "reason", "message"):
            if api_status.get(key):
                new[key] = api_status[key]
            else:
                new.pop(key, None)
    if is_terminal_phase(new.get("phase")):
        reason = POD_FAILED if new["phase"] == FAILED else POD_COMPLETED
        ready_true = any(
            c.get("type") in (READY, CONTAINERS_READY) and c.get("status") == "True" for c in conditions
        )
        if ready_true:
            for cond in conditions:
                if cond.get("type") in (READY, CONTAINERS_READY):
                    if cond.get("status") != "False":
                        cond["lastTransitionTime"] = format_time(now)
                    cond.update(status="False", reason=reason)
                    cond.pop("message", None)
    return new


def _list_patch(key: str, old: list[Any], new: list[Any]) -> dict[str, Any]:
    """Strategic merge patch entries for a list with a merge key."""
    merge_key = _MERGE_KEYS[key]
    old_by_key = {item.get(merge_key): item for item in old}
    new_keys = [item.get(merge_key) for item in new]
    items: list[dict[str, Any]] = []
    for item in new:
        before = old_by_key.get(item.get(merge_key))
        if before != item and semantic(before) != semantic(item):
            # Keys the item lost are cleared explicitly: a patch item only merges into the old one.
            cleared = {k: None for k in before or {} if k not in item}
            items.append({**item, **cleared})
    items += [{merge_key: k, "$patch": "delete"} for k in old_by_key if k not in new_keys]
    if not items and [item.get(merge_key) for item in old] == new_keys:
        return {}
    return {f"$setElementOrder/{key}": [{merge_key: k} for k in new_keys], key: items}


def _map_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """`after` as a patch of the map `before`: maps merge, so a key `after` drops is deleted."""
    patch: dict[str, Any] = {k: None for k in before if k not in after}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            patch[key] = _map_patch(old, value)
        else:
            patch[key] = copy_json(value)
    return patch


def status_patch(uid: str, api_status: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any] | None:
    """The strategic merge patch body from the API status to `new`, or None when nothing changed.

    Only the fields the kubelet writes and the conditions are diffed, so fields owned by
    other writers are never touched. The body always carries `metadata.uid`, which the
    apiserver checks like a precondition.
    """
    status_patch_body: dict[str, Any] = {}
    for key in (*KUBELET_STATUS_FIELDS, "conditions"):
        before, after = api_status.get(key), new.get(key)
        if before == after or semantic_field(key, before) == semantic_field(key, after):
            continue
        if key in _MERGE_KEYS and isinstance(after, list):
            status_patch_body.update(_list_patch(key, list(before or []), after))
        elif key in QUANTITY_FIELDS and isinstance(before, Mapping) and isinstance(after, Mapping):
            status_patch_body[key] = _map_patch(before, after)
        else:
            status_patch_body[key] = copy_json(after) if after not in ("", [], {}) else None
    if not status_patch_body:
        return None
    return {"metadata": {"uid": uid}, "status": status_patch_body}


def can_be_deleted(api_pod: Mapping[str, Any], pod_is_finished: bool) -> bool:
    """`canBeDeleted`: deletionTimestamp set, not a mirror pod, API phase terminal, pod finished."""
    metadata = api_pod.get("metadata") or {}
    if not metadata.get("deletionTimestamp") or is_mirror(api_pod):
        return False
    status = api_pod.get("status") or {}
    if not is_terminal_phase(status.get("phase")) or not pod_is_finished:
        return False
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for cstatus in status.get(key) or []:
            if "running" in (cstatus.get("state") or {}):
                return False
    return True


def delete_options(uid: str) -> dict[str, Any]:
    """The final delete: no further grace, and only this incarnation of the pod (UID precondition)."""
    return {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": uid},
    }
