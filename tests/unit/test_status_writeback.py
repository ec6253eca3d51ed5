"""The decisions of a status write: mergePodStatus, the status patch body, canBeDeleted."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from vk_provider.status.cache import status_equal_by_kubelet
from vk_provider.status.writeback import (
    can_be_deleted,
    could_have_running_containers,
    delete_options,
    merge_pod_status,
    status_patch,
)
from vk_sandbox.api.patch import strategic_merge

NOW = datetime(2026, 11, 30, 1, 0, 0, tzinfo=UTC)


def cond(type_: str, status: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "status": status, "lastTransitionTime": "2026-11-30T00:00:00Z", **extra}


def cs(name: str, state: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "state": state, "lastState": {}, "ready": "running" in state, "restartCount": 0}


def local(phase: str = "Running", ready: str = "True", state: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "phase": phase,
        "conditions": [
            cond("PodReadyToStartContainers", "True"),
            cond("Initialized", "True"),
            cond("Ready", ready),
            cond("ContainersReady", ready),
            cond("PodScheduled", "True"),
        ],
        "podIP": "172.17.0.2",
        "podIPs": [{"ip": "172.17.0.2"}],
        "startTime": "2026-11-30T00:00:00Z",
        "containerStatuses": [cs("a", state if state is not None else {"running": {}})],
        "qosClass": "BestEffort",
    }


def api(phase: str = "Pending", *conditions: dict[str, Any]) -> dict[str, Any]:
    return {"phase": phase, "conditions": list(conditions), "qosClass": "BestEffort"}


def types(status: dict[str, Any]) -> list[str]:
    return [c["type"] for c in status["conditions"]]


def test_merge_keeps_foreign_conditions_and_takes_owned_ones() -> None:
    gate = cond("example.com/gate", "True")
    stale_ready = cond("Ready", "False", reason="Stale")
    merged = merge_pod_status(api("Running", gate, stale_ready), local(), True, NOW)
    assert types(merged)[0] == "example.com/gate"
    ready = next(c for c in merged["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert types(merged).count("Ready") == 1


def test_merge_withholds_terminal_phase_while_containers_could_run() -> None:
    api_status = api("Running")
    api_status["reason"] = ""
    done = local(phase="Succeeded", ready="False")
    done["reason"] = "Done"
    merged = merge_pod_status(api_status, done, True, NOW)
    assert merged["phase"] == "Running" and "reason" not in merged
    assert merge_pod_status(api_status, done, False, NOW)["phase"] == "Succeeded"


def test_merge_forces_readiness_false_once_terminal() -> None:
    merged = merge_pod_status(api("Running"), local(phase="Failed", ready="True"), False, NOW)
    for type_ in ("Ready", "ContainersReady"):
        c = next(c for c in merged["conditions"] if c["type"] == type_)
        assert (c["status"], c["reason"], c["lastTransitionTime"]) == (
            "False",
            "PodFailed",
            "2026-11-30T01:00:00Z",
        )
    succeeded = merge_pod_status(api("Running"), local(phase="Succeeded", ready="True"), False, NOW)
    assert {c["reason"] for c in succeeded["conditions"] if c["type"] in ("Ready", "ContainersReady")} == {
        "PodCompleted"
    }


def test_merge_disruption_target_only_when_transitioning_without_running_containers() -> None:
    mine = local(phase="Failed", ready="False")
    mine["conditions"].append(cond("DisruptionTarget", "True", reason="TerminationByKubelet"))
    with_running = merge_pod_status(api("Running"), mine, True, NOW)
    assert "DisruptionTarget" not in types(with_running)
    stopped = merge_pod_status(api("Running"), mine, False, NOW)
    target = next(c for c in stopped["conditions"] if c["type"] == "DisruptionTarget")
    assert target["lastTransitionTime"] == "2026-11-30T01:00:00Z"


def test_patch_is_none_when_nothing_changed() -> None:
    mine = local()
    api_status = copy.deepcopy(mine)
    api_status["conditions"].append(cond("example.com/gate", "True"))
    mine["conditions"].append(cond("example.com/gate", "True"))
    assert status_patch("uid-1", api_status, mine) is None


def test_patch_carries_uid_and_only_changed_fields() -> None:
    gate = cond("example.com/gate", "False")
    api_status = api("Pending", gate, cond("PodScheduled", "True"))
    api_status["nominatedNodeName"] = "someone-else"
    merged = merge_pod_status(api_status, local(), True, NOW)
    body = status_patch("uid-1", api_status, merged)
    assert body is not None
    assert body["metadata"] == {"uid": "uid-1"}
    patch = body["status"]
    assert "qosClass" not in patch and "nominatedNodeName" not in patch
    assert patch["phase"] == "Running"
    assert patch["containerStatuses"] == merged["containerStatuses"]  # atomic list: sent whole
    assert patch["$setElementOrder/conditions"] == [{"type": t} for t in types(merged)]
    sent = {c["type"] for c in patch["conditions"]}
    assert "example.com/gate" not in sent and "PodScheduled" not in sent
    assert {"Ready", "ContainersReady", "Initialized", "PodReadyToStartContainers"} <= sent


def test_patch_applied_by_strategic_merge_gives_merged_status() -> None:
    gate = cond("example.com/gate", "True")
    api_pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "uid": "uid-1"},
        "status": {
            **api("Running", gate, cond("Ready", "False"), cond("PodHasNetwork", "True")),
            "podIP": "172.17.0.9",
            "podIPs": [{"ip": "172.17.0.9"}],
            "reason": "Old",
        },
    }
    merged = merge_pod_status(api_pod["status"], local(), True, NOW)
    body = status_patch("uid-1", api_pod["status"], merged)
    assert body is not None
    assert body["status"]["reason"] is None
    result = strategic_merge(api_pod, body, kind="Pod", api_version="v1")
    assert result["status"]["podIPs"] == [{"ip": "172.17.0.2"}]
    assert "reason" not in result["status"]
    assert status_equal_by_kubelet(result["status"], merged)
    assert next(c for c in result["status"]["conditions"] if c["type"] == "example.com/gate") == gate
    assert status_patch("uid-1", result["status"], merged) is None


def test_could_have_running_containers() -> None:
    assert could_have_running_containers(local(), False)
    assert not could_have_running_containers(local(), True)
    stopped = local(phase="Succeeded", state={"terminated": {"exitCode": 0}})
    assert not could_have_running_containers(stopped, False)
    assert could_have_running_containers(local(phase="Running", state={"waiting": {}}), False)


def deleted_pod(phase: str = "Succeeded", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "uid": "uid-1", "deletionTimestamp": "2026-11-30T00:00:00Z", **meta},
        "status": {"phase": phase, "containerStatuses": [cs("a", {"terminated": {"exitCode": 0}})]},
    }


def test_can_be_deleted_needs_deletion_terminal_phase_and_finished() -> None:
    assert can_be_deleted(deleted_pod(), True)
    assert not can_be_deleted(deleted_pod(), False)
    assert not can_be_deleted(deleted_pod("Running"), True)
    alive = deleted_pod()
    del alive["metadata"]["deletionTimestamp"]
    assert not can_be_deleted(alive, True)
    mirror = deleted_pod(annotations={"kubernetes.io/config.mirror": "hash"})
    assert not can_be_deleted(mirror, True)
    still_running = deleted_pod()
    still_running["status"]["containerStatuses"] = [cs("a", {"running": {}})]
    assert not can_be_deleted(still_running, True)


def test_delete_options_grace_zero_with_uid_precondition() -> None:
    assert delete_options("uid-1") == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "uid-1"},
    }


def test_patch_clears_fields_a_condition_lost() -> None:
    api_pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "uid": "uid-1"},
        "status": {**local(), "conditions": [cond("Ready", "False", reason="NodeNotReady", message="gone")]},
    }
    body = status_patch("uid-1", api_pod["status"], local())
    assert body is not None
    ready = next(c for c in body["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] is None and ready["message"] is None
    result = strategic_merge(api_pod, body, kind="Pod", api_version="v1")
    shown = next(c for c in result["status"]["conditions"] if c["type"] == "Ready")
    assert shown == cond("Ready", "True")
