"""A running container instance as the runtime reports it, for pure tests of resize and status.

What lives here: `running(resources, name, role)`: a RUNNING `ContainerInstance` of busybox whose
runtime id is `<name>-0`, with the cgroup limits `resources` (None: not known).
Must not: talk to an engine.
"""

from __future__ import annotations

from vk_provider.runtime.types import ContainerInstance, ContainerRole, ContainerRunState, LinuxResources


def running(
    resources: LinuxResources | None, name: str = "main", role: ContainerRole = ContainerRole.APP
) -> ContainerInstance:
    return ContainerInstance(
        name=name,
        role=role,
        attempt=0,
        container_id=f"{name}-0",
        image="busybox:1",
        image_id="sha256:1",
        state=ContainerRunState.RUNNING,
        container_uri=f"docker://{name}-0",
        resources=resources,
    )
