"""Pod sysctls as the kubelet admits them (issue 13, item 8): the allow-list rule and its config key.

Upstream (v1.37.2): pkg/kubelet/sysctl/safe_sysctls.go (the safe set), allowlist.go (NewAllowlist,
validateSysctl, Admit: reason SysctlForbidden), kubelet.go rejectPod ("Pod was rejected: "),
component-helpers node/util/sysctl (namespaces, NormalizeName).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import docker_kwargs, manifests
from vk_common import sysctls as policy
from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.config_load import ConfigError, config_from_mapping, effective_config, load_config
from vk_provider.kuberuntime.admission import check_pod_allowed
from vk_provider.runtime.types import PodSpecRefused

# safe_sysctls.go safeSysctls, in its order.
UPSTREAM_SAFE = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
]


def pod(*names: str, **spec_fields: Any) -> dict[str, Any]:
    sysctls = [{"name": n, "value": "1"} for n in names]
    spec = {"securityContext": {"sysctls": sysctls}, **spec_fields}
    return manifests.pod("p", [{"name": "c", "image": "busybox"}], uid="u", **spec)


def test_the_safe_set_is_the_kubelets() -> None:
    assert list(policy.SAFE_SYSCTLS) == UPSTREAM_SAFE


@pytest.mark.parametrize("name", UPSTREAM_SAFE)
def test_every_safe_sysctl_is_admitted(name: str) -> None:
    assert policy.forbidden_sysctl(pod(name), ()) is None


@pytest.mark.parametrize(
    "name",
    ["kernel.msgmax", "net.ipv4.ip_forward", "kernel.shm", "kernel.sem", "fs.mqueue.msg_max", "kernel.panic"],
)
def test_namespaced_but_unsafe_sysctls_are_forbidden(name: str) -> None:
    assert policy.forbidden_sysctl(pod(name), ()) == f'forbidden sysctl: "{name}" not allowlisted'


def test_the_first_forbidden_one_is_named() -> None:
    assert policy.forbidden_sysctl(pod("net.ipv4.ping_group_range", "kernel.msgmax", "kernel.sem"), ()) == (
        'forbidden sysctl: "kernel.msgmax" not allowlisted'
    )
    assert policy.forbidden_sysctl(pod(), ()) is None
    assert policy.forbidden_sysctl({"spec": {}}, ()) is None


@pytest.mark.parametrize(
    ("allowed", "name", "admitted"),
    [
        (("kernel.msgmax",), "kernel.msgmax", True),
        (("kernel.msgmax",), "kernel.msgmnb", False),
        (("kernel.msg*",), "kernel.msgmnb", True),  # a trailing * is a prefix
        (("kernel.msg*",), "kernel.sem", False),
        (("net.*",), "net.ipv4.ip_forward", True),
        (("net.ipv4.*",), "net.ipv6.conf.all.forwarding", False),
        (("net.ipv4.ip_forward",), "net/ipv4/ip_forward", True),  # the slash form is normalised
    ],
)
def test_configured_unsafe_sysctls_and_patterns(allowed: tuple[str, ...], name: str, admitted: bool) -> None:
    assert (policy.forbidden_sysctl(pod(name), allowed) is None) is admitted


@pytest.mark.parametrize(
    ("name", "fields", "namespace"),
    [
        ("net.ipv4.ping_group_range", {"hostNetwork": True}, "Net"),
        ("kernel.shm_rmid_forced", {"hostIPC": True}, "IPC"),
        ("user.max_user_namespaces", {}, "User"),  # hostUsers unset means the host's
        ("user.max_user_namespaces", {"hostUsers": True}, "User"),
    ],
)
def test_a_namespace_shared_with_the_host_forbids_its_sysctls(
    name: str, fields: dict[str, Any], namespace: str
) -> None:
    assert policy.forbidden_sysctl(pod(name, **fields), ("user.*",)) == (
        f'forbidden sysctl: "{name}" not allowed with host {namespace} enabled'
    )


def test_a_pod_with_its_own_user_namespace_may_set_user_sysctls() -> None:
    assert policy.forbidden_sysctl(pod("user.max_user_namespaces", hostUsers=False), ("user.*",)) is None


def test_normalize_swaps_dots_and_slashes_only_when_a_slash_comes_first() -> None:
    assert policy.normalize_sysctl("net/ipv4/conf/eno2.100/rp_filter") == "net.ipv4.conf.eno2/100.rp_filter"
    assert policy.normalize_sysctl("net.ipv4.conf.eno2/100.rp_filter") == "net.ipv4.conf.eno2/100.rp_filter"
    assert policy.normalize_sysctl("kernel") == "kernel"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("kernel.msgmax", None),
        ("kernel.msg*", None),
        ("net.*", None),
        ("fs.mqueue.*", None),
        ("kernel.panic", 'the sysctls "kernel.panic" are not known to be namespaced'),
        ("vm.*", 'the sysctls "vm." are not known to be namespaced'),
        ("*", 'the sysctls "" are not known to be namespaced'),
        ("Net.ipv4.ip_forward", "must have at most 253 characters and match regex"),
        ("net.*.x", "must have at most 253 characters and match regex"),  # * only at the end
        ("net." + "a" * 250, "must have at most 253 characters and match regex"),
    ],
)
def test_allowed_unsafe_patterns_are_checked_as_new_allowlist_does(pattern: str, problem: str | None) -> None:
    found = policy.sysctl_pattern_problem(pattern)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_the_runtime_refuses_the_pod_with_sysctl_forbidden_before_anything_else() -> None:
    with pytest.raises(PodSpecRefused) as refused:
        check_pod_allowed(pod("kernel.msgmax", hostNetwork=True), DockerAllow(host_network=True))
    assert refused.value.reason == "SysctlForbidden"
    assert refused.value.message == 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted'
    check_pod_allowed(pod("kernel.msgmax"), DockerAllow(unsafe_sysctls=("kernel.msg*",)))
    check_pod_allowed(pod("net.ipv4.ping_group_range"), DockerAllow())


def test_admitted_sysctls_reach_the_sandbox() -> None:
    kwargs = docker_kwargs.sandbox_create_kwargs(
        pod("net.ipv4.ping_group_range"),
        node_name="n",
        config=DockerConfig(),
        attempt=0,
        dns=None,
        cluster_domain="cluster.local",
    )
    assert kwargs["sysctls"] == {"net.ipv4.ping_group_range": "1"}


def test_the_config_key_is_read_validated_and_shown(tmp_path: Path) -> None:
    config = config_from_mapping(
        {"docker": {"allow": {"unsafeSysctls": ["kernel.msg*", "net.ipv4.ip_forward"]}}}
    )
    assert config.docker.allow.unsafe_sysctls == ("kernel.msg*", "net.ipv4.ip_forward")
    assert effective_config(config)["docker"]["allow"]["unsafeSysctls"] == [
        "kernel.msg*",
        "net.ipv4.ip_forward",
    ]
    path = tmp_path / "c.yaml"
    path.write_text("docker:\n  allow:\n    unsafeSysctls: [net.ipv4.ip_forward, kernel.panic]\n")
    with pytest.raises(ConfigError) as bad:
        load_config(path)
    assert str(bad.value) == (
        f'{path}: docker.allow.unsafeSysctls[1]: the sysctls "kernel.panic" are not known to be namespaced'
    )
    with pytest.raises(ConfigError, match=r"docker\.allow\.unsafeSysctls: expected a list of strings"):
        config_from_mapping({"docker": {"allow": {"unsafeSysctls": "net.*"}}})
