"""HTTP handlers for the sandbox's writes: create, update, patch, delete and deletecollection.

What lives here: the write verbs (reads are in reads.py, watch in watch.py; dispatch.py routes
requests): defaulting, admission and validation of writes (422 with causes), identity checks,
dryRun, the patch retry, and the delete options. Bodies are read by api/decoding.py and answered
through api/responses.py.
Must not: implement storage semantics (storage/store.py) or discovery (api/discovery.py)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from vk_sandbox.api import dynamic_resources, errors
from vk_sandbox.api.decoding import (
    decode_fields,
    dry_run,
    field_validation,
    read_body_noting_duplicates,
    read_typed_body,
)
from vk_sandbox.api.defaults import (
    admit_update,
    apply_defaults,
    copy_pull_secrets,
    mirror_pod_refusal,
    prepare_for_create,
    service_account_of,
)
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.handlers.context import ApiContext, name_of
from vk_sandbox.api.handlers.reads import list_item
from vk_sandbox.api.off_loop import run_sized
from vk_sandbox.api.patch import PatchError, apply_patch
from vk_sandbox.api.requestinfo import RequestInfo
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.api.responses import json_response
from vk_sandbox.api.runtime_class_admission import admit_runtime_class
from vk_sandbox.api.validation.ephemeral import (
    EPHEMERAL_CONTAINERS,
    ephemeral_candidate,
    validate_ephemeral_update,
)
from vk_sandbox.api.validation.kinds import (
    validate_config_update,
    validate_mirror_pod,
    validate_object,
    validate_pod_update,
)
from vk_sandbox.api.validation.resize import (
    allocatable_refusal,
    resize_update,
    undeclared_features,
    validate_pod_resize,
)
from vk_sandbox.storage.objects import clone
from vk_sandbox.storage.registry_rules import GENERATED_SUFFIX_LENGTH, MAX_GENERATED_PREFIX

Obj = dict[str, Any]
# A patch lost to another writer is applied again to the new object; each loss follows another
# writer's success, so this bound is only a backstop (the real server has none).
PATCH_ATTEMPTS = 1000


# ------------------------------------------------------------------ writes


def validate(info: ResourceInfo, obj: Obj, old: Obj | None, subresource: str | None) -> None:
    name = (obj.get("metadata") or {}).get("name") or ""
    causes = validate_object(obj, strict=False)
    if old is not None and subresource is None:
        causes += dynamic_resources.update_errors(info, old, obj)  # resource.k8s.io immutable fields
    if info.key in ("configmaps", "secrets") and old is not None:
        causes = validate_config_update(old, obj) + causes  # the update rules come first
    if info.key == "pods":
        causes += validate_mirror_pod(obj, old)
        if old is not None and subresource is None:
            causes += validate_pod_update(old, obj)
        elif old is not None and subresource == "resize":
            causes += validate_pod_resize(old, obj)
        elif old is not None and subresource == EPHEMERAL_CONTAINERS:
            causes += validate_ephemeral_update(old, obj)
    if old is not None and old["metadata"].get("deletionTimestamp"):
        # ValidateObjectMetaUpdate: a deleting object keeps or loses finalizers, never gains any
        kept = set(old["metadata"].get("finalizers") or [])
        added = [f for f in (obj.get("metadata") or {}).get("finalizers") or [] if f not in kept]
        if added:
            found = "[]string{" + ", ".join(json.dumps(f) for f in added) + "}"
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "message": f"Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {found}",
                    "field": "metadata.finalizers",
                }
            )
    if causes:
        raise errors.invalid(info.kind, name, causes, info.group)


def _check_identity(ri: RequestInfo, info: ResourceInfo, obj: Obj) -> None:
    """Name and namespace from the URL into a decoded object (a null metadata is an empty one)."""
    meta = obj["metadata"] = obj.get("metadata") or {}
    if info.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and body_ns != ri.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = ri.namespace
    if ri.name and meta.get("name") and meta["name"] != ri.name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({ri.name})"
        )
    if ri.name:
        meta["name"] = ri.name


async def create_object(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    mode = field_validation(request)  # the options are validated before the body is decoded
    dry = dry_run(request)
    obj, duplicates = await read_body_noting_duplicates(request)
    # Decoding, defaulting and validating a 3 MiB object takes seconds: off the event loop
    size = len(await request.read())
    warnings = await run_sized(size, _admit_create, ri, info, obj, mode, duplicates)
    if info.key == "pods":
        await _admit_runtime_class(ctx, obj)
        await _admit_pull_secrets(ctx, obj)
    created = await ctx.store.create(info.key, obj, dry_run=dry)
    return json_response(created, 201, warnings)


async def _admit_runtime_class(ctx: ApiContext, pod: Obj) -> None:
    """The RuntimeClass admission plugin on a new pod: its runtimeClassName must name a
    RuntimeClass, whose overhead and scheduling join the pod (api/runtime_class_admission.py)."""
    name = (pod.get("spec") or {}).get("runtimeClassName")
    runtime_class = None
    if name:
        try:
            runtime_class = await ctx.store.get("runtimeclasses.node.k8s.io", None, str(name))
        except ApiError as exc:
            if exc.code != 404:
                raise
            refusal = f'pod rejected: RuntimeClass "{name}" not found'
            raise errors.forbidden("pods", str(pod["metadata"].get("name") or ""), refusal) from exc
    admit_runtime_class(pod, runtime_class)


async def _admit_pull_secrets(ctx: ApiContext, pod: Obj) -> None:
    """ServiceAccount admission's copy of the service account's imagePullSecrets into a new pod
    (none when the account cannot be read: the real plugin would refuse such a pod)."""
    account = service_account_of(pod)
    if account is None:
        return
    try:
        found = await ctx.store.get("serviceaccounts", pod["metadata"].get("namespace"), account)
    except ApiError:
        return
    copy_pull_secrets(pod, found)


def _admit_create(
    ri: RequestInfo, info: ResourceInfo, obj: Obj, mode: str, duplicates: list[str]
) -> list[str]:
    """Decode, default, admit and validate a new object in place; its warnings."""
    warnings: list[str] = []
    decode_fields(info, obj, mode, warnings, duplicates=duplicates)
    _check_identity(ri, info, obj)
    if obj["metadata"].get("resourceVersion"):
        # storage.ErrResourceVersionSetOnCreate from etcd3's Create: a plain error, so 500
        raise errors.storage_error("resourceVersion should not be set on objects to be created")
    apply_defaults(info, obj)
    refusal = mirror_pod_refusal(obj) if info.key == "pods" else None
    if refusal:
        raise errors.forbidden(info.name, obj["metadata"].get("name", ""), refusal)
    prepare_for_create(info, obj)
    prefix = obj["metadata"].get("generateName")
    if not obj["metadata"].get("name") and prefix:
        # rest.BeforeCreate generates the name before validation, which checks it like any name;
        # the store generates the real one: the prefix (cut to 58) and five lowercase letters
        obj["metadata"]["name"] = prefix[:MAX_GENERATED_PREFIX] + "x" * GENERATED_SUFFIX_LENGTH
        validate(info, obj, None, None)
        del obj["metadata"]["name"]
    else:
        validate(info, obj, None, None)
    return warnings


async def write_update(
    ctx: ApiContext,
    info: ResourceInfo,
    obj: Obj,
    subresource: str | None,
    warnings: list[str],
    dry: bool = False,
    *,
    size: int,
) -> web.Response:
    """Default, validate and store an update of an existing (or, where allowed, new) object;
    `size`: the JSON bytes the admission walks (`off_loop.run_sized`)."""
    meta = obj["metadata"]
    namespace = meta.get("namespace") if info.namespaced else None
    try:
        old: Obj | None = await ctx.store.get(info.key, namespace, meta.get("name") or "")
    except ApiError as e:
        if e.code != 404 or not info.allow_create_on_update or subresource:
            raise
        old = None
    stored_as = subresource
    if old is not None and info.key == "pods" and subresource == "resize":
        obj = resize_update(old, obj)
    if info.key == "pods" and subresource == EPHEMERAL_CONTAINERS and old is not None:
        # Only spec.ephemeralContainers changes; the store sees a spec update (generation + 1).
        obj, stored_as = ephemeral_candidate(old, obj), None
    await run_sized(size, _admit_update, info, obj, old, subresource)
    if old is not None and info.key == "pods" and subresource == "resize":
        await _admit_resize(ctx, old, obj)
    if old is None:
        return json_response(await ctx.store.create(info.key, obj, dry_run=dry), 201, warnings)
    updated = await ctx.store.update(info.key, obj, subresource=stored_as, dry_run=dry)
    return json_response(updated, 200, warnings)


async def _admit_resize(ctx: ApiContext, old: Obj, pod: Obj) -> None:
    """The NodeDeclaredFeatureValidator, then the PodResizeValidator admission plugin: the node
    must declare the features the resize needs, and a bound pod's new requests must fit its
    allocatable (a write that leaves the spec alone is not checked)."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name or pod.get("spec") == old.get("spec"):
        return
    name = pod["metadata"].get("name") or ""
    try:
        node = await ctx.store.get("nodes", None, node_name)
    except ApiError as e:
        if e.code != 404:
            raise
        raise errors.forbidden("pods", name, f'node "{node_name}" not found') from None
    missing = undeclared_features(old, pod, node)
    if missing:
        needs = f"pod update requires features {', '.join(missing)} which are not available on node"
        raise errors.forbidden("pods", name, f'{needs} "{node_name}"')
    message, cause = allocatable_refusal(pod, node)
    if message:
        refusal = errors.forbidden("pods", name, message)
        refusal.details = {**(refusal.details or {}), "causes": [{"reason": cause}]}
        raise refusal


