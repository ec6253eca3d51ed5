"""The state every sandbox API handler is called with, and the request's object name.

What lives here: `ApiContext` (the store, the PKI, the service account token key) and `name_of`.
Must not: handle requests (reads.py, verbs.py, watch.py, subresources.py, auth.py do).
"""

from __future__ import annotations

from dataclasses import dataclass

from vk_sandbox.api.requestinfo import RequestInfo
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.pki.authority import SandboxPKI
from vk_sandbox.storage.store import Store


@dataclass
class ApiContext:
    store: Store
    pki: SandboxPKI
    token_key: bytes


def name_of(ri: RequestInfo, info: ResourceInfo) -> tuple[str | None, str]:
    """(namespace or None for a cluster-scoped resource, name) the request names."""
    return (ri.namespace if info.namespaced else None), ri.name
