"""Probe handlers: run one exec, httpGet, tcpSocket or grpc probe once.

What lives here: `run_probe(runtime, container, container_id, spec, pod_ip)`, which returns a
`ProbeOutcome` (success or failure, with the kubelet-style output that goes into the
`Unhealthy` Event) and raises `ProbeError` when the probe could not be run at all (the
kubelet then throws the result away). Must not: apply thresholds or emit Events.

Upstream: pkg/kubelet/prober/prober.go (runProbe) and pkg/probe/{exec,http,tcp}/; the gRPC
health call is probes/grpc_health.py's (pkg/probe/grpc/).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp

from vk_common.kube_version import KUBE_MINOR_VERSION
from vk_provider.probes.grpc_health import grpc_probe
from vk_provider.probes.results import Result
from vk_provider.probes.spec import ProbeSpec
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import RuntimeFailure

MAX_OUTPUT = 10 * 1024  # pkg/probe: at most 10 KiB of output or body is kept
USER_AGENT = f"kube-probe/{KUBE_MINOR_VERSION}"  # pkg/probe/http/request.go userAgent: <major>.<minor>


@dataclass(frozen=True)
class ProbeOutcome:
    result: Result
    output: str = ""
    warning: bool = False  # a success with a warning (probe.Warning): a ProbeWarning Event


class ProbeError(Exception):
    """The probe could not be run (unknown port, exec impossible): no result."""


def _text(data: bytes) -> str:
    return data[:MAX_OUTPUT].decode("utf-8", "replace")


def resolve_port(container: Mapping[str, Any], port: Any) -> int:
    """A port number, or the containerPort of the container's port with that name."""
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        number = int(port)
    else:
        number = next(
            (int(p["containerPort"]) for p in container.get("ports") or [] if p.get("name") == port), -1
        )
        if number < 0:
            raise ProbeError(f"couldn't find port: {port} in {container.get('name', '')}")
    if not 0 < number < 65536:
        raise ProbeError(f"invalid port number: {number}")
    return number


def _host(handler: Mapping[str, Any], pod_ip: str) -> str:
    host = str(handler.get("host") or pod_ip)
    if not host:
        raise ProbeError("the pod has no IP address yet")
    return host


async def _exec(runtime: Runtime, container_id: str, spec: ProbeSpec) -> ProbeOutcome:
    command = [str(c) for c in spec.handler.get("command") or []]
    try:
        code, output = await runtime.exec_in_container(container_id, command, float(spec.timeout))
    except TimeoutError:
        # pkg/kubelet/cri/remote/remote_runtime.go (ExecSync): a deadline is a failed probe.
        return ProbeOutcome(Result.FAILURE, f'command "{" ".join(command)}" timed out')
    except RuntimeFailure as exc:
        raise ProbeError(exc.message) from exc
    return ProbeOutcome(Result.SUCCESS if code == 0 else Result.FAILURE, _text(output))


def _url(container: Mapping[str, Any], handler: Mapping[str, Any], pod_ip: str) -> str:
    scheme = str(handler.get("scheme") or "HTTP").lower()
    host = _host(handler, pod_ip)
    if ":" in host:
        host = f"[{host}]"
    path = str(handler.get("path") or "/")
    if not path.startswith("/"):
        path = "/" + path
    return f"{scheme}://{host}:{resolve_port(container, handler.get('port'))}{path}"


def _headers(handler: Mapping[str, Any]) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*"}
    for header in handler.get("httpHeaders") or []:
        name = str(header.get("name") or "")
        if name:
            headers[name.title()] = str(header.get("value") or "")
    return headers


MAX_REDIRECTS = 10  # net/http's default, which the prober's CheckRedirect keeps


