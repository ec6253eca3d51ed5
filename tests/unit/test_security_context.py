"""The securityContext → Docker mapping and its refusals (issue 14, item 3): kuberuntime/security.py
resolves it, runtime/docker/security_options.py translates it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import docker_kwargs, manifests
from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.kuberuntime import security
from vk_provider.runtime.configs import HostSecurity
from vk_provider.runtime.docker import security_options
from vk_provider.runtime.types import ContainerConfigError, PodSpecRefused

C0 = "spec.containers[0]"


def pod(
    container_sc: dict[str, Any] | None = None, annotations: dict[str, str] | None = None, **spec: Any
) -> Any:
    c: dict[str, Any] = {"name": "main", "image": "busybox"}
    if container_sc is not None:
        c["securityContext"] = container_sc
    return manifests.pod("p", [c], uid="u1", annotations=annotations or {}, **spec)


def kwargs(p: Any, seccomp_json: str | None = None) -> dict[str, Any]:
    return docker_kwargs.security_kwargs(p, p["spec"]["containers"][0], C0, None, seccomp_json)


def check(p: Any, *, host: HostSecurity | None = None, **docker: Any) -> None:
    allow = DockerAllow(unconfined=docker.pop("unconfined", False))
    security.check_security(p, DockerConfig(allow=allow, **docker), host or HostSecurity())


def test_users_and_groups_in_the_kubelets_order() -> None:
    p = pod(
        securityContext={"runAsUser": 1234, "runAsGroup": 2345, "fsGroup": 3456, "supplementalGroups": [4567]}
    )
    assert kwargs(p) == {"user": "1234:2345", "group_add": ["3456", "4567"]}
    assert kwargs(pod({"runAsUser": 7}, securityContext={"runAsUser": 1, "runAsGroup": 2}))["user"] == "7:2"


def test_container_restrictions_become_docker_options() -> None:
    sc = {
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["CAP_NET_BIND_SERVICE"]},
        "seLinuxOptions": {"type": "spc_t", "level": "s0:c1"},
        "windowsOptions": {"runAsUserName": "ContainerUser"},  # ignored on Linux, as the kubelet
    }
    assert kwargs(pod(sc)) == {
        "read_only": True,
        "cap_add": ["NET_BIND_SERVICE"],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges", "label=type:spc_t", "label=level:s0:c1"],
    }
    # AddNoNewPrivileges: never for a privileged container, never when unset.
    assert "security_opt" not in kwargs(pod({"privileged": True, "allowPrivilegeEscalation": False}))
    assert kwargs(pod({"allowPrivilegeEscalation": True})) == {}


def test_seccomp_container_over_pod_and_the_profile_text() -> None:
    unconfined = {"seccompProfile": {"type": "Unconfined"}}
    localhost = {"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}
    assert kwargs(pod(securityContext=unconfined))["security_opt"] == ["seccomp=unconfined"]
    assert kwargs(pod({"seccompProfile": {"type": "RuntimeDefault"}}, securityContext=unconfined)) == {}
    assert kwargs(pod(localhost), '{"defaultAction":"SCMP_ACT_ALLOW"}')["security_opt"] == [
        'seccomp={"defaultAction":"SCMP_ACT_ALLOW"}'
    ]


def test_seccomp_localhost_file_is_joined_under_the_root() -> None:
    p = pod(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/a.json"}})
    c = p["spec"]["containers"][0]
    assert security.seccomp_localhost_file(p, c, C0, "/var/lib/kubelet/seccomp") == (
        "spec.securityContext.seccompProfile.localhostProfile",
        "/var/lib/kubelet/seccomp/profiles/a.json",
    )
    assert security.seccomp_localhost_file(pod(), pod()["spec"]["containers"][0], C0, "/r") is None
    escaping = pod({"seccompProfile": {"type": "Localhost", "localhostProfile": "../../etc/x"}})
    with pytest.raises(ContainerConfigError, match=r"spec.containers\[0\].securityContext.seccompProfile"):
        security.seccomp_localhost_file(escaping, escaping["spec"]["containers"][0], C0, "/r")
    empty = pod({"seccompProfile": {"type": "Localhost"}})
    with pytest.raises(ContainerConfigError, match="localhostProfile must be set"):
        security.seccomp_localhost_file(empty, empty["spec"]["containers"][0], C0, "/r")
    with pytest.raises(PodSpecRefused, match=r"\(docker.seccompProfileRoot\)"):
        security.seccomp_localhost_file(p, c, C0, "")


def test_apparmor_field_then_deprecated_annotation_then_pod() -> None:
    annotation = {"container.apparmor.security.beta.kubernetes.io/main": "localhost/from-annotation"}
    pod_level = {"appArmorProfile": {"type": "Localhost", "localhostProfile": "from-pod"}}
    assert kwargs(pod(securityContext=pod_level))["security_opt"] == ["apparmor=from-pod"]
    assert kwargs(pod(annotations=annotation, securityContext=pod_level))["security_opt"] == [
        "apparmor=from-annotation"
    ]
    field = {"appArmorProfile": {"type": "Unconfined"}}
    assert kwargs(pod(field, annotations=annotation))["security_opt"] == ["apparmor=unconfined"]
    assert kwargs(pod({"appArmorProfile": {"type": "RuntimeDefault"}})) == {}


def test_proc_mount_unmasked_is_dockers_systempaths_unconfined() -> None:
    assert kwargs(pod({"procMount": "Unmasked"}))["security_opt"] == ["systempaths=unconfined"]
    assert kwargs(pod({"procMount": "Default"})) == {}


@pytest.mark.parametrize(
    ("p", "message"),
    [
        (
            pod({"seccompProfile": {"type": "Unconfined"}}),
            "spec.containers[0].securityContext.seccompProfile: Unconfined seccomp profiles are not "
            "allowed on this node (docker.allow.unconfined)",
        ),
        (
            pod(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "a.json"}}),
            "spec.securityContext.seccompProfile: Localhost seccomp profiles are not allowed on this node "
            "(docker.seccompProfileRoot)",
        ),
        (
            pod({"procMount": "Unmasked"}),
            "spec.containers[0].securityContext.procMount: Unmasked /proc mounts are not allowed on this "
            "node (docker.allow.unconfined)",
        ),
        (
            pod(hostUsers=False),
            "spec.hostUsers: pods in their own user namespace need a Docker engine with userns-remap "
            "(this engine runs containers in the host's user namespace)",
        ),
    ],
)
def test_refused_fields_name_the_field_and_the_key(p: Any, message: str) -> None:
    with pytest.raises(PodSpecRefused) as refused:
        check(p)
    assert (refused.value.reason, refused.value.message) == ("Forbidden", message)


def test_allowed_by_the_configuration_or_the_host() -> None:
    check(pod({"seccompProfile": {"type": "Unconfined"}, "procMount": "Unmasked"}), unconfined=True)
    localhost = {"seccompProfile": {"type": "Localhost", "localhostProfile": "a.json"}}
    check(pod(localhost), seccomp_profile_root="/var/lib/kubelet/seccomp")
    check(pod(hostUsers=False), host=HostSecurity(userns=True))
    check(pod(securityContext={"supplementalGroupsPolicy": "Merge"}))
    # Unconfined AppArmor on a host without AppArmor is what every container gets: nothing to refuse.
    check(pod({"appArmorProfile": {"type": "Unconfined"}}))
    with pytest.raises(PodSpecRefused, match=r"appArmorProfile: Unconfined AppArmor profiles"):
        check(pod({"appArmorProfile": {"type": "Unconfined"}}), host=HostSecurity(apparmor=True))
    check(
        pod({"appArmorProfile": {"type": "Localhost", "localhostProfile": "x"}}),
        host=HostSecurity(apparmor=True),
    )


@pytest.mark.parametrize(
    ("p", "reason", "message"),
    [
        (
            pod(securityContext={"supplementalGroupsPolicy": "Strict"}),
            "SupplementalGroupsPolicyNotSupported",
            "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node",
        ),
        (
            pod({"appArmorProfile": {"type": "RuntimeDefault"}}),
            "AppArmor",
            "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host",
        ),
        (
            pod(annotations={"container.apparmor.security.beta.kubernetes.io/main": "localhost/x"}),
            "AppArmor",
            "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host",
        ),
        (
            pod(
                {"appArmorProfile": {"type": "Unconfined"}},
                securityContext={"appArmorProfile": {"type": "RuntimeDefault"}},
            ),
            "AppArmor",
            "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host",
        ),
    ],
)
def test_the_kubelets_admission_rejections(p: Any, reason: str, message: str) -> None:
    with pytest.raises(PodSpecRefused) as refused:
        check(p)
    assert (refused.value.reason, refused.value.message) == (reason, message)


def test_host_security_from_docker_info() -> None:
    info = {"SecurityOptions": ["name=apparmor", "name=seccomp,profile=builtin", "name=userns"]}
    assert security_options.host_security(info) == HostSecurity(apparmor=True, selinux=False, userns=True)
    assert security_options.host_security({"SecurityOptions": ["name=selinux"]}) == HostSecurity(selinux=True)
    assert security_options.host_security({}) == HostSecurity()