def _admit_update(info: ResourceInfo, obj: Obj, old: Obj | None, subresource: str | None) -> None:
    """Default, admit and validate an update in place (a create where old is None)."""
    apply_defaults(info, obj)
    if old is None:
        prepare_for_create(info, obj)
        validate(info, obj, None, None)
        return
    if subresource is None:
        admit_update(info, obj, old)
    validate(info, _effective(info, old, obj, subresource), old, subresource)


def _effective(info: ResourceInfo, old: Obj, new: Obj, subresource: str | None) -> Obj:
    """What the update would store, for validation (status from old on the main resource, etc.)."""
    candidate = clone(new)
    meta = candidate["metadata"]
    for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if key in old["metadata"]:
            meta[key] = old["metadata"][key]
    if subresource in ("status", "approval"):
        candidate["spec"] = clone(old.get("spec") or {})
    elif info.has_status and "status" in old:
        candidate["status"] = clone(old["status"])
    return candidate


async def update_object(
    ctx: ApiContext,
    request: web.Request,
    ri: RequestInfo,
    info: ResourceInfo,
    *,
    subresource: str | None = None,
) -> web.Response:
    mode = field_validation(request)
    dry = dry_run(request)
    obj, duplicates = await read_body_noting_duplicates(request)
    warnings: list[str] = []
    size = len(await request.read())
    await run_sized(size, decode_fields, info, obj, mode, warnings, duplicates=duplicates)
    _check_identity(ri, info, obj)
    return await write_update(ctx, info, obj, subresource or None, warnings, dry, size=size)


