"""Creating a container from docker-py's `containers.create` keyword arguments, without stray volumes.

What lives here: `create_container`, which does what docker-py's `ContainerCollection.create`
does (the same keyword arguments, a `Container` back) but declares no container volumes
for the binds. docker-py (`docker/models/containers.py` `_host_volume_from_bind`) reads the
container path of a bind `src:dst:mode` only when the mode is exactly `ro` or `rw`; for any
other mode, such as the `rw,nocopy` of every emptyDir or the `ro,rslave` of a propagated
hostPath, it declares `dst:rw,nocopy` itself as a volume, and the engine makes an anonymous
volume at that odd path in the container, next to the real bind. Binds need no declaration
(the engine mounts `HostConfig.Binds` as they are), so none is sent. Nor does it inspect the
new container, as docker-py does before it returns: the `Container` holds only its ID (enough to
start, remove or copy files), one Docker call fewer per container. On request it has a container
that joins a sandbox's network join its UTS namespace (its hostname) too. Blocking: call it in the
engine's pool. Must not: change any other argument.
"""

from __future__ import annotations

from typing import Any

import docker
from docker.models.containers import Container, _create_container_args


def create_container(
    client: docker.DockerClient, image: str, *, share_uts: bool = False, **kwargs: Any
) -> Container:
    """`client.containers.create(image, **kwargs)`, its binds mounted without declared volumes,
    and not inspected: its `attrs` hold the `Id` alone. `share_uts`: a container that joins
    another's network namespace (`network_mode="container:<id>"`) joins its UTS namespace too,
    by `HostConfig.UTSMode` (Docker does so by itself; Podman only when told, and docker-py
    takes no `container:` UTS mode)."""
    kwargs["image"] = image
    kwargs["version"] = client.api._version
    network_mode = str(kwargs.get("network_mode") or "")
    create_kwargs = _create_container_args(kwargs)
    create_kwargs.pop("volumes", None)
    if share_uts and network_mode.startswith("container:"):
        create_kwargs["host_config"]["UTSMode"] = network_mode
    created = client.api.create_container(**create_kwargs)
    return client.containers.prepare_model({"Id": created["Id"]})
