"""bench/docker_engine.py: Docker path templates and the request scanner of the counting proxy."""

from __future__ import annotations

from bench import docker_engine


def test_path_template_takes_out_versions_ids_names_and_queries() -> None:
    assert docker_engine.path_template("/v1.47/containers/3f2a9c/json?size=0") == "/containers/{id}/json"
    assert docker_engine.path_template("/v1.47/containers/json?all=1&filters=x") == "/containers/json"
    assert docker_engine.path_template("/v1.47/containers/create?name=k8s_app") == "/containers/create"
    assert docker_engine.path_template("/v1.47/exec/abc/start") == "/exec/{id}/start"
    assert docker_engine.path_template("/v1.47/images/vk-test/busybox:1/json") == "/images/{name}/json"
    assert docker_engine.path_template("/v1.47/images/create?fromImage=x") == "/images/create"
    assert docker_engine.path_template("/_ping") == "/_ping"
    assert docker_engine.path_template("/v1.47/volumes?filters=x") == "/volumes"


def test_scanner_counts_pipelined_requests_and_skips_bodies() -> None:
    seen: list[str] = []
    scanner = docker_engine._RequestScanner(seen.append)
    body = b'{"Image": "GET /containers/x/json HTTP/1.1\\r\\n\\r\\n"}'
    stream = (
        b"POST /v1.47/containers/create HTTP/1.1\r\nHost: x\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
        + b"GET /v1.47/containers/abc/json HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    for i in range(0, len(stream), 7):  # in small pieces, as a socket may deliver them
        scanner.feed(stream[i : i + 7])
    assert seen == ["POST /containers/create", "GET /containers/{id}/json"]


def test_scanner_stops_after_a_hijack() -> None:
    seen: list[str] = []
    scanner = docker_engine._RequestScanner(seen.append)
    scanner.feed(
        b"POST /v1.47/exec/abc/start HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
        b"Content-Length: 2\r\n\r\n{}GET /not/a/request HTTP/1.1\r\n\r\n"
    )
    assert seen == ["POST /exec/{id}/start"]
