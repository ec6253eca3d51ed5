"""The Docker implementation of the Runtime protocol (docker-py behind a bounded thread pool).

What lives here: the package's public name, `DockerRuntime`. Must not: be imported from
outside `vk_provider/runtime/docker/` except by `runtime/build.py`, the one place that
picks the engine; everything else depends on `vk_provider.runtime.protocol` only.
"""

from vk_provider.runtime.docker.runtime import DockerRuntime

__all__ = ["DockerRuntime"]
