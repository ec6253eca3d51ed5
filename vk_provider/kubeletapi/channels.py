"""The kubelet's remote-command channel protocol, pure parts.

What lives here: the WebSocket subprotocols this kubelet speaks for exec and attach
(`v5.channel.k8s.io`, `v4.channel.k8s.io`, the pre-v4 `channel.k8s.io` and no subprotocol at
all, and the base64 text variants `v4.base64.channel.k8s.io` and `base64.channel.k8s.io`) as
`Dialect`s that encode and decode their messages, the channel numbers (0 stdin, 1 stdout,
2 stderr, 3 error, 4 resize, 255 close in v5), `parse_stream_options` for exec/attach query
parameters (the kubelet's names `input`/`output`/`error`/`tty`, and the user-facing
`stdin`/`stdout`/`stderr` too),
and the metav1.Status documents written on the error channel (upstream
`staging/src/k8s.io/apimachinery/pkg/util/remotecommand/constants.go`,
`pkg/kubelet/cri/streaming/remotecommand/{httpstream,websocket}.go`). Must not: do I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from vk_provider.kubeletapi.lookup import BadRequest

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
V1 = "channel.k8s.io"
V1_BASE64 = "base64.channel.k8s.io"
# Preferred first, as the kubelet's wsstream map (remotecommand/websocket.go): a client that
# offers several gets the newest.
SUBPROTOCOLS = (V5, V4, V4_BASE64, V1, V1_BASE64)

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


class _MultiQuery(Protocol):
    def getall(self, key: str, default: list[str]) -> list[str]: ...

    def get(self, key: str, default: str) -> str: ...


@dataclass(frozen=True)
class StreamOptions:
    command: tuple[str, ...]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def _flag(query: _MultiQuery, *names: str) -> bool:
    return any(query.get(n, "") in ("1", "true", "True", "TRUE", "t") for n in names)


def parse_stream_options(query: _MultiQuery, *, needs_command: bool) -> StreamOptions:
    """Exec/attach options; the rules of the kubelet's `NewOptions` (remotecommand/httpstream.go)."""
    opts = StreamOptions(
        command=tuple(query.getall("command", [])),
        stdin=_flag(query, "input", "stdin"),
        stdout=_flag(query, "output", "stdout"),
        stderr=_flag(query, "error", "stderr"),
        tty=_flag(query, "tty"),
    )
    if opts.tty and opts.stderr:
        # The kubelet's message: with a TTY, stderr is merged into stdout.
        raise BadRequest("stdout and stderr cannot both be specified with tty")
    if not (opts.stdin or opts.stdout or opts.stderr):
        raise BadRequest("you must specify at least 1 of stdin, stdout, stderr")
    if needs_command and not opts.command:
        raise BadRequest("you must specify a command")
    return opts


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(code: int, command: tuple[str, ...]) -> dict[str, Any]:
    """Success for 0, else the kubelet's NonZeroExitCode Failure that kubectl turns into its exit code."""
    if code == 0:
        return success_status()
    return {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: "
        f"command '{' '.join(command)}' exited with {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def error_status(message: str) -> dict[str, Any]:
    """A failure without an exit code (apierrors.NewInternalError, as the kubelet writes it)."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def frame(channel: int, data: bytes) -> bytes:
    return bytes((channel,)) + data


@dataclass(frozen=True)
class Dialect:
    """How one WebSocket subprotocol frames the channels (k8s.io/apimachinery wsstream):
    binary messages are the channel byte then the data; base64 ones are text, the channel as
    an ASCII digit then the data in base64. On the error channel v4 and later write a
    metav1.Status as JSON; before v4 only a failure's message, as plain text (the kubelet's
    `v1WriteStatusFunc`). Only v5 has the CLOSE channel."""

    protocol: str  # "" when the client offered none: the kubelet serves it as channel.k8s.io
    base64: bool = False
    json_status: bool = True
    close_channel: bool = False

    def encode(self, channel: int, data: bytes) -> bytes | str:
        if self.base64:
            return chr(ord("0") + channel) + base64.b64encode(data).decode("ascii")
        return frame(channel, data)

    def decode(self, message: bytes | str) -> tuple[int, bytes] | None:
        """(channel, payload) of a client message, None for an empty or malformed one (or a
        text message in a binary dialect and the reverse, which wsstream ignores too)."""
        if self.base64 and isinstance(message, str) and message:
            try:
                return ord(message[0]) - ord("0"), base64.b64decode(message[1:], validate=True)
            except (binascii.Error, ValueError):
                return None
        if not self.base64 and isinstance(message, bytes) and message:
            return message[0], message[1:]
        return None

    def status(self, status: Mapping[str, Any]) -> bytes | str | None:
        """The error channel's message for the command's final status, None when the dialect
        writes nothing (a success before v4)."""
        if self.json_status:
            return self.encode(ERROR, json.dumps(status, separators=(",", ":")).encode())
        if status.get("status") == "Success":
            return None
        return self.encode(ERROR, str(status.get("message", "")).encode())


DIALECTS = {
    V5: Dialect(V5, close_channel=True),
    V4: Dialect(V4),
    V4_BASE64: Dialect(V4_BASE64, base64=True),
    V1: Dialect(V1, json_status=False),
    V1_BASE64: Dialect(V1_BASE64, base64=True, json_status=False),
}


def dialect(protocol: str | None) -> Dialect:
    """The dialect of a negotiated subprotocol; no subprotocol is binary `channel.k8s.io`."""
    return DIALECTS.get(protocol or "", Dialect("", json_status=False))


def parse_resize(payload: bytes) -> tuple[int, int] | None:
    """(width, height) from a resize message `{"Width":80,"Height":24}`, None if malformed."""
    try:
        size = json.loads(payload)
        width, height = int(size["Width"]), int(size["Height"])
    except (ValueError, KeyError, TypeError):
        return None
    return (width, height) if width > 0 and height > 0 else None
