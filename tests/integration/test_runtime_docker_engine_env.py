"""The provider's Docker clients on a Unix socket skip requests' per-request environment look-ups
(proxy variables, ~/.netrc: `trust_env`), which mean nothing on a socket (runtime/docker/engine.py),
and still answer: a proxy variable in the environment does not reach the engine's calls."""

from __future__ import annotations

from typing import Any

import pytest

from vk_provider.config import DockerConfig
from vk_provider.runtime.docker.engine import Engine

pytestmark = pytest.mark.docker


async def test_clients_on_a_socket_ignore_proxy_variables_and_answer(
    docker_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    engine = Engine(DockerConfig(host="unix:///var/run/docker.sock", max_concurrency=2))
    await engine.connect()
    try:
        assert engine.client.api.trust_env is False and engine.stream_client.api.trust_env is False
        assert await engine.call(engine.client.api.ping) is True
        with pytest.raises(Exception, match="404"):
            await engine.call(engine.client.api.inspect_container, "vk-test-env-missing")
    finally:
        await engine.close()
