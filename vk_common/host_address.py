"""The host's own address, as the node agent and the sandbox's cluster network find it.

What lives here: `detect_node_ip`, the address of the interface holding the default route.
Must not: import the provider or the sandbox; it sends nothing (a UDP connect only picks a
route).
"""

from __future__ import annotations

import contextlib
import socket


def detect_node_ip() -> str:
    """The address of the interface holding the default route (a UDP connect sends nothing)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("10.255.255.255", 1))
        return str(probe.getsockname()[0])
    return "127.0.0.1"
