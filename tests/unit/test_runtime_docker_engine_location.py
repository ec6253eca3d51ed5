"""Which engines share our filesystem: `docker.engineLocation` and `engine.engine_is_local`.

A remote engine taken for local would get bind mounts of host paths it does not have; so with
`auto` only a Unix socket is local, and a TCP endpoint is remote even on 127.0.0.1.
"""

from __future__ import annotations

import pytest

from vk_provider.config_load import ConfigError, config_from_mapping
from vk_provider.runtime.docker.engine import engine_is_local


@pytest.mark.parametrize(
    ("location", "url", "local"),
    [
        ("auto", "unix:///var/run/docker.sock", True),
        ("auto", "tcp://127.0.0.1:2375", False),
        ("auto", "tcp://engine.example:2376", False),
        ("auto", "ssh://me@engine.example", False),
        ("auto", "npipe:////./pipe/docker_engine", False),
        ("remote", "unix:///tmp/forwarded-engine.sock", False),  # e.g. an SSH-forwarded socket
        ("local", "tcp://127.0.0.1:2375", True),
    ],
)
def test_only_a_unix_socket_is_local_unless_configured(location: str, url: str, local: bool) -> None:
    assert engine_is_local(location, url) is local


def test_the_key_is_parsed_and_checked() -> None:
    assert config_from_mapping({}, "c.yaml").docker.engine_location == "auto"
    parsed = config_from_mapping({"docker": {"engineLocation": "remote"}}, "c.yaml")
    assert parsed.docker.engine_location == "remote"
    with pytest.raises(ConfigError) as info:
        config_from_mapping({"docker": {"engineLocation": "elsewhere"}}, "c.yaml")
    assert str(info.value) == (
        "c.yaml: docker.engineLocation: expected one of auto, local, remote, got 'elsewhere'"
    )
