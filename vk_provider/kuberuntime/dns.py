"""The pod's resolver configuration, as the kubelet forms it (pure).

What lives here: `parse_resolv_conf` (the kubelet's parseResolvConf: a resolv.conf's
nameservers, searches and options; `ResolvConfError` for a `nameserver` line without an
address; `resolv_conf_error_message`), `NodeDNS` (the node's settings), and `pod_dns`
(GetPodDNS): the pod's nameservers, searches and options from its dnsPolicy and dnsConfig, the
node's clusterDNS and clusterDomain and the node's resolv.conf: ClusterFirst
(ClusterFirstWithHostNet for a host-network pod) gets the cluster nameservers, the
`<ns>.svc.<domain> svc.<domain> <domain>` searches before the node's and `ndots:5`; without
clusterDNS it falls back to Default with a `MissingClusterDNS` Warning on the Node and on the
pod; Default is the node's file; None starts empty; dnsConfig is merged last and the result
cut to the API's limits with a `DNSConfigForming` Warning on the pod. The Events are returned
(`DNSEvent`) for the caller to record.
The one departure: a Default pod whose configuration is the node's file unchanged gets
`PodDNS.config` None, "the engine's own copy of its host's resolv.conf" (what Docker does when it
is given no DNS settings, and what Default means for a pod of a local engine).
Must not: read files, record Events or know about an engine.

Upstream: pkg/kubelet/network/dns/dns.go (GetPodDNS, getPodDNSType, parseResolvConf,
appendOptions, generateSearchesForDNSClusterFirst, appendDNSConfig, mergeDNSOptions,
formDNSConfigFitsLimits), pkg/apis/core/validation/validation.go (MaxDNSNameservers,
MaxDNSSearchPaths, MaxDNSSearchListChars).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vk_common.objects import format_pod, meta, spec
from vk_provider.runtime.configs import ResolvConf

# pkg/apis/core/validation/validation.go
MAX_DNS_NAMESERVERS = 3
MAX_DNS_SEARCH_PATHS = 32
MAX_DNS_SEARCH_LIST_CHARS = 2048
# k8s.io/apimachinery/pkg/util/validation: DNS1123SubdomainMaxLength (a longer search path
# makes some resolvers, glibc 2.28, abort: dns.go formDNSSearchFitsLimits drops it).
MAX_SEARCH_PATH_CHARS = 253
MAX_RESOLV_CONF_BYTES = 10 * 1 << 20  # dns.go maxResolvConfLength
DEFAULT_DNS_OPTIONS = ("ndots:5",)  # dns.go defaultDNSOptions
DEFAULT_CLUSTER_DOMAIN = "cluster.local"
DEFAULT_RESOLV_CONF = "/etc/resolv.conf"

MISSING_CLUSTER_DNS = "MissingClusterDNS"
DNS_CONFIG_FORMING = "DNSConfigForming"
MISSING_CLUSTER_DNS_MESSAGE = (
    'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" '
    'policy. Falling back to "Default" policy.'
)


class ResolvConfError(ValueError):
    """The node's resolv.conf cannot be used: the pod's sandbox is not created (as GetPodDNS)."""


@dataclass(frozen=True)
class NodeDNS:
    """The node's settings (the kubelet's clusterDNS, clusterDomain and resolvConf; config `pods`)."""

    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    resolv_conf: str = DEFAULT_RESOLV_CONF


NO_CLUSTER_DNS = NodeDNS()  # the defaults: no clusterDNS, cluster.local, /etc/resolv.conf


@dataclass(frozen=True)
class DNSEvent:
    """A Warning Event the pod's DNS configuration calls for: on the Node or on the pod."""

    reason: str
    message: str
    on_node: bool = False


@dataclass(frozen=True)
class PodDNS:
    """`config` None: the engine's own copy of its host's resolv.conf (see the module's text)."""

    config: ResolvConf | None
    events: tuple[DNSEvent, ...] = ()


