"""Which container engine the tests run on: Docker (default) or Podman's API service.

What lives here: `engine_under_test()` ("docker" or "podman", from `--engine`, which tests/conftest.py
puts in `$VK_TEST_ENGINE`; with podman it also points `$DOCKER_HOST` at `PODMAN_SOCKET`, so the
runtimes, providers and docker-py clients of the tests all reach Podman), and `host_env()`, the
environment for the set-up scripts, which always talk to the Docker engine (the test images are
built there and loaded into Podman's store by scripts/ensure-podman.sh).
Must not: start an engine (the `docker_client` fixture runs the scripts).
"""

from __future__ import annotations

import os

ENGINE_ENV = "VK_TEST_ENGINE"
PODMAN_SOCKET = "unix:///run/podman/podman.sock"


def engine_under_test() -> str:
    return os.environ.get(ENGINE_ENV, "docker")


def host_env() -> dict[str, str]:
    """This process's environment without `$DOCKER_HOST`: the scripts' `docker` is Docker's."""
    return {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
