"""`/exec/{namespace}/{pod}/{container}` and `/attach/...` over the WebSocket channel protocols.

What lives here: `stream_handler`, which checks the request (options, pod, running
container, a WebSocket upgrade offering v5/v4.channel.k8s.io), upgrades, opens a Docker
exec or attach session and copies channel frames both ways: engine output to channels 1
and 2, channel 0 to the process's stdin, channel 4 to a TTY resize, v5's `[255, 0]` to
closing stdin, and at the end one Status on channel 3 (the exit code for exec) before a
normal close. Must not: speak to Docker itself (docker_streams.py) or parse queries (channels.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Literal

from aiohttp import WSMsgType, web

from vk_provider.kubeletapi import channels as ch
from vk_provider.kubeletapi.docker_streams import DockerSession, DockerStreams, StreamError
from vk_provider.kubeletapi.lookup import BadRequest, find_container, find_pod
from vk_provider.logging import get_logger
from vk_provider.runtime.protocol import Runtime
from vk_provider.runtime.types import ContainerRunState

log = get_logger("kubeletapi.exec")

Kind = Literal["exec", "attach"]


def _is_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


async def stream_handler(
    request: web.Request, runtime: Runtime, streams: DockerStreams | None, kind: Kind
) -> web.StreamResponse:
    opts = ch.parse_stream_options(request.query, needs_command=kind == "exec")
    info = request.match_info
    pod = await find_pod(runtime, info["namespace"], info["pod"])
    instance = find_container(pod, info["container"])
    if instance.state != ContainerRunState.RUNNING:
        raise BadRequest(f'container "{instance.name}" in pod "{pod.name}" is not running')
    if streams is None:
        raise web.HTTPNotImplemented(text=f"{kind} needs a Docker runtime")
    if not _is_websocket(request):
        raise BadRequest(
            f"{kind} needs a WebSocket upgrade with subprotocol {' or '.join(ch.SUBPROTOCOLS)};"
            " SPDY/3.1 is not implemented by this kubelet"
        )
    ws = web.WebSocketResponse(protocols=ch.SUBPROTOCOLS, autoping=True, max_msg_size=0)
    ready = ws.can_prepare(request)
    if not ready.ok or ready.protocol is None:
        raise BadRequest(
            f"unsupported WebSocket subprotocol; this kubelet speaks {', '.join(ch.SUBPROTOCOLS)}"
        )
    await ws.prepare(request)
    try:
        if kind == "exec":
            session = await streams.exec(
                instance.container_id,
                list(opts.command),
                stdin=opts.stdin,
                stdout=opts.stdout,
                stderr=opts.stderr,
                tty=opts.tty,
            )
        else:
            session = await streams.attach(
                instance.container_id, stdin=opts.stdin, stdout=opts.stdout, stderr=opts.stderr
            )
    except (StreamError, OSError) as exc:
        log.info("%s in %s/%s failed: %s", kind, pod.namespace, pod.name, exc)
        await _finish(ws, ch.error_status(str(exc)))
        return ws
    try:
        await _relay(ws, session, opts, v5=ready.protocol == ch.V5)
    finally:
        await session.close()
    return ws


async def _finish(ws: web.WebSocketResponse, status: dict[str, object]) -> None:
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.send_bytes(ch.status_frame(status))
    await ws.close()


async def _relay(
    ws: web.WebSocketResponse, session: DockerSession, opts: ch.StreamOptions, *, v5: bool
) -> None:
    async def to_client() -> None:
        async for stream, data in session.output():
            await ws.send_bytes(ch.frame(ch.STDERR if stream == 2 else ch.STDOUT, data))

    async def from_client() -> None:
        async for msg in ws:
            if msg.type != WSMsgType.BINARY or not msg.data:
                continue  # the base64 text variants are not spoken here
            channel, payload = msg.data[0], msg.data[1:]
            if channel == ch.STDIN and opts.stdin:
                await session.write_stdin(payload)
            elif channel == ch.RESIZE:
                size = ch.parse_resize(payload)
                if size is not None:
                    await session.resize(*size)
            elif channel == ch.CLOSE and v5 and payload[:1] == bytes((ch.STDIN,)):
                session.close_stdin()

    output = asyncio.ensure_future(to_client())
    incoming = asyncio.ensure_future(from_client())
    try:
        done, _ = await asyncio.wait((output, incoming), return_when=asyncio.FIRST_COMPLETED)
        if output not in done:  # the client went away first; the process is left to itself
            return
        error = output.exception()
        if error is not None and not isinstance(error, ConnectionError):
            await _finish(ws, ch.error_status(str(error)))
            return
        code = await session.exit_code()
        await _finish(ws, ch.success_status() if code is None else ch.exit_status(code, opts.command))
    finally:
        for task in (output, incoming):
            task.cancel()
        await asyncio.gather(output, incoming, return_exceptions=True)
