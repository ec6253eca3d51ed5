"""The engine's calls made on the event loop (`Engine.request`, runtime/docker/socket_api.py) against
the real engine: they answer what docker-py answers for the same call, raise the errors docker-py
raises, keep their connections alive from one call to the next, and go on after the engine has
closed those connections (an engine restart)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import requests
from docker.errors import ImageNotFound, NotFound

from tests.support.docker_socket_proxy import DockerSocketProxy
from tests.support.images import PAUSE_IMAGE
from vk_provider.config import DockerConfig
from vk_provider.runtime.docker.create import create_request
from vk_provider.runtime.docker.engine import Engine
from vk_provider.runtime.docker.socket_api import engine_path

pytestmark = pytest.mark.docker


class ConnectionCountingProxy(DockerSocketProxy):
    """The Docker socket, counting the connections made to it."""

    connections = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await super()._serve(reader, writer)


@pytest.fixture
async def proxy(tmp_path: Path) -> AsyncIterator[ConnectionCountingProxy]:
    proxy = ConnectionCountingProxy(tmp_path / "docker.sock")
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()


@pytest.fixture
async def engine(proxy: ConnectionCountingProxy) -> AsyncIterator[Engine]:
    engine = Engine(DockerConfig(host=proxy.url, max_concurrency=4))
    await engine.connect()
    try:
        yield engine
    finally:
        await engine.close()


def inspect_image(engine: Engine, ref: str) -> Any:
    return engine.request("inspect_image", "GET", engine_path("/images/{0}/json", ref))


async def test_a_created_and_started_container_answers_as_docker_py_sees_it(
    engine: Engine, docker_client: Any
) -> None:
    name = f"vk-test-socket-api-{uuid.uuid4().hex[:8]}"
    params, body = create_request(
        engine.client, PAUSE_IMAGE, name=name, labels={"io.vk-provider.test": "socket-api"}
    )
    created = await engine.request("create_container", "POST", "/containers/create", params=params, body=body)
    try:
        assert (
            await engine.request("start", "POST", engine_path("/containers/{0}/start", created["Id"])) is None
        )
        ours = await engine.request("inspect_container", "GET", engine_path("/containers/{0}/json", name))
        theirs = docker_client.api.inspect_container(created["Id"])
        assert ours == theirs
        assert ours["Name"] == f"/{name}" and ours["State"]["Running"] is True
        assert ours["Config"]["Labels"]["io.vk-provider.test"] == "socket-api"
        image = await inspect_image(engine, PAUSE_IMAGE)
        assert image == docker_client.api.inspect_image(PAUSE_IMAGE)
        assert ours["Image"] == image["Id"]
    finally:
        docker_client.api.remove_container(created["Id"], force=True)


async def test_errors_are_docker_pys_errors_with_the_engines_explanation(
    engine: Engine, docker_client: Any
) -> None:
    with pytest.raises(NotFound) as ours:
        await engine.request("inspect_container", "GET", engine_path("/containers/{0}/json", "vk-test-none"))
    with pytest.raises(NotFound) as theirs:
        docker_client.api.inspect_container("vk-test-none")
    assert ours.value.explanation == theirs.value.explanation
    assert ours.value.status_code == 404 and str(ours.value) == str(theirs.value)
    with pytest.raises(ImageNotFound):
        await inspect_image(engine, "vk-test/no-such-image:1")
    params, body = create_request(engine.client, "vk-test/no-such-image:1")
    with pytest.raises(ImageNotFound, match="No such image"):
        await engine.request("create_container", "POST", "/containers/create", params=params, body=body)


async def test_calls_one_after_another_share_one_kept_alive_connection(
    engine: Engine, proxy: ConnectionCountingProxy
) -> None:
    before = proxy.connections  # connect()'s docker-py clients asked for the API version
    for _ in range(20):
        await inspect_image(engine, PAUSE_IMAGE)
    assert proxy.connections - before == 1
    assert proxy.counts["GET /images/{name}/json"] == 20


async def test_calls_go_on_after_the_engine_closed_their_connections(
    engine: Engine, proxy: ConnectionCountingProxy
) -> None:
    await inspect_image(engine, PAUSE_IMAGE)
    await proxy.stop()  # the engine goes away: its connections are closed
    with pytest.raises(requests.exceptions.ConnectionError):  # what docker-py raises there too
        await inspect_image(engine, PAUSE_IMAGE)
    await proxy.start()  # and comes back: the next call needs no retry
    assert (await inspect_image(engine, PAUSE_IMAGE))["RepoTags"]
