"""The pod's resolver configuration against the kubelet's cases (pkg/kubelet/network/dns/dns_test.go:
TestParseResolvConf, TestFormDNSSearchFitsLimits, TestFormDNSNameserversFitsLimits,
TestMergeDNSOptions, TestGetPodDNSType, TestGetPodDNS, TestGetPodDNSCustom)."""

from typing import Any

import pytest

from tests.support import manifests
from vk_provider.kuberuntime.dns import (
    MISSING_CLUSTER_DNS_MESSAGE,
    DNSEvent,
    NodeDNS,
    PodDNS,
    ResolvConf,
    ResolvConfError,
    parse_resolv_conf,
    pod_dns,
    resolv_conf_error_message,
)

HOST = ResolvConf(("192.0.2.53",), ("host.domain",), ("attempts:2",))
CLUSTER = NodeDNS(cluster_dns=("10.96.0.10",), cluster_domain="cluster.local")
NO_CLUSTER = NodeDNS()
CLUSTER_SEARCHES = ("ns.svc.cluster.local", "svc.cluster.local", "cluster.local")
DNS_CONFIG = {
    "nameservers": ["10.0.0.11"],
    "searches": ["my.domain"],
    "options": [{"name": "ndots", "value": "3"}, {"name": "debug"}],
}


def pod(**spec: Any) -> dict[str, Any]:
    return manifests.pod("web", [{"name": "c", "image": "i"}], namespace="ns", uid="u1", **spec)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ResolvConf()),
        ("#comment\n", ResolvConf()),
        ("#comment\nnameserver 1.2.3.4\nsearch", ResolvConf(("1.2.3.4",))),
        ("nameserver \t 1.2.3.4 #comment", ResolvConf(("1.2.3.4",))),
        ("nameserver 1.2.3.4\nnameserver 5.6.7.8", ResolvConf(("1.2.3.4", "5.6.7.8"))),
        ("search .", ResolvConf()),
        ("search foo .  bar", ResolvConf((), ("foo", "bar"))),
        ("search foo. bar", ResolvConf((), ("foo", "bar"))),
        ("search foo\nsearch bar", ResolvConf((), ("bar",))),
        ("options ndots:1 ndots:5 attempts:2", ResolvConf((), (), ("ndots:5", "attempts:2"))),
        (
            "options ndots:1 timeout:3 timeout:1 attempts:3\noptions ndots:5",
            ResolvConf((), (), ("ndots:5", "timeout:1", "attempts:3")),
        ),
        (
            "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4",
            ResolvConf(("1.2.3.4", "5.6.7.8"), ("bar",), ("ndots:5", "attempts:4")),
        ),
    ],
)
def test_parse_resolv_conf_as_the_kubelet(text: str, expected: ResolvConf) -> None:
    parsed = parse_resolv_conf(text.encode())
    assert (parsed.servers, parsed.searches, set(parsed.options)) == (
        expected.servers,
        expected.searches,
        set(expected.options),
    )


def test_a_nameserver_line_without_an_address_is_the_kubelets_error() -> None:
    with pytest.raises(ResolvConfError) as caught:
        parse_resolv_conf(b"#comment\nnameserver\nsearch")
    assert resolv_conf_error_message("/etc/resolv.conf", caught.value) == (
        "Encountered error while parsing resolv conf file. Error: nameserver list is empty "
    )
    missing = FileNotFoundError(2, "No such file or directory")
    assert resolv_conf_error_message("/nope", missing) == "open /nope: no such file or directory"


def test_cluster_first_gets_the_cluster_nameservers_searches_and_ndots() -> None:
    result = pod_dns(pod(dnsPolicy="ClusterFirst"), CLUSTER, HOST)
    assert result == PodDNS(ResolvConf(("10.96.0.10",), (*CLUSTER_SEARCHES, "host.domain"), ("ndots:5",)))


def test_cluster_first_is_the_default_policy_and_omits_duplicate_searches() -> None:
    host = ResolvConf(("192.0.2.53",), ("cluster.local", "host.domain"))
    result = pod_dns(pod(), CLUSTER, host)
    assert result.config is not None
    assert result.config.searches == (*CLUSTER_SEARCHES, "host.domain")


def test_no_cluster_domain_keeps_the_hosts_searches_only() -> None:
    result = pod_dns(pod(), NodeDNS(cluster_dns=("10.96.0.10",), cluster_domain=""), HOST)
    assert result.config == ResolvConf(("10.96.0.10",), ("host.domain",), ("ndots:5",))


def test_without_cluster_dns_cluster_first_falls_back_to_default_with_its_events() -> None:
    result = pod_dns(pod(dnsPolicy="ClusterFirst"), NO_CLUSTER, HOST)
    assert result.config is None  # the node's file unchanged: the engine's own copy
    assert result.events == (
        DNSEvent("MissingClusterDNS", MISSING_CLUSTER_DNS_MESSAGE, on_node=True),
        DNSEvent("MissingClusterDNS", f'pod: "web_ns(u1)". {MISSING_CLUSTER_DNS_MESSAGE}'),
    )
    assert MISSING_CLUSTER_DNS_MESSAGE == (
        'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" '
        'policy. Falling back to "Default" policy.'
    )


