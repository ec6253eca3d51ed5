"""The Docker implementation of the Runtime protocol (docker-py behind a bounded thread pool).

What lives here: the package's public name, `DockerRuntime`. Must not: be imported by pod
workers directly; they depend on `vk_provider.runtime.protocol` only.
"""

from vk_provider.runtime.docker.runtime import DockerRuntime

__all__ = ["DockerRuntime"]
