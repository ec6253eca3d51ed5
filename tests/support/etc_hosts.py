"""What the kubelet writes at the top of every managed /etc/hosts (kubelet_pods.go
managedHostsFileContent), as literal text for the tests to compare with.
Must not: build the rest of the file (the tests write what they expect after it)."""

from __future__ import annotations

MANAGED_HOSTS_PREAMBLE = (
    "# Kubernetes-managed hosts file.\n"
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "fe00::0\tip6-localnet\n"
    "fe00::0\tip6-mcastprefix\n"
    "fe00::1\tip6-allnodes\n"
    "fe00::2\tip6-allrouters\n"
)
