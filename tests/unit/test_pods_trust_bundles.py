"""clusterTrustBundle projections (pods.volumes): the query a source makes, and the file the
kubelet writes from the bundles it found (projected.go, clustertrustbundle_manager.go)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from vk_provider.pods.volumes import (
    Fetched,
    TrustBundleQuery,
    VolumeSetupError,
    trust_anchors,
    trust_bundle_queries,
    volume_files,
)


def pem(der: bytes, kind: str = "CERTIFICATE") -> str:
    body = base64.b64encode(der).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {kind}-----\n{lines}\n-----END {kind}-----\n"


def bundle(*pems: str) -> dict[str, Any]:
    return {"spec": {"trustBundle": "".join(pems)}}


def projected(*sources: dict[str, Any]) -> dict[str, Any]:
    return {"name": "trust", "projected": {"sources": [{"clusterTrustBundle": s} for s in sources]}}


POD: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {}}
A, B = pem(b"\x30\x03first-anchor" * 8), pem(b"\x30\x03second-anchor" * 8)


def test_a_source_queries_by_name_or_by_signer_with_its_selector_as_the_api_writes_it() -> None:
    selector = {
        "matchLabels": {"team": "a", "env": "prod"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["web", "db"]},
            {"key": "old", "operator": "NotIn", "values": ["x"]},
            {"key": "owned", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    }
    volume = projected(
        {"name": "ca", "path": "a"},
        {"signerName": "example.com/s", "labelSelector": selector, "path": "b"},
        {"signerName": "example.com/s", "labelSelector": {}, "path": "c"},
        {"signerName": "example.com/s", "path": "d"},
        {"path": "e"},
    )
    assert trust_bundle_queries(volume) == [
        TrustBundleQuery("ca"),
        TrustBundleQuery("", "example.com/s", "env=prod,team=a,tier in (db,web),old notin (x),owned,!legacy"),
        TrustBundleQuery("", "example.com/s", ""),  # empty: every bundle of the signer
        TrustBundleQuery("", "example.com/s", None),  # none: no bundle (LabelSelectorAsSelector(nil))
    ]


def test_the_anchors_are_each_certificate_once_whatever_bundle_or_block_type_holds_them() -> None:
    text = trust_anchors([bundle(A, B), bundle(B), bundle(pem(b"\x30\x03first-anchor" * 8, "TRUSTED CERT"))])
    assert text.count(b"-----BEGIN CERTIFICATE-----") == 2
    assert set(text.decode().split("-----END CERTIFICATE-----\n")) == {
        A.split("-----END")[0],
        B.split("-----END")[0],
        "",
    }
    assert trust_anchors([]) == b""


def test_the_file_has_the_anchors_at_the_path_with_the_default_mode() -> None:
    fetched = Fetched({}, {}, {}, trust_bundles={TrustBundleQuery("ca"): [bundle(A)]})
    (file,) = volume_files(POD, projected({"name": "ca", "path": "ca.pem"}), fetched, {})
    assert (file.path, file.data, file.mode) == ("ca.pem", A.encode(), 0o644)


def test_with_an_fs_group_the_file_is_0600_plus_the_groups_read_bit() -> None:
    pod = {**POD, "spec": {"securityContext": {"fsGroup": 2000}}}
    fetched = Fetched({}, {}, {}, trust_bundles={TrustBundleQuery("ca"): [bundle(A)]})
    (file,) = volume_files(pod, projected({"name": "ca", "path": "ca.pem"}), fetched, {}, ownership=True)
    assert (file.mode, file.gid) == (0o640, 2000)


@pytest.mark.parametrize(
    ("source", "error"),
    [
        (
            {"name": "gone", "path": "a"},
            'while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "gone" not found',
        ),
        (
            {"signerName": "example.com/s", "labelSelector": {}, "path": "a"},
            "combination of signerName and labelSelector matched zero ClusterTrustBundles",
        ),
        ({"path": "a"}, "ClusterTrustBundle projection requires either name or signerName to be set"),
    ],
)
def test_nothing_selected_is_the_kubelets_error_unless_optional(source: dict[str, Any], error: str) -> None:
    fetched = Fetched({}, {}, {}, trust_bundles={q: [] for q in trust_bundle_queries(projected(source))})
    with pytest.raises(VolumeSetupError, match="^" + error.replace("(", r"\(").replace(")", r"\)") + "$"):
        volume_files(POD, projected(source), fetched, {})
    if "name" in source or "signerName" in source:
        (file,) = volume_files(POD, projected({**source, "optional": True}), fetched, {})
        assert file.data == b""


def test_a_failed_lookup_is_the_mount_error() -> None:
    query = TrustBundleQuery("ca")
    fetched = Fetched({}, {}, {}, trust_bundle_errors={query: "while getting ClusterTrustBundles: forbidden"})
    with pytest.raises(VolumeSetupError, match="forbidden"):
        volume_files(POD, projected({"name": "ca", "path": "a"}), fetched, {})
