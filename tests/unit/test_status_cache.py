"""The status cache rules (updateStatusInternal, TerminatePod, SetContainerReadiness) as pure functions."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support import manifests
from vk_provider.status.cache import (
    VersionedStatus,
    normalize_status,
    status_equal_by_kubelet,
    terminated_status,
    update_status,
    with_container_flag,
)

T0 = datetime(2026, 11, 30, 1, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(seconds=30)


def make_pod(policy: str = "Always", init: list[str] | None = None, **meta: Any) -> dict[str, Any]:
    made = manifests.pod(
        "p",
        [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}],
        uid="uid-1",
        restartPolicy=policy,
        initContainers=[{"name": n, "image": "x"} for n in init or []],
    )
    made["metadata"].update(meta)
    return {**made, "status": {"phase": "Pending"}}


def cond(type_: str, status: str, reason: str = "", when: str = "2026-11-30T00:00:00Z") -> dict[str, Any]:
    out = {"type": type_, "status": status, "lastTransitionTime": when}
    if reason:
        out["reason"] = reason
    return out


def running(name: str, ready: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "state": {"running": {"startedAt": "2026-11-30T00:59:00Z"}},
        "lastState": {},
        "ready": ready,
        "restartCount": 0,
        "image": "x",
        "imageID": "sha256:1",
        "containerID": f"docker://{name}",
        "started": True,
    }


def terminated(name: str, code: int = 0) -> dict[str, Any]:
    out = running(name, ready=False)
    out["state"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}
    out["started"] = False
    return out


def status(phase: str = "Running", ready: str = "True", a: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "phase": phase,
        "conditions": [
            cond("Initialized", "True"),
            cond("Ready", ready),
            cond("ContainersReady", ready),
            cond("PodScheduled", "True"),
        ],
        "podIP": "172.17.0.2",
        "containerStatuses": [a or running("a"), running("b")],
        "qosClass": "BestEffort",
    }


def accept(
    cached: VersionedStatus | None, pod: dict[str, Any], new: dict[str, Any], **kw: Any
) -> VersionedStatus:
    args: dict[str, Any] = {"force": False, "finished": False, "now": T1}
    args.update(kw)
    entry, why = update_status(cached, pod, new, **args)
    assert entry is not None, why
    return entry


def test_versions_count_accepted_changes_only() -> None:
    pod = make_pod()
    first = accept(None, pod, status())
    assert first.version == 1
    same, why = update_status(first, pod, status(), force=False, finished=False, now=T1)
    assert same is None and why == "unchanged"
    second = accept(first, pod, status(ready="False"))
    assert second.version == 2
    forced = accept(second, pod, status(ready="False"), force=True)
    assert forced.version == 3


def test_dedup_ignores_foreign_conditions_and_times() -> None:
    pod = make_pod()
    first = accept(None, pod, status())
    other = status()
    other["conditions"].append(cond("example.com/gate", "True"))
    for c in other["conditions"]:
        c["lastTransitionTime"] = "2030-01-01T00:00:00Z"
    assert update_status(first, pod, other, force=False, finished=False, now=T1)[0] is None
    changed = status()
    changed["conditions"][1]["message"] = "different"
    assert update_status(first, pod, changed, force=False, finished=False, now=T1)[0] is not None


def test_start_time_fixed_once_set() -> None:
    pod = make_pod()
    first = accept(None, pod, status(), now=T0)
    assert first.status["startTime"] == "2026-11-30T01:00:00Z"
    later = status(ready="False")
    later["startTime"] = "2026-11-30T05:00:00Z"
    assert accept(first, pod, later).status["startTime"] == "2026-11-30T01:00:00Z"


def test_start_time_from_api_status_kept() -> None:
    pod = make_pod()
    pod["status"]["startTime"] = "2026-11-29T00:00:00Z"
    assert accept(None, pod, status()).status["startTime"] == "2026-11-29T00:00:00Z"


def test_last_transition_time_kept_while_status_same() -> None:
    pod = make_pod()
    first = accept(None, pod, status(ready="False"), now=T0)
    ready_time = next(c for c in first.status["conditions"] if c["type"] == "Ready")["lastTransitionTime"]
    second = accept(first, pod, status(ready="True"), now=T1)
    conds = {c["type"]: c for c in second.status["conditions"]}
    assert conds["Ready"]["lastTransitionTime"] == "2026-11-30T01:00:30Z" != ready_time
    assert conds["Initialized"]["lastTransitionTime"] == first.status["conditions"][0]["lastTransitionTime"]


def test_terminated_container_may_not_run_again_unless_policy_allows() -> None:
    done = status(a=terminated("a", 0))
    again = status()
    for policy, allowed in (("Never", False), ("OnFailure", False), ("Always", True)):
        pod = make_pod(policy)
        entry = accept(None, pod, done)
        result, why = update_status(entry, pod, again, force=False, finished=False, now=T1)
        assert (result is not None) == allowed, policy
        if not allowed:
            assert why == "terminated container a attempted illegal transition to non-terminated state"
    pod = make_pod("OnFailure")
    entry = accept(None, pod, status(a=terminated("a", 1)))
    assert update_status(entry, pod, again, force=False, finished=False, now=T1)[0] is not None


def test_terminated_init_container_guard() -> None:
    pod = make_pod("Never", init=["setup"])
    with_init = status()
    with_init["initContainerStatuses"] = [terminated("setup", 0)]
    entry = accept(None, pod, with_init)
    back = copy.deepcopy(with_init)
    back["initContainerStatuses"] = [running("setup")]
    assert update_status(entry, pod, back, force=False, finished=False, now=T1)[0] is None


def test_terminal_phase_is_sticky() -> None:
    pod = make_pod("Never")
    done = status(phase="Failed", ready="False", a=terminated("a", 1))
    done["reason"] = "DeadlineExceeded"
    entry = accept(None, pod, done)
    entry2 = accept(entry, pod, status(phase="Running", ready="False", a=terminated("a", 1)), force=True)
    assert entry2.status["phase"] == "Failed"
    assert entry2.status["reason"] == "DeadlineExceeded"


def test_finished_is_sticky() -> None:
    pod = make_pod()
    entry = accept(None, pod, status(), finished=True)
    assert accept(entry, pod, status(ready="False")).pod_is_finished is True


def test_normalize_truncates_times_and_messages_and_sorts() -> None:
    long = "x" * 20000
    st: dict[str, Any] = {
        "startTime": "2026-11-30T01:00:00.123456Z",
        "conditions": [cond("Ready", "True", when="2026-11-30T01:00:00.9+00:00")],
        "containerStatuses": [
            {
                "name": "b",
                "state": {"terminated": {"message": long, "finishedAt": "2026-11-30T01:00:01.5Z"}},
                "lastState": {"terminated": {"message": long}},
            },
            {"name": "a", "state": {"running": {"startedAt": "2026-11-30T01:00:02.5Z"}}},
        ],
    }
    normalize_status(st)
    assert st["startTime"] == "2026-11-30T01:00:00Z"
    assert st["conditions"][0]["lastTransitionTime"] == "2026-11-30T01:00:00Z"
    assert [s["name"] for s in st["containerStatuses"]] == ["a", "b"]
    b = st["containerStatuses"][1]
    assert len(b["state"]["terminated"]["message"]) == 12288 // 2
    assert len(b["lastState"]["terminated"]["message"]) == 12288 // 2
    assert b["state"]["terminated"]["finishedAt"] == "2026-11-30T01:00:01Z"
    assert st["containerStatuses"][0]["state"]["running"]["startedAt"] == "2026-11-30T01:00:02Z"


def test_status_equal_semantic_for_empty_values() -> None:
    a = status()
    b = copy.deepcopy(a)
    b["containerStatuses"][0]["lastState"] = {}
    b["reason"] = ""
    b["nominatedNodeName"] = "not ours"
    assert status_equal_by_kubelet(a, b)
    b["podIP"] = "172.17.0.3"
    assert not status_equal_by_kubelet(a, b)


def test_terminate_pod_marks_unfinished_containers_unknown_and_fails_pod() -> None:
    pod = make_pod()
    st = status(a=terminated("a", 0))
    out = terminated_status(pod, st)
    assert out["phase"] == "Failed"
    assert out["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert out["containerStatuses"][1]["state"] == {
        "terminated": {
            "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was terminated",
            "exitCode": 137,
        }
    }
    succeeded = status(phase="Succeeded", a=terminated("a"))
    succeeded["containerStatuses"][1] = terminated("b")
    assert terminated_status(pod, succeeded)["phase"] == "Succeeded"


def test_terminate_static_pod_gets_no_terminal_phase() -> None:
    pod = make_pod(annotations={"kubernetes.io/config.source": "file"})
    assert terminated_status(pod, status())["phase"] == "Running"


def test_terminate_uninitialized_pod_keeps_trailing_waiting_init_containers() -> None:
    pod = make_pod(init=["one", "two"])
    waiting = {"name": "x", "state": {"waiting": {"reason": "PodInitializing"}}, "lastState": {}}
    st = {
        "phase": "Pending",
        "initContainerStatuses": [running("one"), dict(waiting, name="two")],
        "containerStatuses": [dict(waiting, name="a"), dict(waiting, name="b")],
    }
    out = terminated_status(pod, st)
    assert out["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    assert out["initContainerStatuses"][1]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert out["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert out["phase"] == "Failed"


def test_container_readiness_regenerates_ready_conditions() -> None:
    pod = make_pod()
    st = status()
    out = with_container_flag(pod, st, "b", "ready", False)
    assert out is not None
    conds = {c["type"]: c for c in out["conditions"]}
    assert conds["Ready"]["status"] == "False"
    assert conds["Ready"]["message"] == "containers with unready status: [b]"
    assert conds["ContainersReady"]["reason"] == "ContainersNotReady"
    assert [c["type"] for c in out["conditions"]] == [c["type"] for c in st["conditions"]]
    assert with_container_flag(pod, st, "b", "ready", True) is None
    assert with_container_flag(pod, st, "nope", "ready", False) is None


def test_container_startup_sets_started_only() -> None:
    pod = make_pod()
    st = status()
    out = with_container_flag(pod, st, "a", "started", False)
    assert out is not None
    assert out["containerStatuses"][0]["started"] is False
    assert out["conditions"] == st["conditions"]


def test_observed_generation_follows_the_pod_and_its_bump_is_a_change() -> None:
    pod = make_pod(generation=1)
    first = accept(None, pod, status())
    assert first.status["observedGeneration"] == 1
    assert {c["type"]: c.get("observedGeneration") for c in first.status["conditions"]} == {
        "Initialized": 1,
        "Ready": 1,
        "ContainersReady": 1,
        "PodScheduled": 1,
    }
    # A spec update (tolerations, activeDeadlineSeconds...) bumps metadata.generation: the same
    # status must be written again to report it.
    bumped = accept(first, make_pod(generation=2), status())
    assert bumped.version == 2 and bumped.status["observedGeneration"] == 2
    assert all(c["observedGeneration"] == 2 for c in bumped.status["conditions"])
    # An older pod object never lowers it (updateStatusInternal).
    stale = accept(bumped, make_pod(generation=1), status(ready="False"))
    assert stale.status["observedGeneration"] == 2


def test_observed_generation_keeps_the_resize_conditions_own_and_skips_static_pods() -> None:
    resize = {"type": "PodResizeInProgress", "status": "True", "observedGeneration": 4}
    new = status()
    new["conditions"].append(resize)
    got = accept(None, make_pod(generation=5), new)
    by_type = {c["type"]: c for c in got.status["conditions"]}
    assert by_type["PodResizeInProgress"]["observedGeneration"] == 4
    assert by_type["Ready"]["observedGeneration"] == 5
    no_generation = accept(None, make_pod(), status())
    assert "observedGeneration" not in no_generation.status
    assert all("observedGeneration" not in c for c in no_generation.status["conditions"])
