"""The kubelet API's `/logs/`: node log query and the node's log directory, as the 1.37 kubelet.

What lives here: `node_logs_handler(settings)`, the aiohttp handler of `/logs` and `/logs/...`,
after k8s.io/kubernetes@v1.37.2 pkg/kubelet/kubelet.go (Run: the logServer),
kubelet_server_journal.go and kubelet_server_journal_linux.go, server/server.go
(InstallSystemLogHandler):
- `enableSystemLogHandler` off: 405 `logs endpoint is disabled.`;
- on, with `enableSystemLogQuery` off, or a request with no query parameter: the files of the log
  directory (`/var/log`), as Go's http.FileServer serves them (a listing for a directory);
- query mode: `?query=vk-provider` is this provider's own recent lines (log_ring.py), filtered by
  `sinceTime`, `untilTime`, `pattern`, then `tailLines`; another service is the host's journald
  unit when `journalctl` knows it (the kubelet's arguments), else the files
  `<dir>/<svc>`, `<svc>.log`, `<svc>/<svc>.log`; `query=<file>` with a slash is that file. Output
  gzip-compressed when the request asks for exactly `gzip`; 30 s at most per request.
Authorization (`nodes/log`) is the auth middleware's. Must not: run anything through a shell, or
serve a path that resolves outside the log directory.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import urllib.parse
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from vk_common.log_ring import PROCESS_LOG
from vk_provider.kubeletapi.node_log_query import NodeLogQuery, aggregate, inside, parse_query, validate

OWN_SERVICE = "vk-provider"  # the query that names this provider's own log
COPY_DEADLINE = 30.0  # kubelet_server_journal.go Copy: context.WithDeadline(30 s)
_DATE_LAYOUT = "%Y-%m-%d %H:%M:%S"  # journalctl --since/--until (Go's "2006-1-2 15:4:5"), in the zone given
_CHUNK = 64 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class NodeLogSettings:
    handler_enabled: bool
    query_enabled: bool
    log_dir: Path


def _text(status: int, message: str) -> web.Response:
    """Go's http.Error: the message and a newline, as text/plain."""
    return web.Response(status=status, text=message + "\n", content_type="text/plain", charset="utf-8")


def node_logs_handler(settings: NodeLogSettings) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        if not settings.handler_enabled:
            return _text(405, "logs endpoint is disabled.")
        path = request.path[len("/logs") :].lstrip("/")
        if not settings.query_enabled:
            return await _serve_file(request, settings.log_dir, path)
        query, errors = parse_query({k: request.query.getall(k) for k in request.query})
        if errors:
            return _text(400, aggregate(errors))
        if query is None:
            return await _serve_file(request, settings.log_dir, path)
        if path:
            return _text(406, "path not allowed in query mode")
        if problems := validate(query, settings.log_dir):
            return _text(406, aggregate(problems))
        if query.services:
            return await _serve_services(request, query, settings.log_dir)
        return await _serve_file(request, settings.log_dir, query.files[0].replace("\\", "/"))

    return handler


# --- the log directory as files ---------------------------------------------------------------


def _listing(directory: Path) -> str:
    """Go's http.FileServer dirList: the names, sorted, directories with a trailing slash."""
    rows = []
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        name = entry.name + ("/" if entry.is_dir() else "")
        rows.append(f'<a href="{urllib.parse.quote(name)}">{html.escape(name)}</a>\n')
    return '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n' + "".join(
        rows
    ) + "</pre>\n"  # fmt: skip


async def _serve_file(request: web.Request, log_dir: Path, relative: str) -> web.StreamResponse:
    target = inside(log_dir, relative)
    if target is None or not target.exists():
        return _text(404, "404 page not found")
    if target.is_dir():
        if relative and not request.path.endswith("/"):  # FileServer: a directory ends with /
            raise web.HTTPMovedPermanently(location=request.path.rsplit("/", 1)[-1] + "/")
        try:
            body = await asyncio.to_thread(_listing, target)
        except OSError:
            return _text(500, "Error reading directory")
        return web.Response(text=body, content_type="text/html", charset="utf-8")
    try:
        return web.FileResponse(target, headers={"Content-Type": "text/plain; charset=utf-8"})
    except OSError:
        return _text(403, "403 Forbidden")


# --- query mode: services ------------------------------------------------------------------------


