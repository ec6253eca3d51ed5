"""Node conditions: kubelet reasons/messages, transition and heartbeat times, change detection."""

from __future__ import annotations

from vk_provider.node.conditions import desired_conditions, ready_status, stamp_conditions, status_differs


def by_type(conditions: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {c["type"]: c for c in conditions}


def test_ready_and_pressure_conditions_use_the_kubelet_reasons() -> None:
    conditions = by_type(desired_conditions(None))
    assert set(conditions) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}
    assert conditions["Ready"] == {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
    }
    assert conditions["MemoryPressure"]["reason"] == "KubeletHasSufficientMemory"
    assert conditions["DiskPressure"]["reason"] == "KubeletHasNoDiskPressure"
    assert conditions["PIDPressure"]["reason"] == "KubeletHasSufficientPID"
    assert conditions["NetworkUnavailable"]["status"] == "False"


def test_not_ready_carries_the_runtime_error() -> None:
    ready = by_type(desired_conditions("Docker engine at unix:///x.sock does not answer: refused"))["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert ready["message"] == "Docker engine at unix:///x.sock does not answer: refused"


def test_transition_time_moves_only_on_flips_heartbeat_always() -> None:
    first = stamp_conditions([], desired_conditions(None), "2026-01-01T00:00:00Z")
    assert all(c["lastTransitionTime"] == c["lastHeartbeatTime"] == "2026-01-01T00:00:00Z" for c in first)
    second = by_type(stamp_conditions(first, desired_conditions("down"), "2026-01-01T00:01:00Z"))
    assert second["Ready"]["lastTransitionTime"] == "2026-01-01T00:01:00Z"
    assert second["MemoryPressure"]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert all(c["lastHeartbeatTime"] == "2026-01-01T00:01:00Z" for c in second.values())
    assert ready_status(list(second.values())) == "False"
    assert ready_status([]) == ""


def status(conditions: list[dict[str, str]], memory: str = "16Gi") -> dict[str, object]:
    return {
        "capacity": {"cpu": "8", "memory": memory, "pods": "110"},
        "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"kubeletVersion": "v1", "machineID": ""},
    }


def test_status_differs_ignores_heartbeats_extra_keys_and_quantity_spelling() -> None:
    api = status(stamp_conditions([], desired_conditions(None), "2026-01-01T00:00:00Z"), memory="16777216Ki")
    api["capacity"]["hugepages-2Mi"] = "0"  # type: ignore[index]
    api["nodeInfo"] = {"kubeletVersion": "v1"}  # empty strings dropped by the server
    assert not status_differs(api, status(desired_conditions(None)))
    assert status_differs(api, status(desired_conditions("down")))
    assert status_differs(api, status(desired_conditions(None), memory="8Gi"))
    moved = status(desired_conditions(None))
    moved["addresses"] = [{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "address": "n"}]
    assert status_differs(api, moved)
    assert status_differs({}, status(desired_conditions(None)))
