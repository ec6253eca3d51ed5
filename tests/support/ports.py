"""Free TCP ports for tests: `free_port`, a port on 127.0.0.1 that nothing listens on right now.

The port is released before it is returned, so a server the test starts next can bind it (or a
client can be sure nothing answers there). Must not: keep a socket open or pick other addresses.
"""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
