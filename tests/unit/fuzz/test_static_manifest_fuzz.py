"""Fuzzing static pod manifests (vk_provider.static.manifest.parse_manifest).

What is fuzzed: a manifest file's bytes: a valid pod (with volumes, env, resources) with its
fields mutated (as YAML and as JSON), the YAML text of a valid manifest mutated with YAML
syntax, the bytes of one mutated (invalid UTF-8, cuts), and arbitrary bytes. The property:
each gives the defaulted static pod or a `ManifestError` with a one-line message (what the
source reports as a bad file), never another exception; a pod that parses has the identity
the provider builds host paths from checked (a plain uid, a DNS-1123 namespace and name).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzzing import budget, mutated_bytes, mutated_json, mutated_text
from vk_provider.static.manifest import ManifestError, parse_manifest

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
NODE = "fuzz-node"
PATH = "/etc/vk/manifests/web.yaml"

VALID: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "name": "httpd",
                "image": "vk-test/busybox:1",
                "command": ["httpd", "-f"],
                "env": [{"name": "A", "value": "1"}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}},
                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch", "subPath": "x"}],
            }
        ],
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
        "restartPolicy": "Always",
    },
}
VALID_YAML = yaml.safe_dump(VALID, sort_keys=False)
YAML_FRAGMENTS = (
    "\n", ": ", "- ", "? [a]\n: 1\n", "{", "[", "&a ", "*a", "!!binary ", "!!timestamp 2001-02-30",
    "!!python/name:os.system", "---\n", "\t", "~", ".inf", "1e1000000", "[" * 3000, "{a: " * 300,
    "uid: /\n", "uid: ../..\n", "namespace: ../x\n", "\ufeff",
)  # fmt: skip
_SAFE_UID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")


def _parses_or_manifest_error(data: bytes) -> None:
    try:
        pod = parse_manifest(data, PATH, NODE, NOW)
    except ManifestError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    meta = pod["metadata"]
    assert _SAFE_UID.fullmatch(meta["uid"]), meta["uid"]
    assert "/" not in meta["name"] and "/" not in meta["namespace"] and ".." not in meta["namespace"]
    assert pod["spec"]["nodeName"] == NODE


@budget(200)
@given(doc=mutated_json(VALID), as_json=st.booleans())
def test_mutated_pods_parse_or_raise_manifest_error(doc: Any, as_json: bool) -> None:
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc, allow_unicode=True)
    _parses_or_manifest_error(text.encode("utf-8", "surrogatepass"))


@budget(300)
@given(text=mutated_text(VALID_YAML, YAML_FRAGMENTS, max_mutations=6))
def test_mutated_yaml_text_parses_or_raises_manifest_error(text: str) -> None:
    _parses_or_manifest_error(text.encode("utf-8", "surrogatepass"))


@budget(300)
@given(data=mutated_bytes(VALID_YAML.encode()) | st.binary(max_size=200))
def test_mutated_and_arbitrary_bytes_parse_or_raise_manifest_error(data: bytes) -> None:
    _parses_or_manifest_error(data)
