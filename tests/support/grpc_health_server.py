"""A minimal grpc.health.v1 server over plaintext HTTP/2 (h2c) in the test process, for gRPC probes.

What lives here: `HealthServer` (`async with HealthServer(host) as server`: its `port`, the
`statuses` by service name it answers with, `implements_health` to answer Unimplemented as a
server without the health service does, and `requests`, the (service, user-agent) of each call).
Protocol as grpc-go's health servicer: an unknown service is NOT_FOUND "unknown service".
Must not: share code with the provider's client (it checks that client from the outside).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from types import TracebackType

import h2.config
import h2.connection
import h2.events

HEALTH_CHECK = "/grpc.health.v1.Health/Check"
STATUS_NUMBERS = {"UNKNOWN": 0, "SERVING": 1, "NOT_SERVING": 2, "SERVICE_UNKNOWN": 3}


def _request_service(message: bytes) -> str:
    """HealthCheckRequest.service (field 1, length-delimited; short strings only)."""
    body = message[5:]
    if len(body) >= 2 and body[0] == 0x0A:
        return body[2 : 2 + body[1]].decode()
    return ""


def _response(status: str) -> bytes:
    body = b"\x08" + bytes([STATUS_NUMBERS[status]])
    return b"\x00" + struct.pack(">I", len(body)) + body


class HealthServer:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.statuses: dict[str, str] = {"": "SERVING"}
        self.implements_health = True
        self.requests: list[tuple[str, str]] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> HealthServer:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        calls: dict[int, tuple[dict[str, str], bytearray]] = {}
        try:
            while chunk := await reader.read(65535):
                for event in conn.receive_data(chunk):
                    if isinstance(event, h2.events.RequestReceived) and event.stream_id is not None:
                        headers = {
                            (k.decode() if isinstance(k, bytes) else k): (
                                v.decode() if isinstance(v, bytes) else v
                            )
                            for k, v in event.headers or []
                        }
                        calls[event.stream_id] = (headers, bytearray())
                    elif isinstance(event, h2.events.DataReceived) and event.stream_id in calls:
                        calls[event.stream_id][1].extend(event.data or b"")
                        conn.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded) and event.stream_id in calls:
                        headers, body = calls.pop(event.stream_id)
                        self._answer(conn, event.stream_id, headers, bytes(body))
                writer.write(conn.data_to_send())
                await writer.drain()
        except (ConnectionError, h2.exceptions.ProtocolError):
            pass
        finally:
            writer.close()

    def _answer(
        self, conn: h2.connection.H2Connection, stream_id: int, headers: dict[str, str], body: bytes
    ) -> None:
        conn.send_headers(stream_id, [(":status", "200"), ("content-type", "application/grpc")])
        service = _request_service(body)
        self.requests.append((service, headers.get("user-agent", "")))
        if headers.get(":path") != HEALTH_CHECK or not self.implements_health:
            trailers = [("grpc-status", "12"), ("grpc-message", "unknown service grpc.health.v1.Health")]
        elif service not in self.statuses:
            trailers = [("grpc-status", "5"), ("grpc-message", "unknown service")]
        else:
            conn.send_data(stream_id, _response(self.statuses[service]))
            trailers = [("grpc-status", "0")]
        conn.send_headers(stream_id, trailers, end_stream=True)
