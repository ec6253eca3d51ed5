"""`/exec/{namespace}/{pod}/{container}` and `/attach/...`: WebSocket and SPDY/3.1 remote command.

What lives here: `stream_handler`, which checks the request (options, pod, running
container: with the node's pods from the app, the kubelet's answers, podstate.py), then
serves either a WebSocket upgrade offering v5/v4.channel.k8s.io (one binary message per
chunk, first byte the channel) or a SPDY/3.1 upgrade negotiating v4.channel.k8s.io (one
SPDY stream per channel, named by its `streamType` header, as the kubelet's
`pkg/kubelet/cri/streaming/remotecommand/httpstream.go`); and `_run`, the part both share:
engine output to stdout/stderr, stdin and resizes to the engine, and one Status on the
error channel at the end (the exit code for exec). Must not: speak to the engine itself
(the runtime's `open_exec` / `open_attach` sessions do), parse queries (channels.py) or
frame SPDY (spdy.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import WSMsgType, web

from vk_common.logging import get_logger
from vk_provider.kubeletapi import channels as ch
from vk_provider.kubeletapi.lookup import BadRequest, NotFound, ServerError, find_container, find_pod
from vk_provider.kubeletapi.podstate import Kind, KnownPods, not_running
from vk_provider.kubeletapi.spdy import SpdySession, SpdyStream
from vk_provider.kubeletapi.upgrade import (
    http_upgrade,
    is_spdy_upgrade,
    negotiate,
    negotiation_failure,
    websocket_response,
)
from vk_provider.runtime.protocol import STDERR, InteractiveSession, Runtime
from vk_provider.runtime.types import ContainerInstance, ContainerRunState, StreamError

log = get_logger("kubeletapi.exec")

# v5 over SPDY is v4 for client-go; the kubelet offers v4 and older, and so does this one (v4 only).
SPDY_PROTOCOLS = (ch.V4,)
STREAM_CREATION_TIMEOUT = 30.0  # the kubelet's --stream-creation-timeout default
Send = Callable[[int, bytes], Awaitable[None]]
Finish = Callable[[dict[str, Any]], Awaitable[None]]


async def stream_handler(
    request: web.Request, runtime: Runtime, kind: Kind, pods: KnownPods | None
) -> web.StreamResponse:
    opts = ch.parse_stream_options(request.query, needs_command=kind == "exec")
    instance = await _running_container(request.match_info, runtime, kind, pods)
    if is_spdy_upgrade(request):
        return await _spdy(request, runtime, instance, opts, kind)
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise BadRequest(f"{kind} needs a WebSocket or SPDY/3.1 upgrade")
    return await _websocket(request, runtime, instance, opts, kind)


async def _running_container(
    info: Mapping[str, str], runtime: Runtime, kind: Kind, pods: KnownPods | None
) -> ContainerInstance:
    """The running container to stream from, or the kubelet's refusal (server.go getExec /
    getAttach: `pod does not exist` 404 for a pod not on this node). Without `pods` a pod or
    container the runtime does not have is a 404 of lookup.py."""
    namespace, name, container = info["namespace"], info["pod"], info["container"]
    if pods is not None and pods.pod(namespace, name) is None:
        raise NotFound("pod does not exist")
    instance: ContainerInstance | None
    try:
        instance = find_container(await find_pod(runtime, namespace, name), container)
    except NotFound:
        if pods is None:
            raise
        instance = None
    if instance is None or instance.state != ContainerRunState.RUNNING:
        raise ServerError(not_running(kind, namespace, name, container))
    return instance


async def _open(
    runtime: Runtime, instance: ContainerInstance, opts: ch.StreamOptions, kind: Kind
) -> InteractiveSession:
    if kind == "exec":
        return await runtime.open_exec(
            instance.container_id,
            list(opts.command),
            stdin=opts.stdin,
            stdout=opts.stdout,
            stderr=opts.stderr,
            tty=opts.tty,
        )
    return await runtime.open_attach(
        instance.container_id, stdin=opts.stdin, stdout=opts.stdout, stderr=opts.stderr
    )


async def _run(
    runtime: Runtime,
    instance: ContainerInstance,
    opts: ch.StreamOptions,
    kind: Kind,
    *,
    send: Send,
    incoming: Callable[[InteractiveSession], Awaitable[None]],
    finish: Finish,
) -> None:
    """Relay one session; `incoming` returns when the client has gone away."""
    try:
        session = await _open(runtime, instance, opts, kind)
    except (StreamError, OSError) as exc:
        log.info(
            "stream in container failed",
            extra={"stream": kind, "containerID": instance.container_id[:12], "err": str(exc)},
        )
        await finish(ch.error_status(str(exc)))
        return

    async def to_client() -> None:
        async for stream, data in session.output():
            await send(ch.STDERR if stream == STDERR else ch.STDOUT, data)

    output = asyncio.ensure_future(to_client())
    client = asyncio.ensure_future(incoming(session))
    try:
        done, _ = await asyncio.wait((output, client), return_when=asyncio.FIRST_COMPLETED)
        if output not in done:  # the client went away first; the process is left to itself
            return
        error = output.exception()
        if error is not None and not isinstance(error, ConnectionError):
            await finish(ch.error_status(str(error)))
            return
        try:
            code = await session.exit_code()
        except StreamError as exc:
            await finish(ch.error_status(str(exc)))
            return
        await finish(ch.success_status() if code is None else ch.exit_status(code, opts.command))
    finally:
        for task in (output, client):
            task.cancel()
        await asyncio.gather(output, client, return_exceptions=True)
        await session.close()


# -- WebSocket ------------------------------------------------------------------------------------


async def _websocket(
    request: web.Request,
    runtime: Runtime,
    instance: ContainerInstance,
    opts: ch.StreamOptions,
    kind: Kind,
) -> web.StreamResponse:
    ws = websocket_response(ch.SUBPROTOCOLS)
    ready = ws.can_prepare(request)
    offered = request.headers.get("Sec-WebSocket-Protocol", "").strip()
    if not ready.ok or (ready.protocol is None and offered):
        # No subprotocol at all is binary channel.k8s.io; one we do not speak is refused.
        raise BadRequest(
            f"unsupported WebSocket subprotocol; this kubelet speaks {', '.join(ch.SUBPROTOCOLS)}"
        )
    await ws.prepare(request)
    dialect = ch.dialect(ready.protocol)

    async def send(channel: int, data: bytes) -> None:
        message = dialect.encode(channel, data)
        await (ws.send_str(message) if isinstance(message, str) else ws.send_bytes(message))

    async def incoming(session: InteractiveSession) -> None:
        async for msg in ws:
            if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
                continue
            decoded = dialect.decode(msg.data)
            if decoded is None:
                continue
            channel, payload = decoded
            if channel == ch.STDIN and opts.stdin:
                await session.write_stdin(payload)
            elif channel == ch.RESIZE:
                size = ch.parse_resize(payload)
                if size is not None:
                    await session.resize(*size)
            elif channel == ch.CLOSE and dialect.close_channel and payload[:1] == bytes((ch.STDIN,)):
                session.close_stdin()

    async def finish(status: dict[str, Any]) -> None:
        message = dialect.status(status)
        with contextlib.suppress(ConnectionError, RuntimeError):
            if isinstance(message, str):
                await ws.send_str(message)
            elif message is not None:
                await ws.send_bytes(message)
        await ws.close()

    await _run(runtime, instance, opts, kind, send=send, incoming=incoming, finish=finish)
    await ws.close()
    return ws


# -- SPDY/3.1 -------------------------------------------------------------------------------------


def _expected_streams(opts: ch.StreamOptions) -> set[str]:
    wanted = {"error"}
    wanted |= {
        name for name, on in (("stdin", opts.stdin), ("stdout", opts.stdout), ("stderr", opts.stderr)) if on
    }
    if opts.tty:
        wanted.add("resize")
    return wanted


async def _collect(spdy: SpdySession, wanted: set[str]) -> dict[str, SpdyStream] | None:
    """The client's streams by `streamType`, once all wanted ones exist (None if the session ends)."""
    found: dict[str, SpdyStream] = {}
    while not wanted <= set(found):
        stream = await spdy.streams.get()
        if stream is None:
            return None
        found[stream.headers.get("streamtype", "")] = stream
    return found


