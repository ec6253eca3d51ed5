"""bench/docker_engine.py: Docker path templates, the request scanner of the counting proxy, and
the removal of a node's left-over pod cgroups."""

from __future__ import annotations

from pathlib import Path

from bench import docker_engine
from bench.docker_engine import remove_node_cgroups
from vk_provider.config import DockerConfig


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


def test_a_nodes_left_over_pod_cgroups_are_removed_and_no_one_elses(tmp_path: Path) -> None:
    """The bench removes what a sandbox's --clean left of its node (cgroup v2 layout under a
    stand-in mount): the pods' cgroups and the node's own, not another node's."""
    root = tmp_path / DockerConfig().cgroup_root.strip("/")
    left = [root / "n1" / "besteffort" / "poda", root / "n1" / "burstable" / "podb", root / "n1" / "podc"]
    other = root / "n2" / "besteffort" / "podd"
    for directory in (*left, other):
        directory.mkdir(parents=True)
    assert remove_node_cgroups("n1", "cgroupfs", 2, mount=tmp_path) == 3
    assert not (root / "n1").exists()
    assert other.is_dir()
    assert remove_node_cgroups("n1", "cgroupfs", 2, mount=tmp_path) == 0
