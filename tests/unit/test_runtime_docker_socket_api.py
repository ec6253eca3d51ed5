"""What `socket_api.SocketApi` makes of an engine's answers, on a stand-in engine socket (an aiohttp
server, or a bare one on asyncio's streams where the engine must misbehave on the wire; the real
engine's answers are in tests/integration/test_runtime_docker_socket_api.py): the errors a caller
gets are docker-py's and requests', whatever the socket says, and never anything else; a GET whose
kept connection the engine closed is sent again once, a POST is not; a chunked answer is read
whole."""

from __future__ import annotations

import asyncio
import json
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


async def test_an_engine_that_does_not_answer_is_a_connection_error_saying_so(tmp_path: Path) -> None:
    """A hung engine (it reads the request and never answers) gives an error that says what
    happened, not an empty reason (a timeout's own message is empty)."""
    held: list[asyncio.StreamWriter] = []

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.readuntil(b"\r\n\r\n")

    path = str(tmp_path / "hung.sock")
    server = await asyncio.start_unix_server(mute, path)
    api = SocketApi(path, limit=2, timeout=0.2)
    try:
        with pytest.raises(
            requests.exceptions.ConnectionError,
            match=r"GET /containers/c1/json on unix://.*: no answer within 0.2 s$",
        ):
            await api.request("GET", "/containers/c1/json", "1.45")
    finally:
        await api.close()
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


@pytest.fixture
async def forgetful_engine(tmp_path: Path) -> AsyncIterator[tuple[SocketApi, list[str]]]:
    """A SocketApi on a stand-in engine that answers the first request on a connection
    (keep-alive) and closes the connection on the second without answering: the engine closing a
    kept connection just as a request is sent on it. With the requests the engine read, as
    `connection#: request line`."""
    seen: list[str] = []
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        number = connections
        try:
            for turn in range(2):
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                seen.append(f"{number}: {head.split(b' HTTP/')[0].decode()}")
                if turn == 1:
                    break
                writer.write(OK_HEAD + b"Content-Length: 13\r\n\r\n" + b'{"turn": "1"}')
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    path = str(tmp_path / "forgetful.sock")
    server = await asyncio.start_unix_server(serve, path)
    api = SocketApi(path, limit=2, timeout=10)
    try:
        yield api, seen
    finally:
        await api.close()
        server.close()
        await server.wait_closed()


async def test_a_get_on_a_kept_connection_the_engine_closed_is_sent_again_once(
    forgetful_engine: tuple[SocketApi, list[str]],
) -> None:
    api, seen = forgetful_engine
    assert await api.request("GET", "/containers/a/json", "1.45") == {"turn": "1"}
    assert await api.request("GET", "/containers/b/json", "1.45") == {"turn": "1"}
    assert seen == [
        "1: GET /v1.45/containers/a/json",
        "1: GET /v1.45/containers/b/json",
        "2: GET /v1.45/containers/b/json",
    ]


async def test_a_post_on_a_kept_connection_the_engine_closed_is_not_sent_again(
    forgetful_engine: tuple[SocketApi, list[str]],
) -> None:
    api, seen = forgetful_engine
    await api.request("GET", "/containers/a/json", "1.45")
    with pytest.raises(requests.exceptions.ConnectionError):
        await api.request("POST", "/containers/b/start", "1.45")  # the engine may have started it
    assert seen == ["1: GET /v1.45/containers/a/json", "1: POST /v1.45/containers/b/start"]


async def test_an_answer_split_in_chunks_is_read_whole(tmp_path: Path) -> None:
    """The engine sends a long answer (an inspect of a big container) with chunked encoding."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = json.dumps({"Env": [f"V{i}=" + "x" * 50 for i in range(200)]}).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for start in range(0, len(body), 4096):
            part = body[start : start + 4096]
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        await reader.read()  # until the client closes

    path = str(tmp_path / "chunked.sock")
    server = await asyncio.start_unix_server(serve, path)
    api = SocketApi(path, limit=2, timeout=10)
    try:
        answer = await api.request("GET", "/containers/big/json", "1.45")
    finally:
        await api.close()
        server.close()
    assert len(answer["Env"]) == 200 and answer["Env"][199] == "V199=" + "x" * 50


async def test_a_path_holding_a_line_break_is_never_sent(api: SocketApi) -> None:
    """A target that would end the request line and start a header is an error, not a request."""
    with pytest.raises(requests.exceptions.ConnectionError, match="line break"):
        await api.request("GET", "/containers/c1\r\nX-Smuggled: 1/json", "1.45")
    assert await api.request("POST", "/containers/c1/start", "1.45") is None  # the connection still serves
