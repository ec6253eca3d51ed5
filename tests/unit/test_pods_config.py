"""PodConfig merges sources by UID and classifies changes like the kubelet's config layer."""

from __future__ import annotations

import copy
from typing import Any

from tests.support import manifests
from vk_provider.pods.config import PodConfig, PodUpdate, UpdateKind


def pod(uid: str, **meta: Any) -> dict[str, Any]:
    made = manifests.pod(uid, [], namespace="d", uid=uid)
    made["metadata"].update(meta)
    return made


def test_classification_flow() -> None:
    seen: list[PodUpdate] = []
    cfg = PodConfig(seen.append)
    a = pod("a")
    cfg.upsert("api", a)
    cfg.upsert("api", copy.deepcopy(a))  # no change
    b = copy.deepcopy(a)
    b["status"] = {"phase": "Running"}
    cfg.upsert("api", b)
    c = copy.deepcopy(b)
    c["metadata"]["labels"] = {"x": "y"}
    cfg.upsert("api", c)
    d = copy.deepcopy(c)
    d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    cfg.upsert("api", d)
    cfg.remove("api", "a")
    assert [u.kind for u in seen] == [
        UpdateKind.ADD,
        UpdateKind.RECONCILE,
        UpdateKind.UPDATE,
        UpdateKind.DELETE,
        UpdateKind.REMOVE,
    ]
    assert all(u.source == "api" for u in seen)
    assert cfg.get("a") is None


def test_set_pods_diffs_per_source() -> None:
    seen: list[PodUpdate] = []
    cfg = PodConfig(seen.append)
    cfg.upsert("file", pod("s"))
    assert not cfg.synced("api")
    cfg.set_pods("api", [pod("a"), pod("b")])
    assert cfg.synced("api")
    cfg.set_pods("api", [pod("b")])
    assert [(u.kind, u.pod["metadata"]["uid"]) for u in seen] == [
        (UpdateKind.ADD, "s"),
        (UpdateKind.ADD, "a"),
        (UpdateKind.ADD, "b"),
        (UpdateKind.REMOVE, "a"),
    ]
    assert cfg.source_of("s") == "file"
    assert sorted(p["metadata"]["uid"] for p in cfg.pods()) == ["b", "s"]
    cfg.remove("api", "s")  # not api's pod
    assert cfg.get("s") is not None
