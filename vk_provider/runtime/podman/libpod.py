"""Calls of Podman's own (libpod) API that its Docker-compatible API lacks (pure bodies, one call).

What lives here: `update_body`, an in-place resize's `LinuxResources` as the OCI runtime-spec
resources the libpod update endpoint takes (Podman 4.3 has no compat `/containers/{id}/update`:
it answers 404), and `update_container`, the blocking POST of it on docker-py's API client
(`/v4.0.0/libpod/containers/{id}/update`, the service's own version prefix), for the engine's
pool. Must not: decide which limits a container gets (the kuberuntime layer did), or run on the
event loop (callers go through `Engine.call`).
"""

from __future__ import annotations

import json
from typing import Any

from vk_provider.runtime.types import LinuxResources

LIBPOD_PREFIX = "/v4.0.0/libpod"


def update_body(resources: LinuxResources) -> dict[str, Any]:
    """The memory limit (its swap limit moved with it, as `docker update` does), the CFS quota and
    period, the CPU shares; a limit of 0 (none) is left as it is, as Docker's update leaves it."""
    body: dict[str, Any] = {"cpu": {"shares": resources.cpu_shares}}
    if resources.cpu_quota:
        body["cpu"].update(quota=resources.cpu_quota, period=resources.cpu_period)
    if resources.memory_limit:
        body["memory"] = {"limit": resources.memory_limit, "swap": resources.memory_limit}
    return body


def update_container(api: Any, container_id: str, resources: LinuxResources) -> None:
    """POST the update; docker-py's APIError (with the service's message) when it is refused."""
    url = f"{api.base_url}{LIBPOD_PREFIX}/containers/{container_id}/update"
    response = api._post(
        url, data=json.dumps(update_body(resources)), headers={"Content-Type": "application/json"}
    )
    api._raise_for_status(response)
