"""What the fidelity comparison led to and its report: `FIXES` and `render_report` (docs/fidelity.md).

Must not: run scenarios (harness.py does).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fidelity.harness import Result
from tests.support.fidelity.scenarios import SCENARIO_NAMES, SCENARIOS


@dataclass(frozen=True)
class Fix:
    """A change to the emulator this comparison led to, and the scenarios that differed before it."""

    what: str
    files: str
    scenarios: tuple[str, ...]


_GENERATION_ONLY = [
    "watch-from-rv-1",
    "pod-create",
    "pod-create-bound",
    "pod-get",
    "pod-create-duplicate",
    "generate-name",
    "update-stale-rv",
    "update-fresh-rv",
    "update-without-rv",
    "update-noop",
    "update-name-mismatch",
    "update-image",
    "patch-strategic-containers",
    "patch-strategic-metadata",
    "patch-merge",
    "patch-json",
    "patch-rv-precondition",
    "delete-unbound",
    "delete-precondition-uid",
    "delete-precondition-rv",
    "delete-grace-unbound",
    "delete-grace-bound",
    "delete-finalizer",
    "status-put-ignores-spec",
    "main-ignores-status",
    "pod-binding",
    "watch-from-rv",
    "watch-without-rv",
    "watch-selector-transitions",
    "watch-field-selector",
    "list-label-selectors",
    "list-field-selectors",
    "get-future-rv",
    "field-validation-warn",
    "field-validation-ignore",
    "field-validation-default",
    "dry-run-create",
    "kubectl-apply-change",
    "kubectl-delete",
    "table-pods",
    "table-pod-get",
]

FIXES: tuple[Fix, ...] = (
    Fix(
        "Pods start at `metadata.generation: 1` (podStrategy.PrepareForCreate); the store already bumped it "
        "on spec changes and graceful deletes. Before, every pod answer lacked it.",
        "api/defaults.py",
        (*_GENERATION_ONLY, "pod-create-with-rv"),
    ),
    Fix(
        "Errors that are no API status answer 500 without a reason (responsewriters.ErrorToAPIStatus): "
        "`resourceVersion should not be set on objects to be created`; an unparsable resourceVersion is "
        "the versioner's `resourceVersion: Invalid value: ...strconv.ParseUint...` text, 500 on GET and "
        "WATCH, 400 `invalid resource version: ...` on LIST (was 400 everywhere).",
        "api/errors.py, api/handlers/verbs.py, storage/store.py",
        ("pod-create-with-rv", "bad-resource-version"),
    ),
    Fix(
        "Errors built by NewGenericServerResponse carry `details: {}` (JSON patch failures); a PATCH "
        "Content-Type the route does not consume is go-restful's `415: Unsupported Media Type`.",
        "api/patch.py, api/handlers/verbs.py",
        ("patch-json-test-fails", "patch-json-bad-path", "patch-unsupported-type"),
    ),
    Fix(
        "A deletecollection answers the items as listed, before deletion, at the list's resourceVersion "
        "(Store.DeleteCollection), not the deleted objects.",
        "api/handlers/verbs.py",
        ("delete-collection",),
    ),
    Fix(
        "Pod and node conditions carry `lastProbeTime`/`lastTransitionTime`/`lastHeartbeatTime: null` "
        "when unset (metav1.Time is a struct, omitempty never drops it); node status gets `allocatable` "
        "from `capacity`, `daemonEndpoints.kubeletEndpoint.Port: 0` and the empty `nodeInfo` strings.",
        "api/defaults.py",
        ("status-patch-conditions", "node-status-patch"),
    ),
    Fix(
        "Lists at an older resourceVersion (`resourceVersionMatch=Exact`) are served from the event log "
        "as etcd serves old revisions (was 410 Expired); `limit`/`continue` paginate with the real "
        "continue token and `remainingItemCount` (was: limit ignored); a Status's empty "
        "`details.name` is left out (omitempty).",
        "storage/store.py, api/handlers/verbs.py, api/errors.py",
        ("list-resource-version", "list-limit-continue"),
    ),
    Fix(
        'Duplicated JSON fields are strict decoding errors (`duplicate field "metadata.name"`): 400 '
        "with fieldValidation=Strict, a warning with Warn.",
        "api/decoding.py",
        ("field-validation-strict-duplicate",),
    ),
    Fix(
        "Bad `fieldValidation` / `dryRun` values are 422 Invalid `CreateOptions.meta.k8s.io` (Update-, "
        "Patch-, DeleteOptions) with causes, validated before the body (were 400 BadRequest).",
        "api/decoding.py, api/errors.py",
        ("field-validation-bad-value", "dry-run-bad-value"),
    ),
    Fix(
        "A dry-run DELETE answers the object as the deletion would leave it (deletionTimestamp, "
        "generation), or the Success Status for kinds that do not return it.",
        "storage/store.py, api/handlers/verbs.py",
        ("dry-run-delete",),
    ),
    Fix(
        "ConfigMap and Secret validation: data keys (IsConfigMapKey), `immutable: true`, a Secret's "
        "immutable type and the keys its type requires; Lease `leaseDurationSeconds` > 0.",
        "api/validation/kinds.py, api/handlers/verbs.py",
        ("configmap-immutable", "configmap-invalid-key", "secret-type-immutable", "lease-invalid"),
    ),
    Fix(
        "Bodies in `application/yaml` are decoded; the 415 for other types names what the real server "
        "decodes (`application/json, application/yaml, application/vnd.kubernetes.protobuf`).",
        "api/decoding.py",
        ("create-unsupported-type", "create-yaml"),
    ),
    Fix(
        "The `pods/resize` subresource (was 404): podResizeStrategy keeps everything but the "
        "containers' resources and resizePolicy and bumps the generation; ValidatePodResize's "
        "refusals (removed requests or limits, QoS class change, resources other than cpu and memory, "
        "static pods); the PodResizeValidator admission's 403 above the node's allocatable.",
        "api/validation/resize.py, api/handlers/verbs.py, api/resources.py, storage/store.py",
        ("resize-subresource", "resize-remove-limits", "resize-qos-change", "resize-other-resource"),
    ),
    Fix(
        "An empty map or list in an `omitempty` field (a ConfigMap's `data: {}`, `labels: {}`, "
        "`finalizers: []`) is not stored, as encoding/json leaves it out of what the real server "
        "writes; a JSON patch adding under the missing `/data` is then a 422 on both. Found by the "
        "concurrency bursts (`patch-json-100` of a ConfigMap created with `data: {}`).",
        "api/validation/schema.py",
        ("configmap-empty-maps",),
    ),
    Fix(
        "Protobuf bodies of every kind the emulator serves, not only the few kubectl's typed "
        "creates send: client-go clients (the upstream e2e suite, controllers) encode Pods, "
        "DeleteOptions, Bindings and the rest in protobuf and do not fall back to JSON on a 415. "
        "The field table is generated from the k8s.io/api Go types (tools/protoschema), so a body "
        "reads as the JSON a Go client would send: `,inline` members, pointers to zero values "
        "kept, `omitempty` zeros left out.",
        "api/protobuf.py, api/protobuf_schema.json",
        ("create-protobuf", "delete-protobuf-options"),
    ),
    Fix(
        "Probe and lifecycle handler ports are validated (ValidatePortNumOrName: 1-65535, or a valid "
        "port name), and lifecycle hooks must name exactly one handler (validateLifecycle); both were "
        "accepted. Found by the protobuf scenario, whose first pod had a tcpSocket port of -1.",
        "api/validation/kinds.py",
        ("invalid-probe-ports",),
    ),
    Fix(
        "Pod templates (`podtemplates`, was 404): served, defaulted as a pod spec (without the "
        "pod-only enableServiceLinks), generation 1 and counted on template changes, their own "
        "Table columns. Found by upstream's PodTemplates conformance specs.",
        "api/resources.py, api/defaults.py, api/tables.py, storage/registry_rules.py",
        ("podtemplate-crud",),
    ),
    Fix(
        "The RuntimeClass admission plugin's overhead and scheduling: the class's overhead.podFixed "
        "becomes the pod's overhead (a different one, or one without a class, is 403), its "
        "nodeSelector and tolerations join the pod's (a conflicting key is 403). Found by upstream's "
        "RuntimeClass Overhead conformance spec.",
        "api/runtime_class_admission.py",
        ("runtime-class-admission",),
    ),
    Fix(
        "A pod's sysctl names are validated (validateSysctls: the sysctl name pattern, at most 253 "
        "characters, no duplicates); they were accepted. Found by upstream's reject invalid sysctls "
        "conformance spec.",
        "api/validation/sysctls.py",
        ("invalid-sysctls",),
    ),
    Fix(
        "A review (SelfSubjectAccessReview and the other create-only kinds) asked for only as a "
        "Table is 406 NotAcceptable, as the real server's negotiation refuses a conversion the "
        "endpoint has no TableConvertor for; the emulator answered the review. Found by upstream's "
        "Table transformation conformance spec.",
        "api/responses.py, api/handlers/dispatch.py",
        ("table-review-406",),
    ),
    Fix(
        "A pod's hostnameOverride is validated (validatePodHostName: not with setHostnameAsFQDN or "
        "hostNetwork, at most 64 bytes, a DNS-1123 subdomain); it was accepted. Found by upstream's "
        "Override hostname of Pod specs.",
        "api/validation/hostnames.py",
        ("invalid-hostname-override",),
    ),
    Fix(
        "resource.k8s.io/v1 (was 404): deviceclasses, devicetaintrules (with status), resourceclaims "
        "(with status), resourceclaimtemplates and resourceslices served with the real discovery entries; "
        "their defaults (allocationMode/count, a taint's timeAdded), PrepareForCreate (generation 1 for "
        "classes, taint rules and slices; status dropped), a taint rule's timeAdded on an effect change, "
        "ResetObjectMetaForStatus on status writes, immutable claim/template specs and slice "
        "driver/pool/node (422), a taint rule's PUT without resourceVersion (422), slice field "
        "selectors, their Table columns, protobuf. Found by upstream's DRA CRUD conformance specs.",
        "api/resources.py, api/dynamic_resources.py, api/defaults.py, api/tables_dra.py, "
        "storage/registry_rules.py, storage/selectors.py",
        (
            "deviceclass-crud",
            "devicetaintrule-crud",
            "resourceclaim-crud",
            "resourceclaimtemplate-crud",
            "resourceslice-crud",
        ),
    ),
)


def fixed_scenarios() -> set[str]:
    return {name for fix in FIXES for name in fix.scenarios}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(value: Any, skip: int = 0, limit: int = 160) -> str:
    """A value as a table cell: from character `skip` on, at most `limit` characters."""
    text = json.dumps(value) if not isinstance(value, str) else value
    text = text.replace("\n", "\\n")
    if skip:
        text = "…" + text[skip:]
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "`` " + _cell(text) + " ``"


def _divergence(a: Any, b: Any) -> int:
    """Where two long strings start to differ, less some context (0 for anything else)."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return 0
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    return max(0, common - 40) if common > 80 else 0


