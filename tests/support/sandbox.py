"""Helpers for tests that need a running sandbox API server.

Use in an async test (pytest-asyncio runs in auto mode):

    from tests.support.sandbox import running_sandbox, api_client

    async def test_something(tmp_path):
        async with running_sandbox(tmp_path) as sandbox:        # started, kubeconfig written
            # sandbox.url, sandbox.store (direct Store access), sandbox.kubeconfig (Path)
            async with api_client(sandbox) as api:              # kubernetes_asyncio ApiClient
                v1 = kubernetes_asyncio.client.CoreV1Api(api)
                await v1.list_namespaced_pod("default")

`running_sandbox(tmp_path, **kwargs)` passes kwargs to `SandboxServer` (e.g. `controllers=False`
to run without the scheduler and node lifecycle, `debug=True` for fault injection and
counters, `node_monitor_grace_seconds=2`). Its state lives under `tmp_path/sandbox` (pass
`state_dir=None` for a purely in-memory one). The kubeconfig is `tmp_path/sandbox/kubeconfig`
and is what `kubectl --kubeconfig` or the provider's config should point at; it names the
sandbox CA (the API is HTTPS) and carries the admin bearer token, which every API request needs.
For raw HTTP, `admin_session(sandbox)` is an aiohttp session that trusts the CA and sends the
token; `tls_session(sandbox)` trusts the CA and sends no credentials.
The fixture `sandbox` (tests/support/fixtures_sandbox.py, a plugin every test sees) gives a
started default sandbox in one line. Must not: assert anything about the sandbox.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config

from vk_sandbox.server import SandboxServer


class RunningSandbox(SandboxServer):
    kubeconfig: Path


@contextlib.asynccontextmanager
async def running_sandbox(tmp_path: Path, **kwargs: Any) -> AsyncIterator[RunningSandbox]:
    base = Path(tmp_path) / "sandbox"
    kwargs.setdefault("state_dir", base)
    server = RunningSandbox(**kwargs)
    await server.start()
    try:
        server.kubeconfig = server.write_kubeconfig(base / "kubeconfig")
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def api_client(server: RunningSandbox) -> AsyncIterator[client.ApiClient]:
    """A kubernetes_asyncio ApiClient configured from the sandbox's kubeconfig."""
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(server.kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        yield api


def tls_session(server: SandboxServer, **kwargs: Any) -> aiohttp.ClientSession:
    """An aiohttp session that trusts the sandbox CA, without credentials."""
    context = ssl.create_default_context(cafile=str(server.pki.ca_cert_path))
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context), **kwargs)


def admin_session(server: SandboxServer, **kwargs: Any) -> aiohttp.ClientSession:
    """A `tls_session` whose requests carry the admin token (as kubectl's, from the kubeconfig)."""
    return tls_session(server, headers={"Authorization": f"Bearer {server.admin_token}"}, **kwargs)