async def _get_following_local_redirects(
    session: aiohttp.ClientSession, url: str, headers: Mapping[str, str]
) -> tuple[int, bytes]:
    """GET `url`, following redirects to the same host only, as the kubelet's prober does
    (pkg/probe/http/request.go redirectChecker with followNonLocalRedirects false): a redirect
    to another host ends the chain with that 3xx response. (status, body)."""
    host = urlsplit(url).hostname
    for _ in range(MAX_REDIRECTS + 1):
        async with session.get(url, headers=headers, ssl=False, allow_redirects=False) as response:
            body = await response.content.read(MAX_OUTPUT)
            location = response.headers.get("Location")
            if not (300 <= response.status < 400) or not location:
                return response.status, body
            target = urljoin(url, location)
            if urlsplit(target).hostname != host:
                return response.status, body
            url = target
    raise aiohttp.ClientError(f"stopped after {MAX_REDIRECTS} redirects")


async def _http(container: Mapping[str, Any], spec: ProbeSpec, pod_ip: str) -> ProbeOutcome:
    url = _url(container, spec.handler, pod_ip)
    timeout = aiohttp.ClientTimeout(total=float(spec.timeout))
    try:
        async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session:
            status, body = await _get_following_local_redirects(session, url, _headers(spec.handler))
    except TimeoutError:
        return ProbeOutcome(
            Result.FAILURE,
            f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
        )
    except (aiohttp.ClientError, OSError) as exc:
        return ProbeOutcome(Result.FAILURE, f'Get "{url}": {_connect_error(exc)}')
    # pkg/probe/http/http.go DoHTTPProbe: 200-399 is a success; a redirect not followed (to
    # another host) is a success with a warning.
    if 300 <= status < 400:
        return ProbeOutcome(Result.SUCCESS, f"Probe terminated redirects, Response body: {_text(body)}", True)
    if 200 <= status < 400:
        return ProbeOutcome(Result.SUCCESS, _text(body))
    return ProbeOutcome(Result.FAILURE, f"HTTP probe failed with statuscode: {status}")


def _connect_error(exc: BaseException) -> str:
    cause: BaseException = exc
    while not isinstance(cause, OSError) and cause.__cause__ is not None:
        cause = cause.__cause__
    if isinstance(cause, ConnectionRefusedError):
        return "connect: connection refused"
    if isinstance(cause, OSError) and cause.strerror:
        return f"connect: {cause.strerror.lower()}"
    return str(exc) or type(exc).__name__


async def _tcp(container: Mapping[str, Any], spec: ProbeSpec, pod_ip: str) -> ProbeOutcome:
    host = _host(spec.handler, pod_ip)
    port = resolve_port(container, spec.handler.get("port"))
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        async with asyncio.timeout(float(spec.timeout)):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return ProbeOutcome(Result.FAILURE, f"dial tcp {address}: i/o timeout")
    except OSError as exc:
        return ProbeOutcome(Result.FAILURE, f"dial tcp {address}: {_connect_error(exc)}")
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return ProbeOutcome(Result.SUCCESS)


async def _grpc(spec: ProbeSpec, pod_ip: str) -> ProbeOutcome:
    """prober.go: the pod IP (a gRPC probe has no host), the probe's port and service."""
    if not pod_ip:
        raise ProbeError("the pod has no IP address yet")
    handler = spec.handler
    healthy, output = await grpc_probe(
        pod_ip, int(handler.get("port") or 0), str(handler.get("service") or ""), spec.timeout, USER_AGENT
    )
    return ProbeOutcome(Result.SUCCESS if healthy else Result.FAILURE, output)


async def run_probe(
    runtime: Runtime, container: Mapping[str, Any], container_id: str, spec: ProbeSpec, pod_ip: str
) -> ProbeOutcome:
    if spec.kind == "exec":
        return await _exec(runtime, container_id, spec)
    if spec.kind == "httpGet":
        return await _http(container, spec, pod_ip)
    if spec.kind == "tcpSocket":
        return await _tcp(container, spec, pod_ip)
    if spec.kind == "grpc":
        return await _grpc(spec, pod_ip)
    raise ProbeError(f"missing probe handler for {container.get('name', '')}")
