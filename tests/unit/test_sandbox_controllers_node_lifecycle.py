"""Node lifecycle rules: conditions after silence, taints per Ready status, eviction deadlines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from vk_sandbox.controllers.node_lifecycle import eviction_due, unknown_conditions, wanted_taints

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "effect": "NoExecute",
    "timeAdded": "2026-01-01T11:59:00Z",
}


def _pod(*tolerations: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"tolerations": list(tolerations)}}


def test_unknown_conditions_keep_heartbeat_and_fill_missing() -> None:
    node = {"status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t0"}]}}
    conditions = unknown_conditions(node, "t1")
    assert conditions is not None
    ready = conditions[0]
    assert (ready["status"], ready["reason"], ready["lastHeartbeatTime"]) == (
        "Unknown",
        "NodeStatusUnknown",
        "t0",
    )
    missing = {c["type"]: c for c in conditions[1:]}
    assert set(missing) == {"MemoryPressure", "DiskPressure", "PIDPressure"}
    assert all(c["reason"] == "NodeStatusNeverUpdated" for c in missing.values())
    node["status"]["conditions"] = conditions
    assert unknown_conditions(node, "t2") is None


def test_wanted_taints_follow_ready() -> None:
    other = {"key": "x", "effect": "NoSchedule"}
    unknown = {
        "spec": {"taints": [other]},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    }
    taints = wanted_taints(unknown, "now")
    assert taints is not None
    assert [(t["key"], t["effect"]) for t in taints] == [
        ("x", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    ]
    unknown["spec"]["taints"] = taints
    assert wanted_taints(unknown, "later") is None
    unknown["status"]["conditions"][0]["status"] = "True"
    assert wanted_taints(unknown, "later") == [other]


def test_eviction_deadlines() -> None:
    assert eviction_due(_pod(), [UNREACHABLE], NOW)
    tolerate = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    assert not eviction_due(_pod(tolerate), [UNREACHABLE], NOW)
    assert eviction_due(_pod({**tolerate, "tolerationSeconds": 30}), [UNREACHABLE], NOW)
    assert not eviction_due(_pod({**tolerate, "tolerationSeconds": 300}), [UNREACHABLE], NOW)
    assert eviction_due(
        _pod({**tolerate, "tolerationSeconds": 300}), [UNREACHABLE], NOW + timedelta(minutes=5)
    )
    no_schedule = {**UNREACHABLE, "effect": "NoSchedule"}
    assert not eviction_due(_pod(), [no_schedule], NOW)


def test_full_disruption_drops_the_noexecute_taints_and_keeps_noschedule() -> None:
    unknown = {
        "spec": {
            "taints": [
                {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "t"},
                {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "t"},
            ]
        },
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    }
    assert wanted_taints(unknown, "later", no_execute=False) == [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "t"}
    ]