async def patch_object(
    ctx: ApiContext,
    request: web.Request,
    ri: RequestInfo,
    info: ResourceInfo,
    *,
    subresource: str | None = None,
) -> web.Response:
    """Apply the patch to the stored object and write it, as the real server's GuaranteedUpdate:
    when the object changed between the read and the write, the patch is applied again to the
    new one, unless the patch itself names a resourceVersion (then the write's 409 stands), so
    that concurrent unconditional patches all succeed (k8s.io/apiserver
    pkg/endpoints/handlers/patch.go, pkg/storage/etcd3/store.go GuaranteedUpdate)."""
    mode = field_validation(request)
    dry = dry_run(request)
    raw = await request.read()
    namespace, name = name_of(ri, info)
    content_type = request.headers.get("Content-Type", "")
    attempts = 0
    while True:
        warnings: list[str] = []
        current = await ctx.store.get(info.key, namespace, name)
        size = len(raw) + ctx.store.stored_bytes(info.key, namespace, name)
        patched = await run_sized(size, _patched, info, current, raw, content_type, mode, warnings)
        _check_identity(ri, info, patched)
        try:
            return await write_update(ctx, info, patched, subresource or None, warnings, dry, size=size)
        except ApiError as e:
            attempts += 1
            pinned = _resource_version(patched) != _resource_version(current)
            if e.code != 409 or pinned or attempts >= PATCH_ATTEMPTS:
                raise


