"""Fidelity scenarios of resource.k8s.io/v1 (dynamic resource allocation): the five kinds that
upstream's `[sig-node] [DRA] CRUD Tests ... [Conformance]` specs exercise (test/e2e/dra/dra.go),
through create, get, update, status, patch, list (JSON and Table) and deletecollection.

Must not: run anything (harness.py does) or look at what the real control plane's controllers add
later (the device taint eviction controller's status condition on DeviceTaintRules).
"""

from __future__ import annotations

from tests.support.fidelity.builders import create, edited, labels, listing, set_label, set_path
from tests.support.fidelity.harness import (
    CLAIMTEMPLATES,
    DEVICECLASSES,
    DEVICETAINTRULES,
    MARK,
    MERGE,
    RESOURCECLAIMS,
    RESOURCESLICES,
    SMP,
    TABLE,
    Obj,
    Request,
    Scenario,
    at,
)

_API = "resource.k8s.io/v1"
_REQUESTS = {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "dra.example.com"}}]}


def _object(kind: str, name: str, **fields: object) -> Obj:
    return {"apiVersion": _API, "kind": kind, "metadata": {"name": name, "labels": labels()}, **fields}


DEVICE_CLASS = _object("DeviceClass", "fid-dc", spec={"selectors": [{"cel": {"expression": "false"}}]})
# A status on create is dropped (PrepareForCreate); the empty device selector selects no device.
TAINT_RULE = _object(
    "DeviceTaintRule",
    "fid-dtr",
    spec={"taint": {"key": "testing", "effect": "None"}},
    status={
        "conditions": [
            {
                "type": "X",
                "status": "True",
                "reason": "R",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    },
)
CLAIM = _object("ResourceClaim", "fid-rc", spec={"devices": _REQUESTS}, status={"allocation": {}})
CLAIM_TEMPLATE = _object("ResourceClaimTemplate", "fid-rct", spec={"spec": {"devices": _REQUESTS}})
SLICE = _object(
    "ResourceSlice",
    "fid-rs",
    spec={
        "driver": "dra.example.com",
        "pool": {"name": "cluster", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "no-such-node",
    },
)
_TESTING = {
    "type": "Testing",
    "status": "True",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
    "reason": "E2E_test_running",
    "message": "This condition can be ignored.",
}


def _allocated_relabelled(obj: Obj) -> None:
    """A status write that also changes a label (ResetObjectMetaForStatus keeps the stored ones)."""
    set_path("status.allocation", {})(obj)
    set_label("status-write", "yes")(obj)


DRA_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "deviceclass-crud",
        "deviceclasses: generation 1 on create, 2 after a PUT of the selector, unmoved by a label patch; "
        "a Table; DELETE answers the object",
        (
            create(DEVICECLASSES, DEVICE_CLASS, fields=("spec",)),
            Request(
                "PUT",
                at(DEVICECLASSES, "fid-dc"),
                edited(0, set_path("spec.selectors[0].cel.expression", "1 == 0")),
                fields=("spec",),
            ),
            Request("PATCH", at(DEVICECLASSES, "fid-dc"), {"metadata": {"labels": {"x": "1"}}}, SMP),
            Request("GET", at(DEVICECLASSES, "fid-dc"), fields=("spec",)),
            listing(DEVICECLASSES, accept=TABLE, labelSelector=MARK),
            Request("DELETE", at(DEVICECLASSES, "fid-dc")),
        ),
    ),
    Scenario(
        "devicetaintrule-crud",
        "devicetaintrules: status dropped on create, timeAdded defaulted, a PUT without resourceVersion "
        "is 422, an effect change moves the generation, a status patch keeps the labels, DELETE a Status",
        (
            create(DEVICETAINTRULES, TAINT_RULE, fields=("spec", "status")),
            Request("PUT", at(DEVICETAINTRULES, "fid-dtr"), edited(0, set_label("x", "1"), rv="")),
            Request(
                "PATCH", at(DEVICETAINTRULES, "fid-dtr"), {"spec": {"taint": {"effect": "NoExecute"}}}, SMP
            ),
            Request(
                "PATCH",
                at(DEVICETAINTRULES, "fid-dtr", "status"),
                {"metadata": {"labels": {"x": "1"}}, "status": {"conditions": [_TESTING]}},
                MERGE,
                fields=("spec.taint.effect", "status"),
            ),
            Request("DELETE", at(DEVICETAINTRULES, "fid-dtr")),
        ),
    ),
    Scenario(
        "resourceclaim-crud",
        "resourceclaims: defaulted requests, status dropped on create, the spec immutable (422), a "
        "status PUT (labels kept, allocation written), a Table, deletecollection",
        (
            create(RESOURCECLAIMS, CLAIM, fields=("spec", "status")),
            Request(
                "PATCH",
                at(RESOURCECLAIMS, "fid-rc"),
                {"spec": {"devices": {"requests": [{"name": "req-1", "exactly": {"deviceClassName": "x"}}]}}},
                MERGE,
            ),
            Request(
                "PUT",
                at(RESOURCECLAIMS, "fid-rc", "status"),
                edited(0, _allocated_relabelled, rv=""),
                fields=("spec", "status"),
            ),
            Request(
                "PATCH",
                at(RESOURCECLAIMS, "fid-rc"),
                {"metadata": {"labels": {"x": "1"}}, "status": {"allocation": None}},
                MERGE,
                fields=("status",),
            ),
            listing(RESOURCECLAIMS, accept=TABLE, labelSelector=MARK),
            Request("DELETE", RESOURCECLAIMS, query={"labelSelector": MARK}),
            listing(RESOURCECLAIMS, labelSelector=MARK),
        ),
    ),
    Scenario(
        "resourceclaimtemplate-crud",
        "resourceclaimtemplates: defaulted, spec.metadata always written, no generation; a label "
        "update; a Table; deletecollection",
        (
            create(CLAIMTEMPLATES, CLAIM_TEMPLATE, fields=("spec",)),
            Request("PUT", at(CLAIMTEMPLATES, "fid-rct"), edited(0, set_label("x", "1")), fields=("spec",)),
            listing(CLAIMTEMPLATES, accept=TABLE, labelSelector=MARK),
            Request("DELETE", CLAIMTEMPLATES, query={"labelSelector": MARK}),
            listing(CLAIMTEMPLATES, labelSelector=MARK),
        ),
    ),
    Scenario(
        "resourceclaimtemplate-immutable",
        "resourceclaimtemplates: a patch of the spec is 422, the spec is immutable",
        (
            create(CLAIMTEMPLATES, CLAIM_TEMPLATE),
            Request(
                "PATCH", at(CLAIMTEMPLATES, "fid-rct"), {"spec": {"spec": {"devices": {"config": []}}}}, MERGE
            ),
            Request(
                "PATCH",
                at(CLAIMTEMPLATES, "fid-rct"),
                {
                    "spec": {
                        "spec": {
                            "devices": {"requests": [{"name": "req-1", "exactly": {"deviceClassName": "x"}}]}
                        }
                    }
                },
                MERGE,
            ),
        ),
    ),
    Scenario(
        "resourceslice-crud",
        "resourceslices: generation 1, 2 after a device patch; driver and nodeName immutable (422); "
        "field selectors spec.nodeName and spec.driver; a Table; DELETE answers the object",
        (
            create(RESOURCESLICES, SLICE, fields=("spec",)),
            Request(
                "PATCH",
                at(RESOURCESLICES, "fid-rs"),
                {"spec": {"devices": [{"name": "device-0"}]}},
                SMP,
                fields=("spec",),
            ),
            Request(
                "PATCH",
                at(RESOURCESLICES, "fid-rs"),
                {"spec": {"driver": "other.example.com", "nodeName": "other-node"}},
                MERGE,
            ),
            listing(RESOURCESLICES, fieldSelector="spec.nodeName=no-such-node,spec.driver=dra.example.com"),
            listing(RESOURCESLICES, fieldSelector="spec.pool.name=elsewhere"),
            listing(RESOURCESLICES, accept=TABLE, labelSelector=MARK),
            Request("DELETE", at(RESOURCESLICES, "fid-rs")),
        ),
    ),
)
