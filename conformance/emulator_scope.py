"""Which upstream `[sig-api-machinery] [Conformance]` specs fall within the emulator's documented
scope (docs/sandbox.md, docs/fidelity.md: CRUD, watch, patch, lists and pagination, Tables,
discovery, field validation of built-in types, namespaces), and why the others do not.

What lives here: `API_MACHINERY_IN_SCOPE`, the `--ginkgo.focus` of the 17 in-scope specs of
v1.37.2 (`python -m conformance.run --control-plane emulator --focus "$(python -m
conformance.emulator_scope)"`), `OUT_OF_SCOPE_SPECS`, the 5 specs of the same files that need
APIs outside the scope, and `OUT_OF_SCOPE`, the reason for each other spec file. A spec
of the selection that passes on the real plane and not on the emulator is an emulator bug.
Must not: run anything.
"""

from __future__ import annotations

API_MACHINERY_IN_SCOPE = (
    r"\[sig-api-machinery\] ("
    r"Servers with support for API chunking|"
    r"Servers with support for Table transformation|"
    r"Watchers|OrderedNamespaceDeletion|Namespaces|"
    r"Discovery should validate PreferredVersion|"
    r"server version"
    r").*\[Conformance\]"
)

# Specs of files otherwise in scope that exercise APIs outside it (run in the comparison of
# docs/fidelity.md all the same, with these reasons).
OUT_OF_SCOPE_SPECS = {
    "[sig-api-machinery] FieldValidation should detect unknown and duplicate fields of a typed object": (
        "creates and applies apps/v1 Deployments (workload APIs; server-side apply)"
    ),
    "[sig-api-machinery] FieldValidation should detect unknown metadata fields of a typed object": (
        "creates apps/v1 Deployments (workload APIs)"
    ),
    "[sig-api-machinery] Discovery should locate the groupVersion and a resource within each APIGroup": (
        "expects admissionregistration, apiextensions, apiregistration and apps among the groups "
        "(webhooks, CRDs, aggregation, workload APIs)"
    ),
    "[sig-api-machinery] AggregatedDiscovery should support aggregated discovery interface [": (
        "expects admissionregistration.k8s.io's webhook configurations in discovery (webhooks)"
    ),
    "[sig-api-machinery] AggregatedDiscovery should support raw aggregated discovery endpoint": (
        "expects admissionregistration.k8s.io's webhook configurations in discovery (webhooks)"
    ),
}

# The 78 [sig-api-machinery] [Conformance] specs of v1.37.2 in other files, by file (test/e2e/apimachinery/).
OUT_OF_SCOPE = {
    "webhook.go": "admission webhooks (22 specs)",
    "resource_quota.go": "the ResourceQuota admission plugin and quota controller (12)",
    "crd_publish_openapi.go": "CustomResourceDefinitions (9)",
    "garbage_collector.go": "the garbage collector and workload controllers (7)",
    "field_validation.go": "the 5 of its 7 specs that use CustomResourceDefinitions",
    "custom_resource_definition.go": "CustomResourceDefinitions (5)",
    "mutatingadmissionpolicy.go": "admission policies (4)",
    "validatingadmissionpolicy.go": "admission policies (4)",
    "aggregated_discovery.go": "the 2 of its 4 specs that use CustomResourceDefinitions",
    "flowcontrol.go": "API Priority and Fairness, whose flowcontrol.apiserver.k8s.io API is not served (2)",
    "crd_conversion_webhook.go": "CustomResourceDefinitions and conversion webhooks (2)",
    "aggregator.go": "API aggregation (1)",
    "storage_version_migration.go": "storage version migration (1)",
    "crd_watch.go": "CustomResourceDefinitions (1)",
    "crd_selectable_fields.go": "CustomResourceDefinitions (1)",
}

if __name__ == "__main__":
    print(API_MACHINERY_IN_SCOPE)
