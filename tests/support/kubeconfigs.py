"""Kubeconfig files for tests that need one to pass `vk-provider check-config` / `run`'s checks.

What lives here: `write_kubeconfig(path, server, token=)`, a minimal kubeconfig (one cluster,
one token user, its context current) naming an apiserver that need not exist. Must not: name a
real cluster or credentials, or write anywhere but `path`.
"""

from __future__ import annotations

from pathlib import Path

import yaml


def write_kubeconfig(path: Path, server: str = "https://127.0.0.1:1", token: str = "t") -> Path:
    """A loadable kubeconfig at `path` for `server` (nothing listens on port 1), whose user sends
    the bearer token `token`; returns `path`."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path
