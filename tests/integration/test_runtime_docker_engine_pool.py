"""The provider's Docker client on a Unix socket keeps its connections alive (runtime/docker/engine.py).

docker-py keys its Unix connection pools by request URL: a call on a path it had not seen
lately opened a new socket. The provider's one-shot client has one pool for the socket, so a
burst of calls on as many different containers goes over the connections it already has;
requests' per-request environment look-ups (proxy variables, ~/.netrc) are off on the socket.
"""

from __future__ import annotations

from typing import Any

import pytest

from vk_provider.config import DockerConfig
from vk_provider.runtime.docker.engine import Engine

pytestmark = pytest.mark.docker

CALLS = 60


async def test_calls_on_many_containers_share_a_few_kept_alive_connections(docker_client: Any) -> None:
    engine = Engine(DockerConfig(host="unix:///var/run/docker.sock", max_concurrency=4))
    await engine.connect()
    try:
        api = engine.client.api
        for i in range(CALLS):  # a path per call, as a burst of pods gives: the engine answers 404
            await engine.call(api.containers, all=True, filters={"label": f"vk-test-pool={i}"})
            with pytest.raises(Exception, match="404"):
                await engine.call(api.inspect_container, f"vk-test-pool-missing-{i}")
        adapter = api._custom_adapter
        assert len(adapter.pools) == 1
        opened = adapter.pools[adapter.socket_path].num_connections
        assert opened <= engine.max_concurrency, f"{opened} sockets for {2 * CALLS} calls"
        assert api.trust_env is False and engine.stream_client.api.trust_env is False
    finally:
        await engine.close()