async def _resizes(stream: SpdyStream, session: InteractiveSession) -> None:
    """The resize stream is a sequence of JSON objects `{"Width":..,"Height":..}`."""
    decoder, pending = json.JSONDecoder(), ""
    while chunk := await stream.reader.read(4096):
        pending += chunk.decode("utf-8", "replace")
        while pending.strip():
            try:
                size, end = decoder.raw_decode(pending.lstrip())
            except ValueError:
                break
            pending = pending.lstrip()[end:]
            parsed = ch.parse_resize(json.dumps(size).encode())
            if parsed is not None:
                await session.resize(*parsed)


async def _spdy(
    request: web.Request,
    runtime: Runtime,
    instance: ContainerInstance,
    opts: ch.StreamOptions,
    kind: Kind,
) -> web.StreamResponse:
    protocol = negotiate(request, SPDY_PROTOCOLS)
    if protocol is None:
        return negotiation_failure(request, SPDY_PROTOCOLS)
    response, channel = await http_upgrade(request, protocol)
    spdy = SpdySession(channel)
    serving = asyncio.ensure_future(spdy.serve())
    try:
        try:
            found = await asyncio.wait_for(_collect(spdy, _expected_streams(opts)), STREAM_CREATION_TIMEOUT)
        except TimeoutError:
            log.info("the client did not open its streams in time", extra={"stream": kind})
            return response
        if found is None:
            return response
        out = {ch.STDOUT: found.get("stdout"), ch.STDERR: found.get("stderr")}

        async def send(number: int, data: bytes) -> None:
            target = out.get(number)
            if target is not None:
                await target.write(data)

        async def incoming(session: InteractiveSession) -> None:
            pumps = []
            if "stdin" in found:
                pumps.append(asyncio.ensure_future(_stdin(found["stdin"], session)))
            if "resize" in found:
                pumps.append(asyncio.ensure_future(_resizes(found["resize"], session)))
            try:
                await asyncio.shield(serving)
            finally:
                for pump in pumps:
                    pump.cancel()

        async def finish(status: dict[str, Any]) -> None:
            for stream in out.values():
                if stream is not None:
                    await stream.close()
            await found["error"].write(json.dumps(status, separators=(",", ":")).encode())
            await found["error"].close()

        await _run(runtime, instance, opts, kind, send=send, incoming=incoming, finish=finish)
    finally:
        await spdy.close()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
    return response


async def _stdin(stream: SpdyStream, session: InteractiveSession) -> None:
    while data := await stream.reader.read(64 * 1024):
        await session.write_stdin(data)
    session.close_stdin()