def _omit_duplicates(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _append_options(options: Iterable[str], new: Iterable[str]) -> tuple[str, ...]:
    """appendOptions: one option per name, the last one given wins (kept in first-seen order,
    where the kubelet's map gives any order)."""
    by_name: dict[str, str] = {}
    for option in (*options, *new):
        by_name[option.split(":", 1)[0]] = option
    return tuple(by_name.values())


def parse_resolv_conf(data: bytes) -> ResolvConf:
    """parseResolvConf: `nameserver` lines accumulate, the last `search` line wins (without a lone
    `.`, a trailing dot dropped), `options` lines merge by name. Raises ResolvConfError with the
    kubelet's message (past 10 MiB; a `nameserver` line without an address)."""
    if len(data) > MAX_RESOLV_CONF_BYTES:
        raise ResolvConfError("the read limit is reached")  # utilio.ErrLimitReached
    servers: list[str] = []
    searches: list[str] = []
    options: tuple[str, ...] = ()
    empty_nameserver = False
    for line in data.decode(errors="replace").split("\n"):
        trimmed = line.strip()
        if trimmed.startswith("#"):
            continue
        fields = trimmed.split()
        if not fields:
            continue
        if fields[0] == "nameserver":
            if len(fields) >= 2:
                servers.append(fields[1])
            else:
                empty_nameserver = True
        elif fields[0] == "search":
            searches = [s.removesuffix(".") for s in fields[1:] if s != "."]
        elif fields[0] == "options":
            options = _append_options(options, fields[1:])
    if empty_nameserver:  # the aggregate of identical errors reads as one
        raise ResolvConfError("nameserver list is empty ")
    return ResolvConf(tuple(servers), tuple(searches), options)


def resolv_conf_error_message(path: str, error: ResolvConfError | OSError) -> str:
    """getDNSConfig's error for the node's file that cannot be read (worded as Go's os.Open's:
    `open <path>: <reason>`) or parsed."""
    if isinstance(error, ResolvConfError):
        return f"Encountered error while parsing resolv conf file. Error: {error}"
    return f"open {path}: {(error.strerror or str(error)).lower()}"


def _uses_cluster_dns(pod: Mapping[str, Any]) -> bool | None:
    """getPodDNSType: True for the cluster's, False for the node's, None for none; an unknown
    policy is taken as ClusterFirst."""
    policy = spec(pod).get("dnsPolicy")
    if policy == "None":
        return None
    if policy == "ClusterFirstWithHostNet":
        return True
    host_network = spec(pod).get("hostNetwork") is True
    return not (policy == "Default" or (policy == "ClusterFirst" and host_network))


def _cluster_searches(host_searches: Sequence[str], namespace: str, domain: str) -> tuple[str, ...]:
    """generateSearchesForDNSClusterFirst."""
    if not domain:
        return tuple(host_searches)
    return _omit_duplicates((f"{namespace}.svc.{domain}", f"svc.{domain}", domain, *host_searches))


def _merge_options(existing: Iterable[str], pod_options: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """mergeDNSOptions: the pod's options override the existing ones by name; an option without a
    value (or with an empty one) is its name alone."""
    by_name: dict[str, str] = {}
    for option in existing:
        name, _, value = option.partition(":")
        by_name[name] = value
    for pod_option in pod_options:
        pod_value = pod_option.get("value")
        by_name[str(pod_option.get("name") or "")] = "" if pod_value is None else str(pod_value)
    return tuple(f"{name}:{value}" if value else name for name, value in by_name.items())


def _fit_searches(searches: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """formDNSSearchFitsLimits: at most 32 paths, none longer than 253 characters, the line at most
    2048 characters (whole paths cut from the end); True when something was cut."""
    kept = list(searches[:MAX_DNS_SEARCH_PATHS])
    exceeded = len(searches) > MAX_DNS_SEARCH_PATHS
    fitting = [s for s in kept if len(s) <= MAX_SEARCH_PATH_CHARS]
    exceeded = exceeded or len(fitting) < len(kept)
    while len(" ".join(fitting)) > MAX_DNS_SEARCH_LIST_CHARS:
        fitting.pop()
        exceeded = True
    return tuple(fitting), exceeded


def _fit_limits(config: ResolvConf) -> tuple[ResolvConf, tuple[DNSEvent, ...]]:
    """formDNSConfigFitsLimits: the nameservers, then the searches, each cut with its Event."""
    events: list[DNSEvent] = []
    servers = config.servers
    if len(servers) > MAX_DNS_NAMESERVERS:
        servers = servers[:MAX_DNS_NAMESERVERS]
        events.append(
            DNSEvent(
                DNS_CONFIG_FORMING,
                "Nameserver limits were exceeded, some nameservers have been omitted, "
                f"the applied nameserver line is: {' '.join(servers)}",
            )
        )
    searches, cut = _fit_searches(config.searches)
    if cut:
        events.append(
            DNSEvent(
                DNS_CONFIG_FORMING,
                "Search Line limits were exceeded, some search paths have been omitted, "
                f"the applied search line is: {' '.join(searches)}",
            )
        )
    return ResolvConf(servers, searches, config.options), tuple(events)


def _no_resolver_file(node_ips: Sequence[str]) -> ResolvConf:
    """GetPodDNS with resolvConf "": the node's loopback per node IP (127.0.0.1 without one) and no
    search domains, rather than the engine's file."""
    servers = tuple("::1" if ":" in ip else "127.0.0.1" for ip in node_ips) or ("127.0.0.1",)
    return ResolvConf(servers, (".",))


def pod_dns(
    pod: Mapping[str, Any], node: NodeDNS, host: ResolvConf | None, node_ips: Sequence[str] = ()
) -> PodDNS:
    """GetPodDNS. `host` is the node's parsed resolv.conf, None when the node has none configured
    (resolvConf ""); `node_ips` the node's addresses, used only then."""
    cluster_dns, cluster_domain = node.cluster_dns, node.cluster_domain
    host_config = host if host is not None else ResolvConf()
    events: list[DNSEvent] = []
    dns_type = _uses_cluster_dns(pod)
    if dns_type is None:
        base = ResolvConf()
    elif dns_type and cluster_dns:
        namespace = str(meta(pod).get("namespace") or "")
        searches = _cluster_searches(host_config.searches, namespace, cluster_domain)
        base = ResolvConf(tuple(cluster_dns), searches, DEFAULT_DNS_OPTIONS)
    else:
        if dns_type:
            events.append(DNSEvent(MISSING_CLUSTER_DNS, MISSING_CLUSTER_DNS_MESSAGE, on_node=True))
            pod_message = f"pod: {json.dumps(format_pod(pod))}. {MISSING_CLUSTER_DNS_MESSAGE}"  # %q
            events.append(DNSEvent(MISSING_CLUSTER_DNS, pod_message))
        base = host_config if host is not None else _no_resolver_file(node_ips)
    pod_config = spec(pod).get("dnsConfig")
    if pod_config is not None:
        base = ResolvConf(
            _omit_duplicates((*base.servers, *(str(s) for s in pod_config.get("nameservers") or ()))),
            _omit_duplicates((*base.searches, *(str(s) for s in pod_config.get("searches") or ()))),
            _merge_options(base.options, pod_config.get("options") or ()),
        )
    config, cut_events = _fit_limits(base)
    events.extend(cut_events)
    if base is host and config == host:  # Default (or its fallback): the node's file unchanged
        return PodDNS(None, tuple(events))
    return PodDNS(config, tuple(events))
