"""Writing a kubeconfig for the sandbox's API server.

What lives here: `kubeconfig_dict(server_url, ...)` and `write_kubeconfig(path, server_url, ...)`.
Both control planes serve HTTPS: the files name the CA and a client certificate or a bearer
token (`Credentials`; the emulator's is its admin token). Without credentials the file names
neither (a plain-HTTP server).
Cluster, user and context are all named `vk-sandbox`. Readable by kubectl and kubernetes_asyncio.
Must not: start anything or touch files other than the one it is asked to write.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CONTEXT_NAME = "vk-sandbox"


@dataclass(frozen=True)
class Credentials:
    """How a client of an HTTPS apiserver proves who it is, and which CA it trusts."""

    ca_file: Path
    client_cert: Path | None = None
    client_key: Path | None = None
    token: str | None = None


def kubeconfig_dict(server_url: str, credentials: Credentials | None = None) -> dict[str, Any]:
    """The kubeconfig (clientcmd v1 Config) for `server_url`, as a dict."""
    cluster: dict[str, Any] = {"server": server_url}
    user: dict[str, Any] = {}
    if credentials is not None:
        cluster["certificate-authority"] = str(credentials.ca_file)
        if credentials.client_cert is not None and credentials.client_key is not None:
            user["client-certificate"] = str(credentials.client_cert)
            user["client-key"] = str(credentials.client_key)
        if credentials.token is not None:
            user["token"] = credentials.token
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CONTEXT_NAME, "cluster": cluster}],
        "users": [{"name": CONTEXT_NAME, "user": user}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT_NAME,
    }


def write_kubeconfig(path: Path, server_url: str, credentials: Credentials | None = None) -> Path:
    """Write the kubeconfig atomically (mode 0600, like kubectl's own files) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig_dict(server_url, credentials), sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path