def _resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _patched(
    info: ResourceInfo, current: Obj, raw: bytes, content_type: str, mode: str, warnings: list[str]
) -> Obj:
    """The object a patch makes of current, decoded as its kind."""
    try:
        patched = apply_patch(current, raw, content_type, kind=info.kind, api_version=info.api_version)
    except PatchError as e:
        raise ApiError(e.code, e.reason, e.message, {} if e.generic else None) from None
    decode_fields(info, patched, mode, warnings, patched=True)
    return patched


async def read_delete_options(request: web.Request) -> Obj | None:
    """A DELETE's DeleteOptions body, if it has one, decoded as its type."""
    if not request.can_read_body or not await request.read():
        return None
    return await read_typed_body(request, "DeleteOptions", "v1", prefixed=False)


def _delete_options(body: Obj | None, request: web.Request) -> tuple[int | None, Obj]:
    body = body or {}
    grace = body.get("gracePeriodSeconds")
    if request.query.get("gracePeriodSeconds"):
        try:
            grace = int(request.query["gracePeriodSeconds"])
        except ValueError:
            raise errors.bad_request(
                f"invalid gracePeriodSeconds: {request.query['gracePeriodSeconds']}"
            ) from None
    return grace, body.get("preconditions") or {}


async def delete_object(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    body = await read_delete_options(request)
    grace, preconditions = _delete_options(body, request)
    namespace, name = name_of(ri, info)
    if dry_run(request, body):
        # Store.Delete with dryRun (k8s.io/apiserver pkg/registry/generic/registry/store.go): what
        # the deletion would answer, the graceful update (deletionTimestamp) included
        obj = await ctx.store.delete(
            info.key, namespace, name, grace_period_seconds=grace, preconditions=preconditions, dry_run=True
        )
        kept = info.graceful_delete or bool(obj["metadata"].get("finalizers"))
        return json_response(obj if kept or info.return_deleted_object else _deleted_status(info, name, obj))
    result = await perform_delete(ctx, info, namespace, name, grace, preconditions)
    return json_response(result)


async def perform_delete(
    ctx: ApiContext,
    info: ResourceInfo,
    namespace: str | None,
    name: str,
    grace: int | None,
    preconditions: Obj,
) -> Obj:
    """Delete and answer as the real server: the object while it still exists or for types that
    return it, else a Success Status."""
    obj = await ctx.store.delete(
        info.key, namespace, name, grace_period_seconds=grace, preconditions=preconditions
    )
    still_there = True
    try:
        await ctx.store.get(info.key, namespace, name)
    except ApiError:
        still_there = False
    if still_there or info.return_deleted_object:
        return obj
    return _deleted_status(info, name, obj)


def _deleted_status(info: ResourceInfo, name: str, obj: Obj) -> Obj:
    details: Obj = {"name": name}
    if info.group:
        details["group"] = info.group
    details["kind"] = info.name
    details["uid"] = obj["metadata"]["uid"]
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


async def delete_collection(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    body = await read_delete_options(request)
    grace, _ = _delete_options(body, request)
    namespace = ri.namespace if info.namespaced else None
    items, list_rv = await ctx.store.list(
        info.key,
        namespace,
        label_selector=request.query.get("labelSelector", ""),
        field_selector=request.query.get("fieldSelector", ""),
    )
    dry = dry_run(request, body)
    for item in items:
        meta = item["metadata"]
        try:
            await ctx.store.delete(
                info.key, meta.get("namespace"), meta["name"], grace_period_seconds=grace, dry_run=dry
            )
        except ApiError as e:
            if e.code != 404:
                raise
    # Store.DeleteCollection (k8s.io/apiserver pkg/registry/generic/registry/store.go) answers
    # the list it deleted from: the items as listed, before their deletion, at the list's RV
    return json_response(
        {
            "kind": f"{info.kind}List",
            "apiVersion": info.api_version,
            "metadata": {"resourceVersion": list_rv},
            "items": [list_item(item) for item in items],
        }
    )
