"""runAsNonRoot as the kubelet enforces it (issue 13, item 4): the pure rule in kuberuntime/security.py,
translated by runtime/docker/security_options.py.

Upstream: pkg/kubelet/kuberuntime/security_context_others.go (verifyRunAsNonRoot),
pkg/securitycontext/util.go (DetermineEffectiveSecurityContext), kuberuntime/helpers.go
(getImageUser: an image without a user runs as root).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import docker_kwargs, manifests
from vk_provider.kuberuntime import security
from vk_provider.runtime.types import ContainerConfigError

WHERE = '(pod: "web_default(u-1)", container: app)'
ROOT = f"container has runAsNonRoot and image will run as root {WHERE}"
RUN_AS_ROOT = f"container's runAsUser breaks non-root policy {WHERE}"


def non_numeric(user: str) -> str:
    return (
        f"container has runAsNonRoot and image has non-numeric user ({user}), "
        f"cannot verify user is non-root {WHERE}"
    )


def pod(pod_sc: dict[str, Any] | None = None, sc: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "busybox"}
    if sc is not None:
        container["securityContext"] = sc
    spec: dict[str, Any] = {} if pod_sc is None else {"securityContext": pod_sc}
    return manifests.pod("web", [container], uid="u-1", **spec)


def verify(p: dict[str, Any], image_user: str | None) -> str | None:
    return security.verify_run_as_non_root(p, p["spec"]["containers"][0], image_user)


@pytest.mark.parametrize(
    ("image_user", "expected"),
    [
        ("1234:5678", None),  # the uid is the part before ':'
        ("1234", None),
        ("0", ROOT),
        ("0:1234", ROOT),
        ("", ROOT),  # no USER in the image: root
        (None, ROOT),  # not looked up: taken as root, never as allowed
        (":5678", ROOT),  # no user part at all
        ("root", non_numeric("root")),
        ("nobody", non_numeric("nobody")),
        ("nobody:nogroup", non_numeric("nobody")),
        ("99999999999999999999", non_numeric("99999999999999999999")),  # not an int64: a name
    ],
)
def test_image_user_decides_without_run_as_user(image_user: str | None, expected: str | None) -> None:
    assert verify(pod(sc={"runAsNonRoot": True}), image_user) == expected


@pytest.mark.parametrize("uid", ["-1", "2147483648", "4294967295"])
def test_image_uid_out_of_range_is_refused(uid: str) -> None:
    assert verify(pod(sc={"runAsNonRoot": True}), uid) == (
        f"container has runAsNonRoot and image has an invalid user id ({uid}). (Must be 1-(2147483647)): "
        f"must be between 0 and 2147483647, inclusive {WHERE}"
    )


@pytest.mark.parametrize("image_user", ["", "0", "root", "1234"])
def test_run_as_user_overrides_the_image(image_user: str) -> None:
    assert verify(pod(sc={"runAsNonRoot": True, "runAsUser": 1234}), image_user) is None
    assert verify(pod(sc={"runAsNonRoot": True, "runAsUser": 0}), image_user) == RUN_AS_ROOT


@pytest.mark.parametrize("setting", [None, False])
def test_without_run_as_non_root_anything_runs(setting: bool | None) -> None:
    sc = {} if setting is None else {"runAsNonRoot": setting}
    for image_user in ("", "0", "root", None):
        assert verify(pod(sc=sc), image_user) is None
    assert verify(pod(sc={**sc, "runAsUser": 0}), "") is None


@pytest.mark.parametrize(
    ("pod_sc", "sc", "image_user", "expected"),
    [
        ({"runAsNonRoot": True}, None, "", ROOT),  # the pod's applies to its containers
        ({"runAsNonRoot": True}, {}, "", ROOT),
        ({"runAsNonRoot": True}, {"runAsNonRoot": False}, "", None),  # the container's wins
        ({"runAsNonRoot": False}, {"runAsNonRoot": True}, "", ROOT),
        ({"runAsNonRoot": True, "runAsUser": 0}, {"runAsUser": 1000}, "", None),
        ({"runAsNonRoot": True, "runAsUser": 1000}, {"runAsUser": 0}, "1000", RUN_AS_ROOT),
        ({"runAsNonRoot": True, "runAsUser": 0}, None, "1000", RUN_AS_ROOT),
        ({"runAsUser": 1000}, {"runAsNonRoot": True}, "", None),  # the pod's runAsUser is inherited
        ({"runAsNonRoot": True, "runAsUser": 1000}, {"runAsUser": None}, "", None),  # null is unset
    ],
)
def test_pod_and_container_security_contexts_merge_as_the_kubelets(
    pod_sc: dict[str, Any], sc: dict[str, Any] | None, image_user: str, expected: str | None
) -> None:
    assert verify(pod(pod_sc, sc), image_user) == expected


def test_effective_security_context_takes_only_the_fields_a_container_inherits() -> None:
    p = pod(
        {"runAsUser": 1, "runAsGroup": 2, "fsGroup": 3, "sysctls": []}, {"runAsGroup": 5, "privileged": True}
    )
    assert security.effective_security_context(p, p["spec"]["containers"][0]) == {
        "runAsUser": 1,
        "runAsGroup": 5,
        "privileged": True,
    }


def test_the_image_user_is_needed_only_when_it_decides() -> None:
    def needs(pod_sc: dict[str, Any] | None, sc: dict[str, Any] | None) -> bool:
        p = pod(pod_sc, sc)
        return security.needs_image_user(p, p["spec"]["containers"][0])

    assert needs(None, {"runAsNonRoot": True})
    assert needs({"runAsNonRoot": True}, None)
    assert needs(None, {"runAsGroup": 5})  # the group goes with the image's user
    assert not needs(None, {"runAsNonRoot": True, "runAsUser": 1000})
    assert not needs({"runAsUser": 1000}, {"runAsNonRoot": True})
    assert not needs(None, None)
    assert not needs(None, {"runAsNonRoot": False})


def test_security_kwargs_refuse_a_root_user_with_create_container_config_error() -> None:
    p = pod(sc={"runAsNonRoot": True})
    with pytest.raises(ContainerConfigError) as refused:
        docker_kwargs.security_kwargs(p, p["spec"]["containers"][0], "spec.containers[0]", "")
    assert refused.value.reason == "CreateContainerConfigError"
    assert refused.value.message == ROOT
    allowed = pod(sc={"runAsNonRoot": True, "runAsUser": 1234})
    assert (
        docker_kwargs.security_kwargs(allowed, allowed["spec"]["containers"][0], "spec.containers[0]", None)[
            "user"
        ]
        == "1234"
    )


@pytest.mark.parametrize(
    ("image_user", "docker_user"),
    [("1234:5678", "1234:7"), ("", "0:7"), ("nobody", "nobody:7"), (None, "0:7")],
)
def test_a_group_without_a_user_keeps_the_images_user(image_user: str | None, docker_user: str) -> None:
    p = pod(sc={"runAsGroup": 7})
    assert (
        docker_kwargs.security_kwargs(p, p["spec"]["containers"][0], "spec.containers[0]", image_user)["user"]
        == docker_user
    )


def test_a_non_root_image_user_with_a_group_does_not_become_root() -> None:
    """runAsNonRoot + runAsGroup on an image whose user is 1234: Docker gets 1234:7, not 0:7."""
    p = pod(sc={"runAsNonRoot": True, "runAsGroup": 7})
    assert (
        docker_kwargs.security_kwargs(p, p["spec"]["containers"][0], "spec.containers[0]", "1234")["user"]
        == "1234:7"
    )
