"""The rules of the resource.k8s.io/v1 kinds (dynamic resource allocation) a client sees.

What lives here: their versioned defaults (`pkg/apis/resource/v1/defaults.go` and
zz_generated.defaults.go, plus the non-pointer structs Go always writes), what their registry
strategies' PrepareForCreate and PrepareForUpdate do (`pkg/registry/resource/<kind>/strategy.go`:
generation, status reset, a taint's timeAdded) and their update validation's immutable fields
(`pkg/apis/resource/validation/validation.go`). api/defaults.py and the write handlers call in.
Must not: touch the store, build responses or raise (validation returns causes).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.api.validation.field import cause, invalid

Obj = dict[str, Any]
GROUP = "resource.k8s.io"
CLAIMS = f"resourceclaims.{GROUP}"
TEMPLATES = f"resourceclaimtemplates.{GROUP}"
TAINT_RULES = f"devicetaintrules.{GROUP}"
SLICES = f"resourceslices.{GROUP}"
CLASSES = f"deviceclasses.{GROUP}"
# PrepareForCreate sets Generation = 1 (deviceclass, devicetaintrule, resourceslice strategies);
# the claim and template strategies leave it unset, so it never moves.
_COUNTS_GENERATION = (CLASSES, TAINT_RULES, SLICES)
# PrepareForCreate resets the status (resourceclaim, devicetaintrule strategies).
_STATUS_RESET = (CLAIMS, TAINT_RULES)
IMMUTABLE = "field is immutable"


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _maps(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _now() -> str:
    """metav1.Now() truncated to the second, as the defaulting and the taint rule strategy do."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _struct(obj: Obj, key: str) -> Obj:
    """A non-pointer struct field: encoding/json writes it even when empty (omitempty never drops
    a struct), so a missing one reads back as {}."""
    value = obj.get(key)
    if not isinstance(value, dict):
        value = obj[key] = {}
    return value


def _default_tolerations(holder: Obj) -> None:
    for toleration in _maps(holder.get("tolerations")):
        toleration.setdefault("operator", "Equal")  # the DeviceToleration default


def _default_request(request: Obj) -> None:
    """SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest."""
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    _default_tolerations(request)


def _default_claim_spec(spec: Obj) -> None:
    """SetObjectDefaults_ResourceClaim's walk of spec.devices.requests."""
    for request in _maps(_struct(spec, "devices").get("requests")):
        if isinstance(request.get("exactly"), dict):
            _default_request(request["exactly"])
        for sub in _maps(request.get("firstAvailable")):
            _default_request(sub)


def _default_taint(taint: Any) -> None:
    """SetDefaults_DeviceTaint: timeAdded is now when unset."""
    if isinstance(taint, dict) and not taint.get("timeAdded"):
        taint["timeAdded"] = _now()


def apply_defaults(info: ResourceInfo, obj: Obj) -> None:
    """The versioned defaults of a decoded resource.k8s.io/v1 object (mutates obj)."""
    if info.key == CLAIMS:
        _default_claim_spec(_struct(obj, "spec"))
        allocation = _dict(obj.get("status")).get("allocation")
        if isinstance(allocation, dict):
            for result in _maps(_struct(allocation, "devices").get("results")):
                _default_tolerations(result)
    elif info.key == TEMPLATES:
        template = _struct(obj, "spec")
        _struct(template, "metadata")
        _default_claim_spec(_struct(template, "spec"))
    elif info.key == TAINT_RULES:
        _default_taint(_struct(obj, "spec").get("taint"))
    elif info.key == SLICES:
        for device in _maps(_struct(obj, "spec").get("devices")):
            for taint in _maps(device.get("taints")):
                _default_taint(taint)
    elif info.key == CLASSES:
        _struct(obj, "spec")


def prepare_for_create(info: ResourceInfo, obj: Obj) -> None:
    """The strategies' PrepareForCreate: generation 1 where counted, the status reset (mutates obj)."""
    if info.key in _COUNTS_GENERATION:
        obj.setdefault("metadata", {})["generation"] = 1
    if info.key in _STATUS_RESET:
        obj["status"] = {}


def prepare_for_update(info: ResourceInfo, obj: Obj, old: Obj) -> None:
    """deviceTaintRuleStrategy.PrepareForUpdate: a taint whose effect changes while its timeAdded
    stays gets a new timeAdded, now (mutates obj)."""
    if info.key != TAINT_RULES:
        return
    taint = _dict(_dict(obj.get("spec")).get("taint"))
    old_taint = _dict(_dict(old.get("spec")).get("taint"))
    moved = taint.get("effect") != old_taint.get("effect")
    if moved and taint.get("timeAdded") == old_taint.get("timeAdded"):
        taint["timeAdded"] = _now()


def _immutable(path: str, value: Any) -> dict[str, str]:
    """field.Invalid(path, value, "field is immutable") with a value field.Error prints as JSON."""
    shown = json.dumps(value, separators=(",", ":"))
    return cause("FieldValueInvalid", path, f"Invalid value: {shown}: {IMMUTABLE}")


def update_errors(info: ResourceInfo, old: Obj, new: Obj) -> list[dict[str, str]]:
    """The immutable fields of ValidateResourceClaimUpdate, ValidateResourceClaimTemplateUpdate and
    validateResourceSliceSpec, in their order."""
    if info.key == CLAIMS and new.get("spec") != old.get("spec"):
        # covered by declarative validation, whose error carries no value: printed as null
        return [_immutable("spec", None)]
    if info.key == TEMPLATES and new.get("spec") != old.get("spec"):
        # the value is the internal ResourceClaimTemplateSpec marshalled with Go's field names,
        # which the emulator does not have: the new spec's JSON stands in for it
        return [_immutable("spec", new.get("spec"))]
    if info.key != SLICES:
        return []
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    out = []
    pool, old_pool = _dict(spec.get("pool")), _dict(old_spec.get("pool"))
    for path, value, old_value in (
        ("spec.pool.name", pool.get("name", ""), old_pool.get("name", "")),
        ("spec.driver", spec.get("driver", ""), old_spec.get("driver", "")),
    ):
        if value != old_value:
            out.append(invalid(path, value, IMMUTABLE))
    node, old_node = spec.get("nodeName"), old_spec.get("nodeName")
    if node != old_node:  # a *string, printed as JSON: null when unset
        out.append(_immutable("spec.nodeName", node))
    return out
