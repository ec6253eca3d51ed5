"""What a write does to an object, as the real generic registry decides it.

What lives here: the pure rules of `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/
store.go` and the pod strategy that `Store` applies: `merge_update` (system metadata kept, only
what the (sub)resource may change, generation bumps), `delete_on_update` (the last finalizer of a
due deletion removed), `before_delete` (graceful deletion: rest.BeforeDelete and
podStrategy.CheckGracefulDelete), `check_preconditions` (uid / resourceVersion of a DELETE),
`generated_name` (generateName) and the messages these errors carry.
Must not: hold objects, log events or know about watches (store.py and watch_cache.py do).
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from vk_common.objects import copy_json
from vk_sandbox.api import errors
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.api.validation.field import invalid
from vk_sandbox.storage.objects import Obj, clone, metadata, now_rfc3339, parse_time

OPTIMISTIC_LOCK_MSG = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
GENERATED_SUFFIX_LENGTH = 5
# k8s.io/apiserver pkg/storage/names/generate.go: a base longer than 63 - 5 characters is cut
MAX_GENERATED_PREFIX = 63 - GENERATED_SUFFIX_LENGTH
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


def generated_name(prefix: str) -> str:
    suffix = "".join(secrets.choice(_NAME_CHARS) for _ in range(GENERATED_SUFFIX_LENGTH))
    return prefix[:MAX_GENERATED_PREFIX] + suffix


def without_rv(obj: Obj) -> Obj:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("resourceVersion", None)
    out["metadata"] = meta
    return out


def merge_update(info: ResourceInfo, old: Obj, new: Obj, subresource: str | None) -> Obj:
    """The object to store: system metadata from old, and only what the (sub)resource may change.

    "binding" is the pods/binding write: spec and status together (one event, as the real one).
    """
    if subresource == "approval":
        result = clone(old)
        result.setdefault("status", {})["conditions"] = (new.get("status") or {}).get("conditions", [])
        if not result["status"]["conditions"]:
            del result["status"]["conditions"]
        return result
    if subresource == "finalize":
        result = clone(old)
        finalizers = (new.get("spec") or {}).get("finalizers")
        result.setdefault("spec", {})["finalizers"] = finalizers or []
        return result
    if subresource == "binding":
        return merge_update(info, old, new, "status") | {"spec": new.get("spec") or {}}
    if subresource == "status":
        result = {k: copy_json(v) for k, v in old.items() if k not in ("status", "metadata")}
        result["metadata"] = new.get("metadata") or {}
        if info.status_keeps_metadata:
            _reset_metadata_for_status(result["metadata"], old["metadata"])
        if "status" in new:
            result["status"] = new["status"]
        new = result
    elif info.has_status:
        new.pop("status", None)
        if "status" in old:
            new["status"] = copy_json(old["status"])
    meta = metadata(new)
    old_meta = old["metadata"]
    for system_field in _SYSTEM_FIELDS:
        if system_field in old_meta:
            meta[system_field] = old_meta[system_field]
        else:
            meta.pop(system_field, None)
    meta["name"] = old_meta["name"]
    if "namespace" in old_meta:
        meta["namespace"] = old_meta["namespace"]
    meta["resourceVersion"] = old_meta["resourceVersion"]
    new["apiVersion"] = info.api_version
    new["kind"] = info.kind
    spec_writer = subresource is None or subresource == "resize"  # pods/resize changes the spec
    # What the generation counts: a pod template's template (podTemplateStrategy.PrepareForUpdate),
    # every other kind's spec.
    counted = "template" if info.key == "podtemplates" else "spec"
    if spec_writer and "generation" in old_meta and new.get(counted) != old.get(counted):
        meta["generation"] = old_meta["generation"] + 1
    return new


# metav1.ResetObjectMetaForStatus (k8s.io/apimachinery pkg/apis/meta/v1/helpers.go): what a status
# write keeps of the stored metadata (deletionTimestamp and generation are system fields anyway).
_STATUS_KEPT_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def _reset_metadata_for_status(meta: Obj, old_meta: Obj) -> None:
    for key in _STATUS_KEPT_METADATA:
        if key in old_meta:
            meta[key] = copy_json(old_meta[key])
        else:
            meta.pop(key, None)


def delete_on_update(new: Obj, old: Obj) -> bool:
    """Removing the last finalizer of an object whose deletion is due deletes it (store.go)."""
    new_meta, old_meta = new["metadata"], old["metadata"]
    if new_meta.get("finalizers") or not old_meta.get("finalizers"):
        return False
    return bool(old_meta.get("deletionTimestamp")) and old_meta.get("deletionGracePeriodSeconds") == 0


def before_delete(info: ResourceInfo, obj: Obj, grace: int | None) -> tuple[bool, bool, int]:
    """rest.BeforeDelete + podStrategy.CheckGracefulDelete: (graceful, pending, period); mutates obj."""
    if not info.graceful_delete:
        return False, False, 0
    meta = obj["metadata"]
    if meta.get("deletionTimestamp"):
        current = meta.get("deletionGracePeriodSeconds")
        if not current:
            return False, False, 0
        if grace is None or grace >= current:
            return False, True, current
        deadline = parse_time(meta["deletionTimestamp"]) - timedelta(seconds=current - grace)
        meta["deletionTimestamp"] = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
        meta["deletionGracePeriodSeconds"] = grace
        return True, False, grace
    spec = obj.get("spec") or {}
    period = grace if grace is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
    if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        period = 0
    if period < 0:
        period = 1
    meta["deletionTimestamp"] = now_rfc3339(period)
    meta["deletionGracePeriodSeconds"] = period
    if meta.get("generation", 0) > 0:
        meta["generation"] += 1
    return True, False, period


def check_preconditions(info: ResourceInfo, obj: Obj, preconditions: dict[str, Any]) -> None:
    meta = obj["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != meta["uid"]:
        raise errors.conflict(
            info.kind,
            meta["name"],
            f"the UID in the precondition ({uid}) does not match the UID in record ({meta['uid']}). "
            "The object might have been deleted and then recreated",
            info.group,
        )
    if rv and rv != meta["resourceVersion"]:
        raise errors.conflict(
            info.kind,
            meta["name"],
            f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in "
            f"record ({meta['resourceVersion']}). The object might have been modified",
            info.group,
        )


def check_update_preconditions(info: ResourceInfo, old: Obj, new: Obj) -> None:
    """An update's resourceVersion and uid must match the stored object's (409 otherwise); a kind
    whose strategy refuses unconditional updates needs one (Store.Update: 422 naming the resource)."""
    meta, old_meta = new.get("metadata") or {}, old["metadata"]
    name = old_meta["name"]
    rv = meta.get("resourceVersion")
    if not rv and not info.unconditional_update:
        cause = invalid("metadata.resourceVersion", 0, "must be specified for an update")
        raise errors.invalid(info.name, name, [cause], info.group)
    if rv and rv != old_meta["resourceVersion"]:
        raise errors.conflict(info.name, name, OPTIMISTIC_LOCK_MSG, info.group)
    uid = meta.get("uid")
    if uid and uid != old_meta["uid"]:
        key = f"/registry/{info.key}/{old_meta.get('namespace', '')}/{name}".replace("//", "/")
        raise errors.conflict(
            info.name,
            name,
            f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: "
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old_meta['uid']}",
            info.group,
        )
