"""OpenAPI documents: what kubectl reads for apply's validation check, apply patches and explain."""

from __future__ import annotations

import json
from typing import Any

from vk_sandbox.api.openapi import openapi_v2, openapi_v3_document, openapi_v3_index


def test_index_lists_group_versions_with_hashes() -> None:
    index = openapi_v3_index()
    assert set(index["paths"]) >= {"api/v1", "apis/coordination.k8s.io/v1", "apis/certificates.k8s.io/v1"}
    url = index["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=") and len(url.split("=")[1]) == 128
    assert openapi_v3_document("/api/v1") is openapi_v3_document("api/v1")
    assert openapi_v3_document("apis/apps/v1") is None


def _patch_ops(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        item["patch"]
        for item in doc["paths"].values()
        if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"]["kind"] == kind
    ]


def test_patch_operation_supports_field_validation_for_every_kind() -> None:
    # query_param_verifier_v3: a PATCH op with the GVK and a query parameter "fieldValidation".
    for gv, kinds in {
        "api/v1": ["Pod", "Node", "Namespace", "ConfigMap", "Secret", "Event", "Service", "ServiceAccount"],
        "apis/coordination.k8s.io/v1": ["Lease"],
    }.items():
        doc = openapi_v3_document(gv)
        assert doc is not None
        for kind in kinds:
            ops = _patch_ops(doc, kind)
            assert ops, kind
            names = {(p["name"], p["in"]) for p in ops[0]["parameters"]}
            assert ("fieldValidation", "query") in names
            assert "application/strategic-merge-patch+json" in ops[0]["requestBody"]["content"]


def test_pod_path_shapes() -> None:
    doc = openapi_v3_document("api/v1")
    assert doc is not None
    item = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert {"get", "put", "patch", "delete"} <= set(item)
    assert item["patch"]["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert "/api/v1/namespaces/{namespace}/pods/{name}/status" in doc["paths"]
    assert "/api/v1/nodes/{name}" in doc["paths"]
    lease_doc = openapi_v3_document("apis/coordination.k8s.io/v1")
    assert lease_doc is not None
    assert "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}" in lease_doc["paths"]


def test_components_are_openapi_schemas_with_extensions() -> None:
    doc = openapi_v3_document("api/v1")
    assert doc is not None
    schemas = doc["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["spec"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    assert pod["properties"]["kind"]["type"] == "string"
    conditions = schemas["io.k8s.api.core.v1.PodStatus"]["properties"]["conditions"]
    assert conditions["x-kubernetes-patch-merge-key"] == "type"
    assert conditions["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.PodCondition"}
    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["format"] == "int-or-string"
    assert "type" not in int_or_string  # kubectl explain then names the type <IntOrString>
    assert [o["type"] for o in int_or_string["oneOf"]] == ["string", "integer"]
    assert "type" not in schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    # Every reference resolves inside the document.
    text = json.dumps(doc)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}:
        assert ref in schemas, ref
    assert "$defs" not in text
    assert '"null"' not in text


def test_v2_document() -> None:
    doc = openapi_v2()
    assert doc["swagger"] == "2.0"
    pod = doc["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["properties"]["spec"] == {
        "$ref": "#/definitions/io.k8s.api.core.v1.PodSpec",
        "description": pod["properties"]["spec"]["description"],
    }
    assert doc["definitions"]["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert any(p["name"] == "fieldValidation" for p in patch["parameters"])
    doc["definitions"].clear()
    assert openapi_v2()["definitions"], "callers get a copy; the cached document stays intact"
