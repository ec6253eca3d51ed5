"""Free TCP ports to listen on: `free_port(host)`, a port nothing is bound to right now, picked
below the kernel's ephemeral port range.

Why not the port the kernel gives a bind to port 0: it comes from the ephemeral range
(`net.ipv4.ip_local_port_range`), the range every outgoing connection's local port comes from
too, so once the probe socket is closed any `connect()` may take the port before the server
binds it. The real control plane picks its components' ports before it starts them, one after
the other, while kube-apiserver and etcd already open connections: a kube-scheduler failed with
`bind: address already in use` on such a port (`bench.scale --control-plane real`, 2026-12-06).
A port below the range is never a connection's local port. Picked between 20000 and 30000: above
the Kubernetes components' default ports (10248-10259) and below the NodePort range
(30000-32767). Where the ephemeral range starts lower than that, the kernel's port is taken as
before. Must not: keep a socket open, or pick for another host.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 20000
HIGHEST = 30000  # exclusive: the NodePort range begins here
TRIES = 100


def ephemeral_low(path: Path = EPHEMERAL_RANGE) -> int:
    """The lowest port of the kernel's ephemeral range (Linux's default, 32768, if unreadable)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bind(host: str, port: int) -> int | None:
    """The port a socket bound on `host` at `port` got (0: the kernel's pick), or None if taken;
    the socket is closed again. The kernel's pick failing raises its error."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            if port == 0:
                raise
            return None
        return int(sock.getsockname()[1])


# Handed out by this process: released, so bindable again until the server they were picked for
# binds them, and two random picks in a row (the real control plane's seven ports) may meet.
_handed_out: set[int] = set()


def free_port(host: str = "127.0.0.1", *, low: int | None = None) -> int:
    """A TCP port on `host` that nothing is bound to now, that this process has not handed out
    before, and that no outgoing connection will take. `low`: the ephemeral range's first port
    (default: the kernel's)."""
    top = min(HIGHEST, ephemeral_low() if low is None else low)
    if top > LOWEST:
        for _ in range(TRIES):
            port = random.randrange(LOWEST, top)
            if port not in _handed_out and _bind(host, port) is not None:
                _handed_out.add(port)
                return port
    picked = _bind(host, 0)
    assert picked is not None  # a failed bind to port 0 raised
    return picked