@pytest.mark.parametrize(
    ("policy", "host_network", "cluster"),
    [
        ("ClusterFirst", False, True),
        ("ClusterFirst", True, False),  # falls back to Default on the host network
        ("ClusterFirstWithHostNet", True, True),
        ("ClusterFirstWithHostNet", False, True),
        ("Default", False, False),
        ("Default", True, False),
        ("Bogus", False, True),  # the kubelet takes an unknown policy as ClusterFirst
    ],
)
def test_the_policy_picks_the_cluster_or_the_node(policy: str, host_network: bool, cluster: bool) -> None:
    result = pod_dns(pod(dnsPolicy=policy, hostNetwork=host_network), CLUSTER, HOST)
    assert (result.config is not None and result.config.servers == ("10.96.0.10",)) is cluster
    assert result.events == ()


def test_no_resolver_file_gives_the_loopback_and_no_searches() -> None:
    assert pod_dns(pod(dnsPolicy="Default"), NO_CLUSTER, None, ["192.168.1.5"]).config == ResolvConf(
        ("127.0.0.1",), (".",)
    )
    assert pod_dns(pod(dnsPolicy="Default"), NO_CLUSTER, None, ["fd00::5"]).config == ResolvConf(
        ("::1",), (".",)
    )
    assert pod_dns(pod(dnsPolicy="Default"), NO_CLUSTER, None).config == ResolvConf(("127.0.0.1",), (".",))


@pytest.mark.parametrize(
    ("policy", "host_network", "expected"),
    [
        ("None", False, ResolvConf(("10.0.0.11",), ("my.domain",), ("ndots:3", "debug"))),
        (
            "ClusterFirst",
            False,
            ResolvConf(
                ("10.96.0.10", "10.0.0.11"),
                (*CLUSTER_SEARCHES, "host.domain", "my.domain"),
                ("ndots:3", "debug"),
            ),
        ),
        (
            "ClusterFirstWithHostNet",
            True,
            ResolvConf(
                ("10.96.0.10", "10.0.0.11"),
                (*CLUSTER_SEARCHES, "host.domain", "my.domain"),
                ("ndots:3", "debug"),
            ),
        ),
        (
            "Default",
            False,
            ResolvConf(
                ("192.0.2.53", "10.0.0.11"), ("host.domain", "my.domain"), ("attempts:2", "ndots:3", "debug")
            ),
        ),
    ],
)
def test_dns_config_is_merged_as_the_kubelet(policy: str, host_network: bool, expected: ResolvConf) -> None:
    result = pod_dns(pod(dnsPolicy=policy, hostNetwork=host_network, dnsConfig=DNS_CONFIG), CLUSTER, HOST)
    assert result == PodDNS(expected)


def test_none_without_dns_config_is_empty() -> None:
    assert pod_dns(pod(dnsPolicy="None"), CLUSTER, HOST) == PodDNS(ResolvConf())


def test_merged_options_override_by_name_and_an_empty_value_is_the_name_alone() -> None:
    config = {
        "options": [{"name": "ndots", "value": "1"}, {"name": "edns0", "value": ""}, {"name": "attempts"}]
    }
    result = pod_dns(pod(dnsPolicy="Default", dnsConfig=config), NO_CLUSTER, HOST)
    assert result.config is not None
    assert result.config.options == ("attempts", "ndots:1", "edns0")


def test_nameservers_past_three_are_cut_with_an_event() -> None:
    config = {"nameservers": ["10.0.0.1", "10.0.0.2", "10.0.0.3"]}
    result = pod_dns(pod(dnsConfig=config), CLUSTER, HOST)
    assert result.config is not None
    assert result.config.servers == ("10.96.0.10", "10.0.0.1", "10.0.0.2")
    assert result.events == (
        DNSEvent(
            "DNSConfigForming",
            "Nameserver limits were exceeded, some nameservers have been omitted, "
            "the applied nameserver line is: 10.96.0.10 10.0.0.1 10.0.0.2",
        ),
    )


def test_searches_past_32_paths_are_cut_with_an_event() -> None:
    config = {"searches": [f"s{i}.example" for i in range(40)]}
    result = pod_dns(pod(dnsPolicy="None", dnsConfig=config), CLUSTER, HOST)
    assert result.config is not None
    assert result.config.searches == tuple(f"s{i}.example" for i in range(32))
    assert [e.reason for e in result.events] == ["DNSConfigForming"]
    assert result.events[0].message == (
        "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "
        + " ".join(result.config.searches)
    )
    assert not result.events[0].on_node


def test_a_search_path_past_253_characters_is_dropped_and_the_line_cut_at_2048() -> None:
    long_path = "a" * 254
    result = pod_dns(pod(dnsPolicy="None", dnsConfig={"searches": ["ok.example", long_path]}), CLUSTER, HOST)
    assert result.config is not None and result.config.searches == ("ok.example",)
    assert len(result.events) == 1
    paths = [f"{i:02d}" + "b" * 98 for i in range(25)]  # 25 x 100 + 24 spaces
    result = pod_dns(pod(dnsPolicy="None", dnsConfig={"searches": paths}), CLUSTER, HOST)
    assert result.config is not None
    assert result.config.searches == tuple(paths[:20])  # 20 x 100 + 19 = 2019 ≤ 2048 < 2120
    assert len(result.events) == 1


def test_a_host_file_past_the_limits_is_cut_even_for_default() -> None:
    host = ResolvConf(("192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"))
    result = pod_dns(pod(dnsPolicy="Default"), NO_CLUSTER, host)
    assert result.config == ResolvConf(("192.0.2.1", "192.0.2.2", "192.0.2.3"))
    assert [e.reason for e in result.events] == ["DNSConfigForming"]
