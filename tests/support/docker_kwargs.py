"""A pod's Docker create arguments along the whole way: compiled by kuberuntime, translated by runtime/docker.

What lives here: `container_create_kwargs(launch, ...)`, `sandbox_create_kwargs(pod, ...)`,
`resource_kwargs(container, field)`, `emptydir_volumes(pod, node)` and
`security_kwargs(pod, container, field, ...)`: what Docker is asked for a
pod or one of its containers, the pod first compiled into its configurations
(`kuberuntime.container_config`, `kuberuntime.sandbox_config`, `kuberuntime.resources`) with the
image's user, the Localhost seccomp root, the cluster domain and the node's /etc/hosts the pod
workers would bring, then translated (`runtime.docker.spec`). For the unit tests of the rules
whose effect a user sees in the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.config import DockerConfig
from vk_provider.kuberuntime.container_config import ContainerLaunch, container_config
from vk_provider.kuberuntime.dns import DEFAULT_CLUSTER_DOMAIN
from vk_provider.kuberuntime.resources import linux_resources
from vk_provider.kuberuntime.sandbox_config import sandbox_config
from vk_provider.kuberuntime.security import container_security
from vk_provider.runtime.configs import ResolvConf
from vk_provider.runtime.docker import security_options, spec

CLUSTER_DOMAIN = DEFAULT_CLUSTER_DOMAIN


def container_create_kwargs(
    launch: ContainerLaunch,
    *,
    node_name: str,
    termination_file: str | None,
    image_user: str | None = None,
    seccomp_root: str = "",
    cluster_domain: str = CLUSTER_DOMAIN,
    node_hosts_text: str = "",
    **docker: Any,
) -> dict[str, Any]:
    """`docker`: the shell's part (volumes_root, resolve_subpath, seccomp_json, hosts_file, ...)."""
    config = container_config(
        launch,
        image_user=image_user,
        seccomp_root=seccomp_root,
        cluster_domain=cluster_domain,
        node_hosts_text=node_hosts_text,
    )
    return spec.container_create_kwargs(
        config, node_name=node_name, termination_file=termination_file, **docker
    )


def sandbox_create_kwargs(
    pod: Mapping[str, Any],
    *,
    node_name: str,
    config: DockerConfig,
    attempt: int,
    dns: ResolvConf | None = None,
    cluster_domain: str = CLUSTER_DOMAIN,
    network: str = "",
) -> dict[str, Any]:
    return spec.sandbox_create_kwargs(
        sandbox_config(pod, dns, (), cluster_domain),
        node_name=node_name,
        docker=config,
        attempt=attempt,
        network=network,
    )


def resource_kwargs(container: Mapping[str, Any], field: str) -> dict[str, Any]:
    return spec.resource_kwargs(linux_resources(container, field))


def emptydir_volumes(pod: Mapping[str, Any], node_name: str) -> list[spec.VolumeSpec]:
    return spec.emptydir_volumes(sandbox_config(pod, None, (), CLUSTER_DOMAIN), node_name)


def security_kwargs(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    field: str,
    image_user: str | None = None,
    seccomp_json: str | None = None,
    seccomp_root: str = "/var/lib/kubelet/seccomp",
) -> dict[str, Any]:
    """The container's security create kwargs; `seccomp_json` the text of a Localhost profile,
    which the shell reads from under `seccomp_root`."""
    security = container_security(pod, container, field, image_user, seccomp_root)
    return security_options.security_kwargs(security, seccomp_json)
