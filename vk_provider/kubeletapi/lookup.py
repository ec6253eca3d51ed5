"""Finding the runtime container a kubelet API request names, with the kubelet's error texts.

What lives here: `find_pod` and `find_container` over the runtime's label-rebuilt pod
states, raising `NotFound` / `BadRequest` with the messages the kubelet's server uses
(`pkg/kubelet/server/server.go`: `pod %q does not exist`, `container %q not found in pod %q`);
the three refusals (`NotFound` 404, `BadRequest` 400, `ServerError` 500) every route raises.
Must not: talk HTTP or stream anything.
"""

from __future__ import annotations

from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerInstance, ContainerRole, PodRuntimeState


class NotFound(Exception):
    """404 with this message."""


class BadRequest(Exception):
    """400 with this message."""


class ServerError(Exception):
    """500 with this message (the kubelet's streaming.WriteError of a plain error)."""


def _recency(state: PodRuntimeState) -> tuple[bool, float]:
    sandbox = state.sandbox
    created = sandbox.created_at.timestamp() if sandbox is not None and sandbox.created_at else 0.0
    return (sandbox is not None and sandbox.running, created)


async def find_pod(runtime: Runtime, namespace: str, name: str) -> PodRuntimeState:
    """The pod's runtime state; when a pod was re-created under the same name while the old
    one's containers remain, the one with a running, newer sandbox."""
    found = [s for s in (await runtime.list_pods()).values() if s.namespace == namespace and s.name == name]
    if not found:
        raise NotFound(f'pod "{name}" does not exist')
    return max(found, key=_recency)


def find_container(pod: PodRuntimeState, container: str, *, previous: bool = False) -> ContainerInstance:
    """The latest instance of an app, init or ephemeral container (or the one before it with
    `previous`): the kubelet's GetContainerLogs / attach / exec find ephemeral containers by name too."""
    roles = (ContainerRole.APP, ContainerRole.INIT, ContainerRole.EPHEMERAL)
    for role in roles:
        latest = pod.latest(container, role)
        if latest is None:
            continue
        if not previous:
            return latest
        before = pod.previous(container, role)
        if before is None:
            raise BadRequest(f'previous terminated container "{container}" in pod "{pod.name}" not found')
        return before
    raise NotFound(f'container "{container}" not found in pod "{pod.name}"')
