"""`vk_common.ports.free_port`: a port to listen on, below the kernel's ephemeral range (where no
outgoing connection takes it between the pick and the bind), and bindable when picked."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from vk_common import ports
from vk_common.ports import HIGHEST, LOWEST, ephemeral_low, free_port


def test_a_port_is_picked_below_the_ephemeral_range_and_a_server_can_bind_it() -> None:
    for _ in range(20):
        port = free_port(low=32768)
        assert LOWEST <= port < HIGHEST
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))
            server.listen()


def test_a_port_bound_by_somebody_else_is_not_picked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four ports to pick from, three of them bound here: the fourth is picked every time (by a
    process that has handed out nothing yet)."""

    def first_pick() -> int:
        monkeypatch.setattr(ports, "_handed_out", set())
        return free_port(low=LOWEST + 4)

    taken = [socket.socket() for _ in range(3)]
    try:
        for sock, port in zip(taken, range(LOWEST, LOWEST + 3), strict=True):
            sock.bind(("127.0.0.1", port))
        assert {first_pick() for _ in range(10)} == {LOWEST + 3}
    finally:
        for sock in taken:
            sock.close()


def test_one_process_is_never_handed_the_same_port_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Released ports are bindable again: the real control plane's seven picks in a row must
    still be seven ports."""
    monkeypatch.setattr(ports, "_handed_out", set())
    picked = [free_port(low=LOWEST + 40) for _ in range(30)]
    assert len(set(picked)) == 30


def test_an_ephemeral_range_starting_lower_leaves_the_pick_to_the_kernel() -> None:
    port = free_port(low=LOWEST)
    assert port > 0
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))


def test_the_ephemeral_range_is_read_from_the_kernel_or_taken_as_linuxs_default(tmp_path: Path) -> None:
    given = tmp_path / "range"
    given.write_text("40000\t60999\n")
    assert ephemeral_low(given) == 40000
    given.write_text("garbled")
    assert ephemeral_low(given) == 32768
    assert ephemeral_low(tmp_path / "missing") == 32768
