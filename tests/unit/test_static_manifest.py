"""Parsing and defaulting one static pod manifest (vk_provider.static.manifest)."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from tests.support import manifests
from vk_common.objects import CONFIG_SOURCE_ANNOTATION
from vk_provider.static.manifest import (
    CONFIG_HASH_ANNOTATION,
    CONFIG_SEEN_ANNOTATION,
    MAX_MANIFEST_BYTES,
    ManifestError,
    parse_manifest,
)

NOW = datetime(2026, 11, 30, 1, 2, 3, 450000, tzinfo=UTC)
NODE = "Docker-1"
PATH = "/etc/vk/manifests/web.yaml"

WEB = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: httpd
    image: vk-test/busybox:1
    command: [httpd, -f, -p, "8080"]
"""


def _pod(containers: list[Any] | None = None, **spec: Any) -> dict[str, Any]:
    """The manifest `p` without a namespace (a static pod file may leave it out) with these spec
    fields; one busybox container `c` unless told."""
    box = {"name": "c", "image": "vk-test/busybox:1"}
    return manifests.pod("p", containers if containers is not None else [box], namespace=None, **spec)


def _parse(text: str | bytes, path: str = PATH, node: str = NODE) -> dict[str, Any]:
    data = text.encode() if isinstance(text, str) else text
    return parse_manifest(data, path, node, NOW)


def _error(doc: dict[str, Any] | str) -> str:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    with pytest.raises(ManifestError) as info:
        _parse(text)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_defaults_are_those_of_the_kubelet_file_source() -> None:
    pod = _parse(WEB)
    meta = pod["metadata"]
    assert meta["name"] == "web-docker-1", "name-<lower-cased node>"
    assert meta["namespace"] == "default"
    assert len(meta["uid"]) == 32 and int(meta["uid"], 16) >= 0
    assert meta["annotations"] == {
        CONFIG_HASH_ANNOTATION: meta["uid"],
        CONFIG_SOURCE_ANNOTATION: "file",
        CONFIG_SEEN_ANNOTATION: "2026-11-30T01:02:03.45Z",
    }
    assert meta["labels"] == {"app": "web"}
    assert pod["spec"]["nodeName"] == NODE
    assert pod["spec"]["tolerations"] == [{"operator": "Exists", "effect": "NoExecute"}]
    assert pod["status"] == {"phase": "Pending"}
    assert pod["spec"]["containers"][0]["command"] == ["httpd", "-f", "-p", "8080"]


def test_json_gives_the_same_pod_as_yaml() -> None:
    as_json = json.dumps(yaml.safe_load(WEB), indent=2)
    assert _parse(as_json) == _parse(WEB)


def test_uid_depends_on_content_node_and_path_not_formatting() -> None:
    uid = _parse(WEB)["metadata"]["uid"]
    reformatted = "# a comment\n" + json.dumps(yaml.safe_load(WEB))
    assert _parse(reformatted)["metadata"]["uid"] == uid
    assert _parse(WEB, path="/other/web.yaml")["metadata"]["uid"] != uid
    assert _parse(WEB, node="docker-2")["metadata"]["uid"] != uid
    assert _parse(WEB.replace("8080", "8081"))["metadata"]["uid"] != uid


def test_namespace_annotations_and_tolerations_are_kept() -> None:
    doc = _pod(
        tolerations=[{"operator": "Exists", "effect": "NoExecute"}, {"key": "k", "operator": "Exists"}]
    )
    doc["metadata"].update(namespace="kube-system", annotations={"team": "a"})
    pod = _parse(json.dumps(doc))
    assert pod["metadata"]["namespace"] == "kube-system"
    assert pod["metadata"]["annotations"]["team"] == "a"
    assert pod["spec"]["tolerations"] == doc["spec"]["tolerations"], "the NoExecute toleration is not doubled"


