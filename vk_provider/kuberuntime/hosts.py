"""The pod's names and its /etc/hosts, as the kubelet makes them (pure).

What lives here: `hostname_and_domain` (spec.hostnameOverride, spec.hostname or the pod name,
truncated to 63 characters; spec.subdomain as `<subdomain>.<namespace>.svc.<cluster domain>`,
the cluster domain being the node's `pods.clusterDomain`),
`kernel_hostname` (the FQDN with setHostnameAsFQDN, refused past 64 characters), and
`managed_hosts` / `pod_hosts_file`, the content of the kubelet-managed /etc/hosts (localhost
lines, the pod IP with its FQDN and hostname, the hostAliases). Errors are
`ContainerCreateError`s with the kubelet's wording (the sandbox is not created).
Must not: touch the filesystem or Docker (the runtime writes the file and mounts it).

Upstream: pkg/kubelet/kubelet_pods.go (GeneratePodHostNameAndDomain,
truncatePodHostnameIfNeeded, managedHostsFileContent, hostsEntriesFromHostAliases),
pkg/kubelet/util/util.go (GetNodenameForKernel).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from vk_common.objects import meta, spec
from vk_provider.runtime.configs import ETC_HOSTS
from vk_provider.runtime.types import ContainerCreateError

HOSTNAME_MAX = 63  # truncatePodHostnameIfNeeded: 64 bytes with the terminating NUL
FQDN_MAX = 64  # GetNodenameForKernel: the kernel's nodename field
MANAGED_HOSTS_HEADER = "# Kubernetes-managed hosts file.\n"
MANAGED_HOSTS_HEADER_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n"

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")


def _truncate(pod_name: str, hostname: str) -> str:
    if len(hostname) <= HOSTNAME_MAX:
        return hostname
    truncated = hostname[:HOSTNAME_MAX].rstrip("-.")
    if not truncated:
        raise ContainerCreateError(f'hostname for pod "{pod_name}" was invalid: "{hostname}"')
    return truncated


def _label_problem(value: str) -> bool:
    return len(value) > HOSTNAME_MAX or not _DNS1123_LABEL.fullmatch(value)


def hostname_and_domain(pod: Mapping[str, Any], cluster_domain: str) -> tuple[str, str]:
    """GeneratePodHostNameAndDomain: (hostname, domain); the domain is empty without a subdomain."""
    pod_spec = spec(pod)
    name = str(meta(pod).get("name") or "")
    override = pod_spec.get("hostnameOverride")
    if override is not None:
        value = str(override)
        if len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
            raise ContainerCreateError(f'pod HostnameOverride "{value}" is not a valid DNS subdomain')
        return _truncate(name, value), ""
    hostname = name
    if pod_spec.get("hostname"):
        hostname = str(pod_spec["hostname"])
        if _label_problem(hostname):
            raise ContainerCreateError(f'pod Hostname "{hostname}" is not a valid DNS label')
    hostname = _truncate(name, hostname)
    domain = ""
    if pod_spec.get("subdomain"):
        subdomain = str(pod_spec["subdomain"])
        if _label_problem(subdomain):
            raise ContainerCreateError(f'pod Subdomain "{subdomain}" is not a valid DNS label')
        domain = f"{subdomain}.{meta(pod).get('namespace') or ''}.svc.{cluster_domain}"
    return hostname, domain


def kernel_hostname(pod: Mapping[str, Any], cluster_domain: str) -> str:
    """GetNodenameForKernel: the hostname the containers see (the FQDN with setHostnameAsFQDN)."""
    hostname, domain = hostname_and_domain(pod, cluster_domain)
    if not domain or spec(pod).get("setHostnameAsFQDN") is not True:
        return hostname
    fqdn = f"{hostname}.{domain}"
    if len(fqdn) > FQDN_MAX:
        raise ContainerCreateError(
            "failed to construct FQDN from pod hostname and cluster domain, "
            f"FQDN {fqdn} is too long ({FQDN_MAX} characters is the max, {len(fqdn)} characters requested)"
        )
    return fqdn


def managed_hosts(
    pod_ips: Sequence[str], hostname: str, domain: str, aliases: Sequence[Mapping[str, Any]]
) -> str:
    """managedHostsFileContent, byte for byte."""
    lines = [
        MANAGED_HOSTS_HEADER,
        "127.0.0.1\tlocalhost\n",
        "::1\tlocalhost ip6-localhost ip6-loopback\n",
        "fe00::0\tip6-localnet\n",
        "fe00::0\tip6-mcastprefix\n",
        "fe00::1\tip6-allnodes\n",
        "fe00::2\tip6-allrouters\n",
    ]
    for ip in pod_ips:
        lines.append(f"{ip}\t{hostname}.{domain}\t{hostname}\n" if domain else f"{ip}\t{hostname}\n")
    return "".join(lines) + _alias_entries(aliases)


def _alias_entries(aliases: Sequence[Mapping[str, Any]]) -> str:
    """hostsEntriesFromHostAliases: one line per alias IP, after a comment."""
    if not aliases:
        return ""
    lines = ["\n# Entries added by HostAliases.\n"]
    lines.extend(
        f"{a.get('ip', '')}\t{chr(9).join(str(h) for h in a.get('hostnames') or [])}\n" for a in aliases
    )
    return "".join(lines)


def node_hosts(node_hosts_text: str, aliases: Sequence[Mapping[str, Any]]) -> str:
    """nodeHostsFileContent: a host-network pod's /etc/hosts is the node's, after a header,
    with the pod's hostAliases appended."""
    return MANAGED_HOSTS_HEADER_HOST_NETWORK + node_hosts_text + _alias_entries(aliases)


def pod_hosts_file(
    pod: Mapping[str, Any], pod_ips: Sequence[str], cluster_domain: str, node_hosts_text: str = ""
) -> str:
    """The managed /etc/hosts of a pod: on its own network with these IPs (its FQDN in the
    node's `cluster_domain`), or, for a host-network pod, the node's file (`node_hosts_text`)
    with the pod's hostAliases."""
    aliases = list(spec(pod).get("hostAliases") or [])
    if spec(pod).get("hostNetwork"):
        return node_hosts(node_hosts_text, aliases)
    hostname, domain = hostname_and_domain(pod, cluster_domain)
    return managed_hosts(pod_ips, hostname, domain, aliases)


def mounts_own_hosts(container: Mapping[str, Any]) -> bool:
    """makeMounts: a container that mounts a volume at /etc/hosts keeps it."""
    return any(m.get("mountPath") == ETC_HOSTS for m in container.get("volumeMounts") or [])
