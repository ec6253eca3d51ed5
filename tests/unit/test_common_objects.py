"""The shared vocabulary of vk_common/objects.py: accessors, static / mirror pods, the restart rule,
the default pull policy and the metav1.Time helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from vk_common.objects import (
    MIRROR_ANNOTATION,
    container_should_restart,
    default_pull_policy,
    format_time,
    format_time_micro,
    format_time_nano,
    full_name,
    is_mirror,
    is_sidecar,
    is_static,
    parse_time,
    restart_policy,
    should_restart,
    uid,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
APP: dict[str, Any] = {"name": "app"}
SIDECAR: dict[str, Any] = {"name": "side", "restartPolicy": "Always"}


def pod(policy: str | None = None, **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [APP]}
    if policy is not None:
        spec["restartPolicy"] = policy
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u1", **meta}, "spec": spec}


def test_restart_policy_defaults_to_always() -> None:
    assert restart_policy(pod()) == "Always"
    assert restart_policy({"metadata": {}}) == "Always"
    assert restart_policy(pod("OnFailure")) == "OnFailure"


@pytest.mark.parametrize(
    ("policy", "exit_code", "expected"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 1, True),
        ("OnFailure", 137, True),
        ("Never", 0, False),
        ("Never", 1, False),
    ],
)
def test_should_restart_an_exited_container(policy: str, exit_code: int, expected: bool) -> None:
    assert should_restart(pod(policy), APP, exit_code) is expected


def test_a_container_that_did_not_finish_always_starts() -> None:
    """Created or unknown (no exit code): ShouldContainerBeRestarted starts it whatever the
    policy. Changed by the unification: pods/policy.should_restart said no for a Never pod."""
    assert should_restart(pod("OnFailure"), APP, None) is True
    assert should_restart(pod("Never"), APP, None) is True


def test_nothing_restarts_once_the_pod_is_being_deleted() -> None:
    deleting = pod("Always", deletionTimestamp="2026-01-01T00:00:00Z")
    assert should_restart(deleting, APP, 1) is False
    assert should_restart(deleting, APP, None) is False
    assert should_restart(deleting, SIDECAR, 0) is False


def test_a_sidecar_restarts_whatever_the_pod_policy() -> None:
    assert is_sidecar(SIDECAR) and not is_sidecar(APP)
    for policy in ("Always", "OnFailure", "Never"):
        assert should_restart(pod(policy), SIDECAR, 0) is True
        assert container_should_restart(pod(policy), SIDECAR, 0) is True


def test_the_container_restart_policy_wins_over_the_pods() -> None:
    assert container_should_restart(pod("Always"), {"name": "a", "restartPolicy": "Never"}, 1) is False
    assert container_should_restart(pod("Never"), {"name": "a", "restartPolicy": "OnFailure"}, 1) is True
    assert container_should_restart(pod("Never"), {"name": "a", "restartPolicy": "OnFailure"}, 0) is False


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("registry.local:5000/team/busybox", "Always"),
        ("registry.local:5000/team/busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("busybox:1", "IfNotPresent"),
        ("registry.local:5000/team/busybox:1", "IfNotPresent"),
        ("busybox@sha256:" + "a" * 64, "IfNotPresent"),
        ("busybox@sha256:" + "c" * 64, "IfNotPresent"),
        # Upstream's ParseImageName keeps the tag next to a digest: `latest` means Always.
        ("busybox:latest@sha256:" + "a" * 64, "Always"),
        ("busybox:1@sha256:" + "a" * 64, "IfNotPresent"),
        # A reference that does not parse has no tag: IfNotPresent.
        ("", "IfNotPresent"),
        ("Busybox", "IfNotPresent"),
    ],
)
def test_default_pull_policy(image: str, expected: str) -> None:
    assert default_pull_policy(image) == expected


def test_static_and_mirror_pods() -> None:
    assert is_static(pod(annotations={"kubernetes.io/config.source": "file"}))
    assert not is_static(pod(annotations={"kubernetes.io/config.source": "api"}))
    assert not is_static(pod())
    assert is_mirror(pod(annotations={MIRROR_ANNOTATION: "hash"}))
    assert not is_mirror(pod())


def test_identity() -> None:
    assert uid(pod()) == "u1" and uid({}) == "" and uid({"metadata": None}) == ""
    assert full_name(pod()) == "default/p"
    assert full_name({"metadata": {"name": "x"}}) == "default/x"


def test_parse_time() -> None:
    assert parse_time("2026-01-01T00:00:00Z") == T0
    assert parse_time("2026-01-01T02:00:00.123456789+02:00") == T0 + timedelta(microseconds=123456)
    assert parse_time("2026-01-01T00:00:00") == T0  # naive: UTC
    assert parse_time("") is None
    assert parse_time(None) is None
    assert parse_time("not a time") is None


def test_format_time() -> None:
    assert format_time(T0 + timedelta(microseconds=5)) == "2026-01-01T00:00:00Z"
    assert format_time(datetime(2026, 1, 1, 2, tzinfo=timezone(timedelta(hours=2)))) == "2026-01-01T00:00:00Z"
    assert format_time(datetime(2026, 1, 1)) == "2026-01-01T00:00:00Z"
    assert format_time_micro(T0) == "2026-01-01T00:00:00.000000Z"
    assert format_time_micro(datetime(2026, 1, 1, 2, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))) == (
        "2026-01-01T00:00:00.000005Z"
    )
    assert format_time_nano(T0) == "2026-01-01T00:00:00Z"
    assert format_time_nano(T0 + timedelta(microseconds=120000)) == "2026-01-01T00:00:00.12Z"


def test_restart_policy_rules_match_exit_codes_before_the_container_s_policy() -> None:
    rules = [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42, 43]}},
        {"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0, 1]}},
    ]
    pod = {"spec": {"restartPolicy": "Never"}}
    container = {"name": "c", "restartPolicy": "Never", "restartPolicyRules": rules}
    assert container_should_restart(pod, container, 42)
    assert container_should_restart(pod, container, 7)  # NotIn [0, 1]
    assert not container_should_restart(pod, container, 1)  # no rule: the container's Never
    # rules apply only with a container restartPolicy (API validation requires one)
    assert not container_should_restart(pod, {"name": "c", "restartPolicyRules": rules}, 42)
