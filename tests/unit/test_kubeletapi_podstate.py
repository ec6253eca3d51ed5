"""The kubelet API's answers from a pod's spec and status (podstate.py): the messages and HTTP codes of
the kubelet's getContainerLogs / validateContainerLogStatus and GetExec / GetAttach."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import manifests
from vk_provider.kubeletapi.lookup import BadRequest, NotFound
from vk_provider.kubeletapi.podstate import KnownPods, check_logs, not_running
from vk_provider.pods.config import PodConfig

CID = "docker://0123abcd"


def pod(uid: str = "u1", name: str = "p", **meta: Any) -> dict[str, Any]:
    made = manifests.pod(
        name,
        [{"name": "c", "image": "i"}],
        uid=uid,
        initContainers=[{"name": "init", "image": "i"}],
        ephemeralContainers=[{"name": "debug", "image": "i"}],
    )
    made["metadata"].update(meta)
    return made


def status_with(entry: dict[str, Any], key: str = "containerStatuses") -> dict[str, Any]:
    return {key: [{"name": "c", "restartCount": 0, **entry}]}


def refusal(status: dict[str, Any], container: str = "c", previous: bool = False) -> tuple[int, str] | None:
    """What the kubelet API answers instead of logs: (HTTP code, body), or None for logs."""
    try:
        check_logs((pod(), status), "p", container, previous)
    except NotFound as exc:
        return 404, str(exc)
    except BadRequest as exc:
        return 400, str(exc)
    return None


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("ContainerCreating", "ContainerCreating"),
        ("PodInitializing", "PodInitializing"),
        ("ErrImagePull", "image can't be pulled"),
        ("ImagePullBackOff", "trying and failing to pull image"),
        ("CrashLoopBackOff", "CrashLoopBackOff"),
        ("CreateContainerConfigError", "CreateContainerConfigError"),
    ],
)
def test_a_waiting_container_without_a_previous_run_says_why(reason: str, said: str) -> None:
    status = status_with({"state": {"waiting": {"reason": reason}}})
    assert refusal(status) == (400, f'container "c" in pod "p" is waiting to start: {said}')


def test_a_waiting_container_with_a_terminated_run_has_logs_and_a_previous() -> None:
    last = {"terminated": {"exitCode": 2, "containerID": CID}}
    status = status_with({"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": last})
    assert refusal(status) is None
    assert refusal(status, previous=True) is None


def test_running_and_terminated_containers_have_logs() -> None:
    assert refusal(status_with({"state": {"running": {}}, "containerID": CID})) is None
    assert refusal(status_with({"state": {"terminated": {"exitCode": 0, "containerID": CID}}})) is None
    no_id = {"state": {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown"}}}
    assert refusal(status_with(no_id)) == (400, 'container "c" in pod "p" is terminated')
    last = {"terminated": {"exitCode": 1, "containerID": CID}}
    assert refusal(status_with({**no_id, "lastState": last})) is None


def test_previous_needs_a_terminated_last_state_with_an_id() -> None:
    running = status_with({"state": {"running": {}}})
    assert refusal(running, previous=True) == (400, 'previous terminated container "c" in pod "p" not found')


def test_a_container_with_no_status_yet_and_an_empty_state() -> None:
    assert refusal({}) == (400, 'container "c" in pod "p" is not available')
    assert refusal(status_with({"state": {}})) == (
        400,
        'container "c" in pod "p" is waiting to start - no logs yet',
    )


def test_init_and_ephemeral_containers_are_looked_up_in_their_statuses() -> None:
    init = {"initContainerStatuses": [{"name": "init", "state": {"waiting": {"reason": "ErrImagePull"}}}]}
    assert refusal(init, "init") == (
        400,
        'container "init" in pod "p" is waiting to start: image can\'t be pulled',
    )
    debug = {"ephemeralContainerStatuses": [{"name": "debug", "state": {"running": {}}}]}
    assert refusal(debug, "debug") is None


def test_an_unknown_pod_or_container_is_404() -> None:
    with pytest.raises(NotFound, match=r'^pod "p" does not exist$'):
        check_logs(None, "p", "c", False)
    assert refusal(status_with({"state": {"running": {}}}), "nope") == (
        404,
        'container "nope" not found in pod "p"',
    )


def test_exec_and_attach_messages_for_a_container_that_is_not_running() -> None:
    assert not_running("exec", "default", "p", "c") == 'container not found ("c")'
    assert not_running("attach", "default", "p", "c") == "container c not found in pod p_default"


class Statuses:
    def __init__(self, by_uid: dict[str, dict[str, Any]]) -> None:
        self.by_uid = by_uid

    def get_pod_status(self, uid: str) -> dict[str, Any] | None:
        return self.by_uid.get(uid)


def test_known_pods_by_name_prefer_the_cached_status_then_the_sources() -> None:
    config = PodConfig(lambda _: None)
    sourced = {**pod("u1"), "status": {"phase": "Pending"}}
    config.upsert("api", sourced)
    cached = status_with({"state": {"running": {}}})
    known = KnownPods(config, Statuses({"u1": cached}))
    assert known.pod("default", "p") == (sourced, cached)
    assert known.pod("other", "p") is None and known.pod("default", "q") is None
    assert KnownPods(config, Statuses({})).pod("default", "p") == (sourced, {"phase": "Pending"})


def test_a_recreated_pod_wins_over_its_deleting_namesake() -> None:
    config = PodConfig(lambda _: None)
    old = pod("old", deletionTimestamp="2026-01-01T00:00:00Z")
    new = pod("new")
    config.upsert("api", new)
    config.upsert("api", old)
    assert config.by_name("default", "p") is new
    config.remove("api", "new")
    assert config.by_name("default", "p") is old
