"""One container instance of a pod, as the pod workers hand it to the kuberuntime layer.

What lives here: `launch(pod, ...)`, a `ContainerLaunch` of the pod's container at `index` of the
list its `role` is declared in (containers, initContainers, ephemeralContainers), in the sandbox
`sb` (with `ip`), attempt `attempt`, with the resolved `env`, `command` and `args` the workers
would give it and an ephemeral container's `target`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.runtime.types import ContainerRole, PodSandboxState, spec_list


def launch(
    pod: Mapping[str, Any],
    index: int = 0,
    *,
    role: ContainerRole = ContainerRole.APP,
    attempt: int = 0,
    env: tuple[tuple[str, str], ...] = (),
    command: tuple[str, ...] | None = None,
    args: tuple[str, ...] | None = None,
    ip: str = "",
    target: str = "",
) -> ContainerLaunch:
    return ContainerLaunch(
        pod=pod,
        container=pod["spec"][spec_list(role)][index],
        role=role,
        attempt=attempt,
        env=env,
        command=command,
        args=args,
        sandbox=PodSandboxState(container_id="sb", running=True, ip=ip),
        target_container_id=target,
    )
