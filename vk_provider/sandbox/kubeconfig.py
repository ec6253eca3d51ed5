"""Writing a kubeconfig for the sandbox's API server.

What lives here: `kubeconfig_dict(server_url)` and `write_kubeconfig(path, server_url)`. The
server is plain HTTP on loopback, so the file has no credentials and no CA; cluster, user and
context are all named `vk-sandbox`. Readable by kubectl and kubernetes_asyncio.
Must not: start anything or touch files other than the one it is asked to write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CONTEXT_NAME = "vk-sandbox"


def kubeconfig_dict(server_url: str) -> dict[str, Any]:
    """The kubeconfig (clientcmd v1 Config) for `server_url`, as a dict."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CONTEXT_NAME, "cluster": {"server": server_url}}],
        "users": [{"name": CONTEXT_NAME, "user": {}}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT_NAME,
    }


def write_kubeconfig(path: Path, server_url: str) -> Path:
    """Write the kubeconfig atomically (mode 0600, like kubectl's own files) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig_dict(server_url), sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path
