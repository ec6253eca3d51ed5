"""Lifecycle hook handlers (preStop): exec, httpGet and sleep, as the kubelet runs them.

What lives here: `run_hook(runtime, container, container_id, handler, timeout, pod_ip)`, which
runs one `lifecycle.preStop` (or postStart) handler and raises `HookError` with the
kubelet's wording when it fails. Must not: decide grace periods or emit Events (the pod
worker does both).

Upstream: pkg/kubelet/lifecycle/handlers.go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp

from vk_provider.runtime.protocol import Runtime


class HookError(Exception):
    pass


def _port(container: Mapping[str, Any], port: Any) -> int:
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for item in container.get("ports") or []:
        if item.get("name") == port:
            return int(item["containerPort"])
    raise HookError(f"couldn't find port: {port} in {container.get('name', '')}")


async def run_hook(
    runtime: Runtime,
    container: Mapping[str, Any],
    container_id: str,
    handler: Mapping[str, Any],
    timeout: float,  # noqa: ASYNC109 - also bounds the exec and the HTTP request
    pod_ip: str,
) -> None:
    name = container.get("name", "")
    if "exec" in handler:
        command = [str(c) for c in handler["exec"].get("command") or []]
        code, output = await runtime.exec_in_container(container_id, command, timeout)
        if code != 0:
            raise HookError(
                f"Exec lifecycle hook ({command}) for Container {name!r} failed - "
                f"error: command exited with {code}, message: {output.decode('utf-8', 'replace')!r}"
            )
    elif "httpGet" in handler:
        get = handler["httpGet"]
        host = get.get("host") or pod_ip or "127.0.0.1"
        scheme = str(get.get("scheme") or "HTTP").lower()
        path = str(get.get("path") or "/")
        if not path.startswith("/"):
            path = "/" + path
        url = f"{scheme}://{host}:{_port(container, get.get('port'))}{path}"
        headers = {h["name"]: h.get("value", "") for h in get.get("httpHeaders") or []}
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
                session.get(url, headers=headers, ssl=False) as response,
            ):
                if response.status >= 400:
                    raise HookError(
                        f"HTTP lifecycle hook ({path}) for Container {name!r} failed - "
                        f"error: status {response.status}"
                    )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise HookError(
                f"HTTP lifecycle hook ({path}) for Container {name!r} failed - error: {exc!r}"
            ) from exc
    elif "sleep" in handler:
        await asyncio.sleep(min(float(handler["sleep"].get("seconds", 0)), timeout))
    else:
        raise HookError(f"invalid handler: {sorted(handler)}")
