"""Validation of a container's probe and lifecycle handlers, as pkg/apis/core/validation's
validateHandler, validateHTTPGetAction, validateTCPSocketAction, validateGRPCAction and
ValidatePortNumOrName do: exactly one handler, whose port is a number in range or a valid port name;
`port_number_errors`, the range check container and host ports share.
Must not: default handlers (api/defaults.py) or look at other parts of a pod.
"""

from __future__ import annotations

import re
from typing import Any

from vk_sandbox.api.validation.field import forbidden, invalid, required

LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")  # validateLifecycle's handlerFromLifecycle
_PORT_NAME_CHARSET = re.compile(r"[-a-z0-9]+")
_PORT_NAME_LETTER = re.compile(r"[a-z]")


def _port_name_errors(name: str) -> list[str]:
    """validation.IsValidPortName (k8s.io/apimachinery pkg/util/validation)."""
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.fullmatch(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def port_number_errors(port: Any, path: str) -> list[dict[str, str]]:
    """validation.IsValidPortNum of an integer port (anything else is the schema pass's)."""
    if isinstance(port, bool) or not isinstance(port, int) or 1 <= port <= 65535:
        return []
    return [invalid(path, port, "must be between 1 and 65535, inclusive")]


def _validate_port(port: Any, path: str, out: list[dict[str, str]]) -> None:
    """ValidatePortNumOrName (pkg/apis/core/validation): a number in range, or a port name."""
    out.extend(port_number_errors(port, path))
    if isinstance(port, str):
        out.extend(invalid(path, port, msg) for msg in _port_name_errors(port))


def validate_handler(probe: Any, path: str, handlers: tuple[str, ...], out: list[dict[str, str]]) -> None:
    """validateHandler: a probe names exactly one handler type, whose port is a port number or
    name (validateHTTPGetAction, validateTCPSocketAction, validateGRPCAction)."""
    if not isinstance(probe, dict):
        return
    given = [h for h in handlers if probe.get(h) is not None]
    if not given:
        out.append(required(path, "must specify a handler type"))
    elif len(given) > 1:
        out.append(forbidden(f"{path}.{given[1]}", "may not specify more than 1 handler type"))
    if given and given[0] in ("httpGet", "tcpSocket", "grpc") and isinstance(probe[given[0]], dict):
        _validate_port(probe[given[0]].get("port"), f"{path}.{given[0]}.port", out)