def test_an_explicit_uid_is_kept() -> None:
    doc = _pod()
    doc["metadata"]["uid"] = "my-uid"
    pod = _parse(json.dumps(doc))
    assert pod["metadata"]["uid"] == "my-uid"
    assert pod["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] == "my-uid"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "apiVersion: v1\nkind: Pod\n  bad: indent\n",
            "invalid YAML/JSON at line 3, column 6: mapping values are not allowed here",
        ),
        ('{"kind": "Pod", ', "invalid YAML/JSON at line 1"),
        ("", "the file is empty"),
        ("- a\n- b\n", "expected a Pod object, got a list"),
        (WEB + "---\n" + WEB, "the file holds 2 documents; expected exactly one Pod per file"),
        (
            WEB.replace("kind: Pod", "kind: Deployment"),
            "kind 'Deployment': a static pod manifest must be kind 'Pod'",
        ),
        (WEB.replace("kind: Pod\n", ""), "no kind: a static pod manifest must be kind 'Pod'"),
        (
            WEB.replace("apiVersion: v1", "apiVersion: apps/v1"),
            "apiVersion 'apps/v1': a Pod must have apiVersion",
        ),
        (WEB.replace("  name: web\n", ""), "metadata.name is missing"),
    ],
)
def test_malformed_files(text: str, expected: str) -> None:
    assert _error(text).startswith(expected)


# Found by tests/unit/fuzz/test_static_manifest_fuzz.py: a character YAML refuses gave a two-line
# message; a null list entry (which the schema admits), deep nesting and values YAML's constructors
# refuse raised AttributeError, RecursionError or ValueError out of the parser (the source's scan
# catches ManifestError only).
@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            "apiVersion: v1\nkind: Pod\x1f\n",
            "invalid YAML/JSON at line 2, column 10: unacceptable character #x001f",
        ),
        (_pod(containers=[None]), "invalid Pod: spec.containers[0].name: '' is not a DNS-1123 label"),
        (_pod(initContainers=[None]), "invalid Pod: spec.initContainers[0].name: '' is not a DNS-1123 label"),
        (_pod(volumes=[None]), "invalid Pod: spec.volumes[0].name: '' is not a DNS-1123 label"),
        ("[" * 5000, "invalid YAML/JSON: nested too deeply"),
        ("a: " + "{a: [" * 2500, "invalid YAML/JSON: nested too deeply"),
        ("apiVersion: v1\nx: 2001-02-30\n", "invalid YAML/JSON: day is out of range for month"),
        ("x: " + "9" * 5000 + "\n", "invalid YAML/JSON: Exceeds the limit (4300 digits) for integer string"),
        *(
            (f"x: {tagged}\n", "invalid YAML/JSON: a tagged value that does not fit its tag")
            for tagged in ("!!timestamp 2001-02-30-", "!!float", "!!int", "!!bool x")
        ),
    ],
    ids=[
        "control-character",
        "null-container",
        "null-init-container",
        "null-volume",
        "5000-brackets",
        "5000-nested-under-a-key",
        "bad-date",
        "5000-digit-int",
        "bad-timestamp-tag",
        "empty-float-tag",
        "empty-int-tag",
        "bad-bool-tag",
    ],
)
def test_hostile_files_are_one_line_manifest_errors(doc: dict[str, Any] | str, expected: str) -> None:
    assert _error(doc).startswith(expected)


