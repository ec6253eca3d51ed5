"""The Podman implementation of the Runtime protocol: Podman's API service, through its
Docker-compatible API where that serves and its libpod API where it does not.

What lives here: the package's public name, `PodmanRuntime`. Must not: be imported from
outside `vk_provider/runtime/podman/` except by `runtime/build.py`, the one place that picks
the engine.
"""

from vk_provider.runtime.podman.runtime import PodmanRuntime

__all__ = ["PodmanRuntime"]
