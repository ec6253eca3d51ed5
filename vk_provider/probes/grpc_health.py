"""The gRPC probe: one grpc.health.v1.Health/Check over plaintext HTTP/2 (h2c), as the kubelet runs it.

What lives here: `grpc_probe(host, port, service, timeout, user_agent)`, which returns
(success, output) with the kubelet's wording, and the few bytes of protobuf and gRPC framing
the health protocol needs (`encode_request`, `decode_status`). The HTTP/2 state machine is the
`h2` library's; the connection is one asyncio stream. Must not: apply thresholds or emit Events
(probes/handlers.py and the worker do), or speak TLS (the GRPCContainerProbeTLS mode).

Upstream: pkg/probe/grpc/grpc.go (Probe); grpc.health.v1 (health.proto); gRPC over HTTP/2
(PROTOCOL-HTTP2.md: length-prefixed messages, grpc-status / grpc-message trailers).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
import urllib.parse
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events
import h2.exceptions

HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check"
SERVING_STATUS = ("UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN")  # HealthCheckResponse.ServingStatus
CODES = (  # google.golang.org/grpc/codes, by number
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
)
UNIMPLEMENTED = 12
DEADLINE_EXCEEDED = 4
READ_SIZE = 65535
RETRY_SECONDS = 0.2  # grpc.WithBlock keeps redialling until the deadline


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:  # grpc-go's status error
        name = CODES[self.code] if 0 <= self.code < len(CODES) else f"Code({self.code})"
        return f"rpc error: code = {name} desc = {self.message}"


def go_seconds(seconds: int) -> str:
    """time.Duration.String() of whole seconds: 1s, 1m0s, 1h0m5s."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encode_request(service: str) -> bytes:
    """HealthCheckRequest{service} as one length-prefixed, uncompressed gRPC message."""
    raw = service.encode()
    body = b"\x0a" + _varint(len(raw)) + raw if raw else b""
    return b"\x00" + struct.pack(">I", len(body)) + body


def decode_status(message: bytes) -> str:
    """The ServingStatus name of a length-prefixed HealthCheckResponse (field 1, a varint)."""
    body = message[5 : 5 + struct.unpack(">I", message[1:5])[0]] if len(message) >= 5 else b""
    status, i = 0, 0
    while i < len(body):
        key, i = _read_varint(body, i)
        if key & 7 == 0:
            value, i = _read_varint(body, i)
            if key >> 3 == 1:
                status = value
        elif key & 7 == 2:
            length, i = _read_varint(body, i)
            i += length
        else:
            break  # no other wire types in this message
    return SERVING_STATUS[status] if 0 <= status < len(SERVING_STATUS) else str(status)


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while i < len(data):
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    return value, i


@dataclass
class _Call:
    stream_id: int
    data: bytearray = field(default_factory=bytearray)
    headers: dict[str, str] = field(default_factory=dict)
    ended: bool = False


def _headers(pairs: list[tuple[bytes, bytes]] | list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs:
        key = name.decode() if isinstance(name, bytes) else name
        out[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return out


async def _check(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, authority: str, service: str, user_agent: str
) -> str:
    """One Health/Check call on an open connection; the ServingStatus name, or RpcError."""
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    call = _Call(conn.get_next_available_stream_id())
    conn.send_headers(
        call.stream_id,
        [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", HEALTH_CHECK_PATH),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("user-agent", user_agent),
        ],
    )
    conn.send_data(call.stream_id, encode_request(service), end_stream=True)
    writer.write(conn.data_to_send())
    await writer.drain()
    while not call.ended:
        chunk = await reader.read(READ_SIZE)
        if not chunk:
            raise RpcError(14, "connection closed before the response")
        for event in conn.receive_data(chunk):
            if isinstance(event, h2.events.ResponseReceived | h2.events.TrailersReceived):
                call.headers.update(_headers(event.headers or []))
            elif isinstance(event, h2.events.DataReceived):
                call.data.extend(event.data or b"")
                conn.acknowledge_received_data(event.flow_controlled_length or 0, call.stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == call.stream_id:
                call.ended = True
            elif isinstance(event, h2.events.StreamReset):
                raise RpcError(13, f"stream terminated by RST_STREAM with error code: {event.error_code}")
            elif isinstance(event, h2.events.ConnectionTerminated):
                raise RpcError(14, f"connection closed by the server (error code {event.error_code})")
        writer.write(conn.data_to_send())
        await writer.drain()
    code = int(call.headers.get("grpc-status", "2") or 2)
    if call.headers.get(":status", "200") != "200":
        raise RpcError(2, f"unexpected HTTP status code received from server: {call.headers[':status']}")
    if code != 0:
        raise RpcError(code, urllib.parse.unquote(call.headers.get("grpc-message", "")))
    return decode_status(bytes(call.data))


async def _dial(host: str, port: int, deadline: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect, retrying until `deadline` (monotonic) as grpc.WithBlock does; TimeoutError after it."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            async with asyncio.timeout(remaining):
                return await asyncio.open_connection(host, port)
        except OSError:
            await asyncio.sleep(min(RETRY_SECONDS, max(0.0, deadline - time.monotonic())))


async def grpc_probe(
    host: str,
    port: int,
    service: str,
    timeout: int,  # noqa: ASYNC109 - the probe's timeoutSeconds, also in its output
    user_agent: str,
) -> tuple[bool, str]:
    """grpcProber.Probe: (healthy, the kubelet's output)."""
    addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    deadline = time.monotonic() + timeout
    try:
        reader, writer = await _dial(host, port, deadline)
    except TimeoutError:
        return (
            False,
            f'timeout: failed to connect service "{addr}" within {go_seconds(timeout)}: '
            "context deadline exceeded",
        )
    try:
        async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
            status = await _check(reader, writer, addr, service, user_agent)
    except TimeoutError:
        return False, f"timeout: health rpc did not complete within {go_seconds(timeout)}"
    except RpcError as exc:
        if exc.code == UNIMPLEMENTED:
            return False, (
                "error: this server does not implement the grpc health protocol "
                f"(grpc.health.v1.Health): {exc.message}"
            )
        if exc.code == DEADLINE_EXCEEDED:
            return False, f"timeout: health rpc did not complete within {go_seconds(timeout)}"
        return False, f"error: health rpc probe failed: {exc}"
    except (OSError, h2.exceptions.ProtocolError) as exc:
        return False, f"error: health rpc probe failed: {exc!r}"
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if status != "SERVING":
        return False, f'service unhealthy (responded with "{status}")'
    return True, "service healthy"
