"""Creating a container from docker-py's `containers.create` keyword arguments, without stray volumes.

What lives here: `create_request`, the query and body of the engine's `POST /containers/create`
that docker-py's `ContainerCollection.create` would send for the same keyword arguments (made
with docker-py's own helpers), for `Engine.request` on the event loop; and `create_container`,
which sends it with docker-py (blocking, for code already on an engine thread) and gives a
`Container` back. Neither declares container volumes
for the binds. docker-py (`docker/models/containers.py` `_host_volume_from_bind`) reads the
container path of a bind `src:dst:mode` only when the mode is exactly `ro` or `rw`; for any
other mode, such as the `rw,nocopy` of every emptyDir or the `ro,rslave` of a propagated
hostPath, it declares `dst:rw,nocopy` itself as a volume, and the engine makes an anonymous
volume at that odd path in the container, next to the real bind. Binds need no declaration
(the engine mounts `HostConfig.Binds` as they are), so none is sent. Nor does it inspect the
new container, as docker-py does before it returns: the `Container` holds only its ID (enough to
start, remove or copy files), one Docker call fewer per container. On request a container
that joins a sandbox's network joins its UTS namespace (its hostname) too. `create_container`
blocks: call it in the engine's pool. Must not: change any other argument.
"""

from __future__ import annotations

from typing import Any

import docker
from docker.models.containers import Container, _create_container_args
from docker.utils.utils import format_environment


def create_request(
    client: docker.DockerClient, image: str, *, share_uts: bool = False, **kwargs: Any
) -> tuple[dict[str, str], dict[str, Any]]:
    """The query (`name`, `platform`) and body that `client.containers.create(image, **kwargs)`
    would send, its binds mounted without declared volumes. `share_uts`: a container that joins
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
    # What APIClient.create_container does before create_container_config (docker/api/container.py).
    params = {"name": create_kwargs.pop("name", None), "platform": create_kwargs.pop("platform", None)}
    environment = create_kwargs.pop("environment", None)
    if isinstance(environment, dict):
        environment = format_environment(environment)
    if create_kwargs.pop("use_config_proxy", True):
        environment = client.api._proxy_configs.inject_proxy_environment(environment) or None
    create_kwargs.setdefault("command", None)  # create_container's default; the config requires it
    body: dict[str, Any] = client.api.create_container_config(environment=environment, **create_kwargs)
    return {k: v for k, v in params.items() if v}, body


def create_container(
    client: docker.DockerClient, image: str, *, share_uts: bool = False, **kwargs: Any
) -> Container:
    """`client.containers.create(image, **kwargs)` as `create_request` makes it, and not
    inspected: its `attrs` hold the `Id` alone."""
    params, body = create_request(client, image, share_uts=share_uts, **kwargs)
    api = client.api
    created = api._result(api._post_json(api._url("/containers/create"), data=body, params=params), True)
    return client.containers.prepare_model({"Id": created["Id"]})
