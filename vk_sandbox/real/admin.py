"""HTTPS requests to the real apiserver as the sandbox's admin (a `system:masters` certificate).

What lives here: `AdminAPI`, a small JSON client over aiohttp for what the sandbox itself
does against its cluster (wait for `/readyz`, apply the providers' RBAC with server-side
apply, request service-account tokens), and `ApiError`. Must not: be used by the providers;
they get credentials of their own (`identities`).
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp

FIELD_MANAGER = "vk-provider-sandbox"


class ApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}")
        self.status = status


class AdminAPI:
    def __init__(self, url: str, ca_file: Path, cert: Path, key: Path) -> None:
        self.url = url
        ctx = ssl.create_default_context(cafile=str(ca_file))
        ctx.load_cert_chain(str(cert), str(key))
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ctx), timeout=aiohttp.ClientTimeout(total=30)
        )

    async def close(self) -> None:
        await self._session.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        async with self._session.request(
            method, self.url + path, data=data, headers=headers, params=params
        ) as resp:
            return resp.status, await resp.text()

    async def call(self, method: str, path: str, body: Any = None, **kw: Any) -> dict[str, Any]:
        status, text = await self.request(method, path, body, **kw)
        if status >= 300:
            raise ApiError(status, text)
        answer = json.loads(text) if text else {}
        return answer if isinstance(answer, dict) else {}

    async def apply(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply of `obj` at its object path (created or updated)."""
        return await self.call(
            "PATCH",
            path,
            obj,
            content_type="application/apply-patch+yaml",
            params={"fieldManager": FIELD_MANAGER, "force": "true"},
        )
