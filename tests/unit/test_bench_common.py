"""The pure parts of bench/common.py: Docker path templates, the request scanner of the counting
proxy, percentiles, the real apiserver's request counts, and the reporting lines."""

from __future__ import annotations

from bench import common


def test_path_template_takes_out_versions_ids_names_and_queries() -> None:
    assert common.path_template("/v1.47/containers/3f2a9c/json?size=0") == "/containers/{id}/json"
    assert common.path_template("/v1.47/containers/json?all=1&filters=x") == "/containers/json"
    assert common.path_template("/v1.47/containers/create?name=k8s_app") == "/containers/create"
    assert common.path_template("/v1.47/exec/abc/start") == "/exec/{id}/start"
    assert common.path_template("/v1.47/images/vk-test/busybox:1/json") == "/images/{name}/json"
    assert common.path_template("/v1.47/images/create?fromImage=x") == "/images/create"
    assert common.path_template("/_ping") == "/_ping"
    assert common.path_template("/v1.47/volumes?filters=x") == "/volumes"


def test_scanner_counts_pipelined_requests_and_skips_bodies() -> None:
    seen: list[str] = []
    scanner = common._RequestScanner(seen.append)
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
    scanner = common._RequestScanner(seen.append)
    scanner.feed(
        b"POST /v1.47/exec/abc/start HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
        b"Content-Length: 2\r\n\r\n{}GET /not/a/request HTTP/1.1\r\n\r\n"
    )
    assert seen == ["POST /exec/{id}/start"]


def test_percentile_interpolates_between_ranks() -> None:
    assert common.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert common.percentile([1.0, 2.0], 50) == 1.5
    assert common.percentile([1.0, 2.0], 99) == 1.99
    assert common.percentile([5.0], 99) == 5.0


def test_real_request_counts_use_the_emulators_keys() -> None:
    metrics = "\n".join(
        [
            "# TYPE apiserver_request_total counter",
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="resource",subresource="status",verb="PATCH",version="v1"} 4',
            'apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="resource",subresource="status",verb="PATCH",version="v1"} 1',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="resource",subresource="",verb="DELETE",version="v1"} 2',
            'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="namespace",subresource="",verb="POST",version="v1"} 2',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",'
            'group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",'
            'version="v1"} 7',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",'
            'scope="",subresource="/metrics",verb="GET",version=""} 3',
        ]
    )
    counts = common.real_request_counts(metrics)
    assert counts == {
        "patch pods/status": 5,
        "delete pods": 2,
        "create pods": 2,
        "update leases.coordination.k8s.io": 7,
    }
    assert common.pod_writes(counts) == 9
    assert common.status_writes(counts) == 5


def test_diff_and_result_line() -> None:
    assert common.diff({"a": 3, "b": 1, "c": 2}, {"a": 1, "b": 1}) == {"a": 2, "c": 2}
    assert common.result_line({"x": 1.0, "n": 2, "k": "emulator"}) == "RESULT x=1.000 n=2 k=emulator"
