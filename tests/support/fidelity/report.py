"""What the fidelity comparison led to and its report: `FIXES` and `render_report` (docs/fidelity.md).

Must not: run scenarios (harness.py does).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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
)


# Hand-written (tests/integration/test_emulator_concurrency.py measures it; counts from its run).
CONCURRENCY_SECTION: tuple[str, ...] = (
    "## Concurrency and real clients",
    "",
    "`tests/integration/test_emulator_concurrency.py` (real tier; its own emulator and real control "
    "plane, as above) sends the bursts of `tests/support/fidelity/bursts.py` to both servers, every "
    "request of a burst at once, with a watch open from before the burst to a sentinel ConfigMap "
    "created after it. Compared: the answers counted by code and reason, the failures' messages, the"
    " watch's events (and that it saw exactly the burst's writes, resourceVersions strictly "
    "increasing) and the final objects normalised as above. Where the real server's counts depend on"
    " how the requests interleave (deletes racing updates), only what holds on every real run is "
    "compared, and each such invariant is checked on the real server's outcome too. Measured (real /"
    " emulator, identical unless shown):",
    "",
    "| Burst | Answers | Watch |",
    "|---|---|---|",
    "| 100 unconditional merge patches of one ConfigMap, each adding a key | 100 x 200; 100 keys | "
    "100 MODIFIED |",
    "| 100 unconditional JSON patches (`add /data/kN`) | 100 x 200; 101 keys | 100 MODIFIED |",
    "| 100 unconditional strategic merge patches | 100 x 200; 100 keys | 100 MODIFIED |",
    "| 100 PUTs without resourceVersion | 100 x 200; the last one's data | 100 MODIFIED |",
    "| 100 PUTs at the same resourceVersion | 1 x 200, 99 x 409 Conflict | 1 MODIFIED |",
    "| 100 merge patches naming the same resourceVersion | 1 x 200, 99 x 409 Conflict | 1 MODIFIED |",
    "| 50 creates with generateName | 50 x 201, 50 distinct `gen-xxxxx` names | 50 ADDED |",
    "| 10 ConfigMaps, each: 4 merge patches, 4 PUTs at its created version, then 2 DELETEs | real: "
    "patches 37 x 200 / 3 x 404, PUTs 2 x 200 / 38 x 409; emulator: patches 18 x 200 / 22 x 404, "
    "PUTs 30 x 409 / 10 x 404; both: DELETE 10 x 200 / 10 x 404, nothing left | real 39, emulator 18"
    " MODIFIED; 10 DELETED |",
    "",
    "The race's counts differ from run to run on the real server itself (its requests run in "
    "parallel goroutines; the emulator's one event loop takes them in arrival order, so a stale PUT "
    "never gets ahead of every patch there); what both keep: only 200, 404 and 409, the same "
    "messages, one DELETE per object succeeds, at most one stale PUT, every object gone, the watch "
    "saw each stored version once.",
    "",
    "The same module runs one sequence with the official `kubernetes` client (its concurrent calls "
    "in threads), with `kubernetes_asyncio` (as tasks) and with the pinned kubectl (`apply` created "
    "/ unchanged / configured, `patch` and `patch (no change)`, `label` with and without "
    "`--overwrite` and `x-`, `replace` at a stale resourceVersion (the Conflict) and without one, "
    "`wait --for=jsonpath=...`, `--for=delete` and `--for=create`, `get -w --output-watch-events` "
    "through 11 patches and a delete held by a finalizer until `wait --for=delete` watches) against "
    "both servers, and compares what they printed line for line, ages, uids and generated suffixes "
    "normalised (`tests/support/fidelity/clients.py`): 12 lines for each Python client (30 "
    "concurrent patches all 200, 30 replaces at one version 1 x 200 and 29 x 409, a watch of 10 "
    "MODIFIED and 1 DELETED...) and 47 for kubectl, all equal. The bursts found one emulator bug: a "
    "ConfigMap created with `data: {}` kept the empty map, which the real server drops "
    "(`omitempty`), so a JSON patch `add /data/k` succeeded where the real server answers 422 "
    "(fixed, `configmap-empty-maps` below).",
    "",
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
    """docs/fidelity.md: the counts, one row per scenario, every documented difference."""
    fixed = fixed_scenarios()
    matching = [n for n in SCENARIO_NAMES if n in results and not results[n].differences]
    documented = [n for n in SCENARIO_NAMES if n in known]
    lines = [
        "# Emulator fidelity: the emulator against the real kube-apiserver",
        "",
        "<!-- Generated by tests/integration/test_emulator_fidelity.py; do not edit by hand. Regenerate with",
        "     FIDELITY_REPORT=docs/fidelity.md .venv/bin/python -m pytest -q --control-plane=real \\",
        "       tests/integration/test_emulator_fidelity.py -->",
        "",
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
        "## Not reachable by a scenario",
        "",
        "- **A watch from a resourceVersion the server no longer has.** The real server answers it with "
        "HTTP 200 and one `ERROR` event carrying a 410 `Expired` Status (`too old resource version: N "
        "(M)`, k8s.io/apiserver pkg/storage/cacher/watch_cache_history.go), but only once its watch "
        "cache has dropped events: the cache of a fresh server reaches back to resourceVersion 1 "
        "(`watch-from-rv-1`), grows while events are younger than 75 s, and `--control-plane real` "
        "starts etcd empty every time. Checked by hand against a real server that had run for a while, "
        'and an emulator restarted on its state: both sent `{"type":"ERROR","object":{"kind":"Status",'
        '"apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (354)",'
        '"reason":"Expired","code":410}}` (the emulator with its own M) and closed the stream.',
        "",
        "## Deliberate differences",
        "",
        "The emulator refuses what a web page could send it (vk_sandbox/api/request_guard.py, "
        "docs/sandbox.md); no scenario sends such a request, since both servers must get the same bytes.",
        "",
        "- **A body without Content-Type** is answered 415 `UnsupportedMediaType` before it is read, as one "
        "of a type neither server decodes is on both (`create-unsupported-type`). The real server decodes a "
        "POST or PUT body without Content-Type as JSON (its create and update routes consume `*/*`); a "
        "PATCH without one is a 415 on both. A browser's cross-site form post carries no JSON type, so it "
        "never reaches a handler. The `proxy` subresources pass any body on, as the real server's do.",
        "- **A request without credentials** is 401 `Unauthorized`: the emulator has no anonymous user, "
        "where the real server (`--anonymous-auth=true`) answers `system:anonymous` 403 `Forbidden`. "
        "GET of /healthz, /livez, /readyz and /version is open on both (`system:public-info-viewer`).",
        "- **An `Origin` that is not local, or a `Host` that is not a loopback name or the address the "
        "emulator listens on**, is 403 `Forbidden`; the real server ignores `Host`, and `Origin` except for "
        "the CORS headers of `--cors-allowed-origins`.",
        "",
        *CONCURRENCY_SECTION,
        "## Emulator fixes made for this comparison",
        "",
    ]
    for fix in FIXES:
        names = ", ".join(f"`{n}`" for n in fix.scenarios)
        lines += [f"- {fix.what} ({fix.files}). Scenarios: {names}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def _kube_version() -> str:
    from vk_common.kube_version import KUBE_VERSION

    return str(KUBE_VERSION)