class _Output:
    """The query's answer: text/plain, gzip-compressed when the client asked for exactly gzip."""

    def __init__(self, response: web.StreamResponse, compress: bool) -> None:
        self.response = response
        # gzip.BestSpeed, as the kubelet's writer; wbits 31: the gzip container
        self._compressor = zlib.compressobj(1, zlib.DEFLATED, 31) if compress else None

    async def write(self, data: bytes) -> None:
        if data:
            await self.response.write(self._compressor.compress(data) if self._compressor else data)

    async def close(self) -> None:
        if self._compressor is not None:
            await self.response.write(self._compressor.flush())
        await self.response.write_eof()


async def _serve_services(request: web.Request, query: NodeLogQuery, log_dir: Path) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/plain;charset=UTF-8"})
    compress = request.headers.get("Accept-Encoding") == "gzip"
    if compress:
        response.headers["Content-Encoding"] = "gzip"
    await response.prepare(request)
    out = _Output(response, compress)
    try:
        async with asyncio.timeout(COPY_DEADLINE):
            await _copy(out, query, log_dir)
    except TimeoutError:
        await out.write(b"\ncontext error: context deadline exceeded\n")
    await out.close()
    return response


async def _copy(out: _Output, query: NodeLogQuery, log_dir: Path) -> None:
    """copyForBoot: the provider's own log and journald units first, then the file loggers."""
    files: list[str] = []
    journal: list[str] = []
    for service in query.services:
        if service == OWN_SERVICE:
            await out.write(_own_lines(query))
        elif await _journal_knows(service):
            journal.append(service)
        else:
            files.append(service)
    if journal:
        await _copy_journal(out, query, journal)
    if files and query.has_options:
        names = "[" + " ".join(files) + "]"
        note = (
            f"\noptions present and query resolved to log files for {names}\ntry without specifying options\n"
        )
        await out.write(note.encode())
        return
    for service in files:
        await out.write(await asyncio.to_thread(_service_file, log_dir, service))


def _own_lines(query: NodeLogQuery) -> bytes:
    """This provider's recent lines, as journalctl filters a unit's: since, until, grep, tail."""
    if query.boot is not None and query.boot < 0:
        return b""  # an earlier run of the process: its lines went with it
    pattern = re.compile(query.pattern) if query.pattern else None
    since = query.since.timestamp() if query.since else None
    until = query.until.timestamp() if query.until else None
    lines = [
        line.text
        for line in PROCESS_LOG.lines()
        if (since is None or line.created >= since)
        and (until is None or line.created <= until)
        and (pattern is None or pattern.search(line.text))
    ]
    if query.tail_lines is not None:
        lines = lines[len(lines) - query.tail_lines :] if query.tail_lines else []
    return "".join(line + "\n" for line in lines).encode()


def _service_file(log_dir: Path, service: str) -> bytes:
    """heuristicsCopyFileLogs: `<svc>`, `<svc>.log`, `<svc>/<svc>.log`, the first that is a file."""
    for name in (service, f"{service}.log", f"{service}/{service}.log"):
        target = inside(log_dir, name)
        if target is None or not target.is_file():
            continue
        try:
            return target.read_bytes()
        except OSError as exc:
            return f"\nerror getting log for {service}: {exc.strerror}\n".encode()
    return f"\nlog not found for {service}\n".encode()


async def _run(args: list[str]) -> asyncio.subprocess.Process | None:
    try:
        return await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
    except OSError:  # no journalctl on this host
        return None


async def _journal_knows(service: str) -> bool:
    """checkForNativeLogger: journald has a unit `<service>.service`."""
    proc = await _run(["journalctl", "--field", "_SYSTEMD_UNIT"])
    if proc is None:
        return False
    try:
        output, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
    return proc.returncode == 0 and f"{service}.service" in output.decode(errors="replace")


async def _copy_journal(out: _Output, query: NodeLogQuery, services: list[str]) -> None:
    """copyServiceLogs: journalctl with the kubelet's arguments, its output as it comes."""
    args = ["journalctl", "--utc", "--no-pager", "--output=short-precise"]
    if query.since:
        args.append("--since=" + query.since.strftime(_DATE_LAYOUT))
    if query.until:
        args.append("--until=" + query.until.strftime(_DATE_LAYOUT))
    if query.tail_lines is not None:
        args += ["--pager-end", f"--lines={query.tail_lines}"]
    args += [f"--unit={service}" for service in services]
    if query.pattern:
        args.append("--grep=" + query.pattern)
    if query.boot is not None:
        args += ["--boot", str(query.boot)]
    proc = await _run(args)
    if proc is None or proc.stdout is None:
        if not query.boot:
            await out.write(b"\nerror: journal output not available\n")
        return
    try:
        while chunk := await proc.stdout.read(_CHUNK):
            await out.write(chunk)
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
