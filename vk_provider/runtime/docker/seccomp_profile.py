"""A container's Localhost seccomp profile, read from its file on this host for the engine.

What lives here: `localhost_profile_json`, the profile under `docker.seccompProfileRoot` that a
container's resolved security names, read and sent as compact JSON text, as the Docker CLI sends
`--security-opt seccomp=<file>` (the engine may not see the file). Blocking: callers run it in
the engine's pool. Must not: decide which profile applies (kuberuntime/security.py did).
"""

from __future__ import annotations

import json

from vk_provider.runtime.configs import LOCALHOST, ContainerConfig
from vk_provider.runtime.types import ContainerConfigError

SECCOMP_PROFILE_MAX_BYTES = 1 << 20  # a Localhost seccomp profile read for a container


def localhost_profile_json(config: ContainerConfig) -> str | None:
    """The profile's text, None when the container's profile is not Localhost; a missing,
    unreadable, oversized or non-JSON file is a ContainerConfigError naming the field."""
    profile = config.security.seccomp
    if profile is None or profile.type != LOCALHOST:
        return None
    where, path = profile.field, profile.localhost
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(SECCOMP_PROFILE_MAX_BYTES + 1)
        if len(text) > SECCOMP_PROFILE_MAX_BYTES:
            raise ValueError(f"larger than {SECCOMP_PROFILE_MAX_BYTES} bytes")
        return json.dumps(json.loads(text), separators=(",", ":"))
    except OSError as exc:
        raise ContainerConfigError(f'{where}: cannot load seccomp profile "{path}": {exc.strerror}') from exc
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError too
        raise ContainerConfigError(f'{where}: seccomp profile "{path}" is not JSON: {exc}') from exc