def render_report(results: dict[str, Result], known: dict[str, str]) -> str:
    """docs/fidelity.md's generated section: the counts, one row per scenario, every documented
    difference, the fixes; `write_report` puts it between BEGIN and END."""
    fixed = fixed_scenarios()
    matching = [n for n in SCENARIO_NAMES if n in results and not results[n].differences]
    documented = [n for n in SCENARIO_NAMES if n in known]
    lines = [
        f"Each scenario below is a short sequence of HTTP requests (or kubectl commands) sent, byte for byte "
        f"the same, to the emulator (`vk-provider sandbox`) and to the real control plane of the same "
        f"release (`vk-provider sandbox --control-plane real`, kube-apiserver {_kube_version()}). What a "
        f"client sees is compared: the status code, the `Status` body (status, message, reason, code, "
        f"details with name, group, kind and causes), `Warning` headers, the object's metadata and the "
        f"fields that matter for the scenario, watch events in order. uids, timestamps, resourceVersion "
        f"values, managedFields, random name suffixes and continue tokens' resourceVersions are "
        f"normalised away; so is the TTL controller's `node.alpha.kubernetes.io/ttl` annotation, which the "
        f"real controller manager adds a moment after a node is created (the emulator has no TTL "
        f"controller). Messages are compared exactly. The scenarios (data) are in "
        f"`tests/support/fidelity/scenarios_*.py`, the comparison in `tests/support/fidelity/harness.py`.",
        "",
        f"- scenarios: **{len(SCENARIO_NAMES)}** (run for this report: {len(results)})",
        f"- matching: **{len(matching)}**",
        f"- matching only since an emulator fix made for this comparison: **{len(fixed & set(matching))}**",
        f"- documented differences (`KNOWN_DIFFERENCES`): **{len(documented)}**",
        "",
        "| Scenario | What it checks | Result |",
        "|---|---|---|",
    ]
    for s in SCENARIOS:
        if s.name not in results:
            outcome = "not run"
        elif s.name in known:
            outcome = "documented difference"
        elif results[s.name].differences:
            outcome = "**differs**"
        else:
            outcome = "matches (fixed)" if s.name in fixed else "matches"
        lines.append(f"| `{s.name}` | {_cell(s.about)} | {outcome} |")
    lines += ["", "## Documented differences", ""]
    for name in documented:
        lines += [f"### `{name}`", "", known[name], ""]
        result = results.get(name)
        if result is not None and result.differences:
            lines += ["| Step, field | Real | Emulator |", "|---|---|---|"]
            for d in result.differences:
                skip = _divergence(d.real, d.emulator)
                lines.append(
                    f"| {d.step + 1} `{d.key}` | {_code(d.real, skip)} | {_code(d.emulator, skip)} |"
                )
            lines.append("")
    lines += [
        "## Emulator fixes made for this comparison",
        "",
    ]
    for fix in FIXES:
        names = ", ".join(f"`{n}`" for n in fix.scenarios)
        lines += [f"- {fix.what} ({fix.files}). Scenarios: {names}.", ""]
    return "\n".join(lines).rstrip() + "\n"


BEGIN = (
    "<!-- fidelity-report:begin (written by tests/integration/test_emulator_fidelity.py with\n"
    "     FIDELITY_REPORT=docs/fidelity.md .venv/bin/python -m pytest -q --control-plane=real \\\n"
    "       tests/integration/test_emulator_fidelity.py; do not edit) -->"
)
END = "<!-- fidelity-report:end -->"


def write_report(page: Path, section: str) -> None:
    """`section` between BEGIN and END of `page`; the hand-written text around them stays."""
    text = page.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{page} has no {BEGIN!r} ... {END!r} section to write")
    head, rest = text.split(BEGIN, 1)
    page.write_text(f"{head}{BEGIN}\n\n{section}\n{END}{rest.split(END, 1)[1]}")


def _kube_version() -> str:
    from vk_common.kube_version import KUBE_VERSION

    return str(KUBE_VERSION)
