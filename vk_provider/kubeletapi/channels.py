"""The kubelet's remote-command channel protocol, pure parts.

What lives here: the WebSocket subprotocols this kubelet speaks (`v5.channel.k8s.io`,
`v4.channel.k8s.io`), the channel numbers (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize,
255 close in v5), `parse_stream_options` for exec/attach query parameters (the kubelet's
names `input`/`output`/`error`/`tty`, and the user-facing `stdin`/`stdout`/`stderr` too),
and the metav1.Status documents written on the error channel (upstream
`staging/src/k8s.io/apimachinery/pkg/util/remotecommand/constants.go`,
`pkg/kubelet/cri/streaming/remotecommand/{httpstream,websocket}.go`). Must not: do I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from vk_provider.kubeletapi.lookup import BadRequest

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
SUBPROTOCOLS = (V5, V4)

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


def status_frame(status: Mapping[str, Any]) -> bytes:
    return frame(ERROR, json.dumps(status, separators=(",", ":")).encode())


def parse_resize(payload: bytes) -> tuple[int, int] | None:
    """(width, height) from a resize message `{"Width":80,"Height":24}`, None if malformed."""
    try:
        size = json.loads(payload)
        width, height = int(size["Width"]), int(size["Height"])
    except (ValueError, KeyError, TypeError):
        return None
    return (width, height) if width > 0 and height > 0 else None
