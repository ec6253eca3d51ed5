"""What `socket_api.SocketApi` makes of an engine's answers, on a stand-in engine socket (an aiohttp
server on a Unix socket; the real engine's answers are in
tests/integration/test_runtime_docker_socket_api.py): the errors a caller gets are docker-py's and
requests', whatever the socket says, and never anything else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import requests
from aiohttp import web
from docker.errors import APIError, ImageNotFound, NotFound

from vk_provider.runtime.docker.engine import EngineErrors, root_cause
from vk_provider.runtime.docker.socket_api import SocketApi, engine_path


async def answers(request: web.Request) -> web.Response:
    """The stand-in engine: what it answers depends on the path."""
    seen = f"{request.method} {request.path_qs}"
    if request.path.endswith("/images/gone/json"):
        return web.json_response({"message": "No such image: gone:latest"}, status=404)
    if request.path.endswith("/containers/gone/json"):
        return web.json_response({"message": "No such container: gone"}, status=404)
    if request.path.endswith("/broken"):
        return web.json_response({"message": "failed to update store"}, status=500)
    if request.path.endswith("/text"):
        return web.Response(text="<html>not the engine</html>")
    if request.path.endswith("/start"):
        return web.Response(status=204)
    return web.json_response({"seen": seen, "body": await request.text()})


@pytest.fixture
async def engine_socket(tmp_path: Path) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answers)
    runner = web.AppRunner(app)
    await runner.setup()
    path = str(tmp_path / "engine.sock")
    await web.UnixSite(runner, path).start()
    try:
        yield path
    finally:
        await runner.cleanup()


@pytest.fixture
async def api(engine_socket: str) -> AsyncIterator[SocketApi]:
    api = SocketApi(engine_socket, limit=2, timeout=10)
    try:
        yield api
    finally:
        await api.close()


def test_paths_are_quoted_as_docker_py_quotes_them() -> None:
    assert (
        engine_path("/images/{0}/json", "registry.k8s.io/pause:3.10")
        == "/images/registry.k8s.io/pause:3.10/json"
    )
    assert engine_path("/images/{0}/json", "a/b@sha256:00") == "/images/a/b%40sha256:00/json"


async def test_a_request_is_versioned_with_its_query_and_json_body(api: SocketApi) -> None:
    answer = await api.request(
        "POST", "/containers/create", "1.45", {"name": "k8s_x", "platform": None}, {"Image": "i", "Cmd": None}
    )
    assert answer == {"seen": "POST /v1.45/containers/create?name=k8s_x", "body": '{"Image": "i"}'}
    assert await api.request("POST", "/containers/c1/start", "1.45") is None  # 204, no body


async def test_error_answers_are_docker_pys_errors(api: SocketApi) -> None:
    with pytest.raises(ImageNotFound, match="No such image: gone:latest"):
        await api.request("GET", "/images/gone/json", "1.45")
    with pytest.raises(NotFound) as missing:
        await api.request("GET", "/containers/gone/json", "1.45")
    assert not isinstance(missing.value, ImageNotFound) and missing.value.status_code == 404
    with pytest.raises(APIError) as broken:
        await api.request("GET", "/broken", "1.45")
    assert broken.value.is_server_error() and broken.value.explanation == "failed to update store"


async def test_an_answer_that_is_not_json_is_a_requests_error(api: SocketApi) -> None:
    with pytest.raises(EngineErrors) as odd:
        await api.request("GET", "/text", "1.45")
    assert isinstance(odd.value, requests.exceptions.InvalidJSONError)


async def test_no_engine_on_the_socket_is_a_connection_error_naming_the_cause(tmp_path: Path) -> None:
    api = SocketApi(str(tmp_path / "nobody.sock"), limit=2, timeout=10)
    try:
        with pytest.raises(requests.exceptions.ConnectionError) as down:
            await api.request("GET", "/version", "1.45")
    finally:
        await api.close()
    assert "No such file or directory" in root_cause(down.value)
