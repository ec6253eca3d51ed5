"""What a runtime is asked to make: fully resolved, engine-neutral sandbox and container configurations.

What lives here: the values the kuberuntime layer (`vk_provider.kuberuntime`) compiles a pod
into and a `Runtime` applies, as the CRI's PodSandboxConfig and ContainerConfig are between
the kubelet and a container runtime: `ResolvConf` (the CRI's DNSConfig).
Must not: hold a Kubernetes rule or import an engine: these are values, decided above and
translated below.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResolvConf:
    """A resolver configuration: a parsed resolv.conf, or what a pod's sandbox gets (the CRI's
    DNSConfig). Options are `name` or `name:value`."""

    servers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