def _laughs(levels: int, uses: int = 9) -> str:
    """A pod under a "billion laughs" bomb: each anchor a list of `uses` aliases of the one before."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * uses) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * uses) + "]" for i in range(1, levels)]
    return WEB + "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_is_expanded() -> None:
    # Upstream go-yaml v2 (the kubelet's decoder) refuses it: "document contains excessive
    # aliasing". Expanded, these 6 lines are 9**6 values (kept small so that a regression costs
    # this test a second, not the machine its memory); before the check the JSON round trip built
    # them all, and 9 such lines (387 million values) took the provider's memory with them.
    assert _error(_laughs(6)) == "invalid YAML/JSON: document contains excessive aliasing"
    # Anchors used a few times are fine: the error is the schema's, about the extra keys.
    assert _error(_laughs(2, uses=3)).startswith("invalid Pod: (top level): Additional properties")
    spec = "spec:\n  containers:\n  - &c {name: a, image: vk-test/busybox:1}\n  - {<<: *c, name: b}\n"
    pod = _parse(WEB.partition("spec:")[0] + spec)
    assert [c["name"] for c in pod["spec"]["containers"]] == ["a", "b"]


def test_non_utf8_and_oversized_files() -> None:
    with pytest.raises(ManifestError, match="not UTF-8"):
        _parse(b"kind: Pod\n\xff\n")
    with pytest.raises(ManifestError, match="larger than"):
        _parse(b"#" * (MAX_MANIFEST_BYTES + 1))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"serviceAccountName": "default"},
            "static pods may not reference serviceaccounts (spec.serviceAccountName",
        ),
        (
            {"imagePullSecrets": [{"name": "reg"}]},
            "static pods may not reference secrets (spec.imagePullSecrets[0]",
        ),
        (
            {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
            "static pods may not reference secrets (spec.volumes[0].secret: 's')",
        ),
        (
            {"volumes": [{"name": "v", "configMap": {"name": "cm"}}]},
            "static pods may not reference configmaps (spec.volumes[0].configMap: 'cm')",
        ),
        (
            {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]},
            "static pods may not reference persistentvolumeclaims (spec.volumes[0].persistentVolumeClaim)",
        ),
        (
            {"volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]},
            "static pods may not reference serviceaccounts (spec.volumes[0].projected.sources[0].serviceAcc",
        ),
        (
            {"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s"}}]}}]},
            "static pods may not reference secrets (spec.volumes[0].projected.sources[0].secret",
        ),
        (
            {"volumes": [{"name": "v", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "s"}}}]},
            "static pods may not reference secrets (spec.volumes[0].csi.nodePublishSecretRef",
        ),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "i",
                        "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                    }
                ]
            },
            "static pods may not reference secrets (spec.containers[0].env[0].valueFrom.secretKeyRef: 's')",
        ),
        (
            {"containers": [{"name": "c", "image": "i", "envFrom": [{"configMapRef": {"name": "cm"}}]}]},
            "static pods may not reference configmaps (spec.containers[0].envFrom[0].configMapRef: 'cm')",
        ),
        (
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "g"}]},
            "static pods may not reference resourceclaims",
        ),
    ],
)
def test_references_to_api_objects_are_refused(spec: dict[str, Any], expected: str) -> None:
    assert _error(_pod(**spec)).startswith(expected)


def test_inline_volumes_and_literal_env_are_allowed() -> None:
    doc = _pod(
        volumes=[
            {"name": "scratch", "emptyDir": {}},
            {"name": "host", "hostPath": {"path": "/tmp"}},
            {
                "name": "info",
                "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]},
            },
        ],
        containers=[
            {
                "name": "c",
                "image": "i",
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                ],
            }
        ],
    )
    assert _parse(json.dumps(doc))["spec"]["volumes"][0]["name"] == "scratch"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"containers": [{"name": "c", "image": "i", "bogus": 1}]},
            "invalid Pod: spec.containers[0]: Additional properties are not allowed ('bogus' was unexpected)",
        ),
        (
            {"containers": [{"name": "c", "image": 3}]},
            "invalid Pod: spec.containers[0].image: 3 is not of type",
        ),
        ({"restartPolicy": 7}, "invalid Pod: spec.restartPolicy: 7 is not of type"),
        ({"containers": []}, "invalid Pod: spec.containers: at least one container is required"),
        (
            {"containers": [{"name": "C_1", "image": "i"}]},
            "invalid Pod: spec.containers[0].name: 'C_1' is not",
        ),
        ({"containers": [{"name": "c"}]}, "invalid Pod: spec.containers[0].image: an image is required"),
        (
            {"containers": [{"name": "c", "image": "i"}], "initContainers": [{"name": "c", "image": "i"}]},
            "invalid Pod: spec.containers[0].name: duplicate container name 'c'",
        ),
    ],
)
def test_schema_and_semantic_validation(spec: dict[str, Any], expected: str) -> None:
    assert _error(_pod(**spec)).startswith(expected)


def test_bad_metadata() -> None:
    doc = _pod()
    doc["metadata"]["name"] = "Web_1"
    assert _error(doc).startswith("invalid Pod: metadata.name: 'Web_1'")
    doc = _pod()
    doc["metadata"]["labels"] = {"a": 1}
    assert _error(doc).startswith("invalid Pod: metadata.labels.a: 1 is not of type")
    doc = _pod()
    doc["metadata"]["namespace"] = "Kube"
    assert _error(doc).startswith("invalid Pod: metadata.namespace: 'Kube' is not a DNS-1123 label")
    doc = _pod()
    doc["spec"]["containers"] = "c"
    assert _error(doc).startswith("invalid Pod: spec.containers:")
