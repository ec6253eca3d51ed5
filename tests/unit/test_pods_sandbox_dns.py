"""The node's resolv.conf as each new sandbox reads it (`pods/sandbox_dns.HostResolvConf`): what
the file holds at that moment, through edits in place of the same size, a file replaced, and a
file gone or not parseable (each the sandbox's error, never a stale answer)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vk_provider.kuberuntime.dns import ResolvConfError
from vk_provider.pods.sandbox_dns import HostResolvConf


async def test_an_edit_of_the_same_size_right_after_a_read_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "resolv.conf"
    path.write_text("nameserver 10.0.0.1\n")
    host = HostResolvConf()
    assert (await host.read(str(path))).servers == ("10.0.0.1",)
    path.write_text("nameserver 10.0.0.2\n")  # same size, most likely the same clock tick
    assert (await host.read(str(path))).servers == ("10.0.0.2",)


async def test_a_file_changed_or_replaced_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "resolv.conf"
    path.write_text("nameserver 10.0.0.1\nsearch a.example\n")
    old = 1_700_000_000
    os.utime(path, (old, old))
    host = HostResolvConf()
    assert (await host.read(str(path))).searches == ("a.example",)
    path.write_text("nameserver 10.0.0.9\nsearch b.example\n")
    assert (await host.read(str(path))).searches == ("b.example",)
    replaced = tmp_path / "new"
    replaced.write_text("nameserver 10.0.0.7\n")
    os.utime(replaced, (old, old))
    replaced.replace(path)  # another inode, as a resolver daemon's rename
    assert (await host.read(str(path))).servers == ("10.0.0.7",)


async def test_a_file_gone_or_unparseable_is_an_error_each_time(tmp_path: Path) -> None:
    path = tmp_path / "resolv.conf"
    host = HostResolvConf()
    with pytest.raises(FileNotFoundError):
        await host.read(str(path))
    path.write_text("nameserver\n")  # a nameserver line without an address
    for _ in range(2):
        with pytest.raises(ResolvConfError):
            await host.read(str(path))
    path.write_text("nameserver 10.0.0.3\n")
    assert (await host.read(str(path))).servers == ("10.0.0.3",)
