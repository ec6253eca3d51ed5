"""`/logs/` as the 1.37 kubelet answers it: the handler off, the log directory as files, and the
node log query over the provider's own lines, a journald stand-in and log files."""

from __future__ import annotations

import gzip
import os
import stat
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from tests.support.process_log import process_log_attached
from vk_common.logging import get_logger
from vk_provider.kubeletapi.node_log_query import parse_query, validate
from vk_provider.kubeletapi.node_logs import NodeLogSettings, node_logs_handler


async def _client(settings: NodeLogSettings) -> TestClient[web.Request, web.Application]:
    app = web.Application()
    handler = node_logs_handler(settings)
    app.router.add_get("/logs", handler)
    app.router.add_get("/logs/{path:.*}", handler)
    client: TestClient[web.Request, web.Application] = TestClient(TestServer(app))
    await client.start_server()
    return client


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "var-log"
    (directory / "sub").mkdir(parents=True)
    (directory / "syslog").write_text("a syslog line\n")
    (directory / "sshd.log").write_text("an sshd line\n")
    (directory / "sub" / "sub.log").write_text("a sub line\n")
    (tmp_path / "secret").write_text("outside\n")
    os.symlink(tmp_path / "secret", directory / "escape")
    return directory


@pytest.fixture
async def query_client(log_dir: Path) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    client = await _client(NodeLogSettings(True, True, log_dir))
    yield client
    await client.close()


async def test_the_handler_off_answers_405_on_every_path(log_dir: Path) -> None:
    client = await _client(NodeLogSettings(False, True, log_dir))
    try:
        for path in ("/logs", "/logs/", "/logs/syslog", "/logs/?query=vk-provider"):
            response = await client.get(path)
            assert (response.status, await response.text()) == (405, "logs endpoint is disabled.\n")
    finally:
        await client.close()


async def test_without_the_query_the_directory_is_served_as_files(log_dir: Path) -> None:
    client = await _client(NodeLogSettings(True, False, log_dir))
    try:
        listing = await (await client.get("/logs/")).text()
        assert '<a href="sshd.log">sshd.log</a>' in listing and '<a href="sub/">sub/</a>' in listing
        assert await (await client.get("/logs/syslog")).text() == "a syslog line\n"
        # the query is not read when it is off: the directory again
        assert "<pre>" in await (await client.get("/logs/?query=vk-provider")).text()
        assert (await client.get("/logs/escape")).status == 404  # a symlink out of the directory
        assert (await client.get("/logs/../secret")).status == 404
        assert (await client.get("/logs/nothing")).status == 404
    finally:
        await client.close()


async def test_the_query_reads_the_providers_own_recent_lines(
    query_client: TestClient[web.Request, web.Application],
) -> None:
    log = get_logger("test.nodelogs")
    with process_log_attached():
        for i in range(5):
            log.info("a line for the node log query", extra={"i": i})
        log.info("unrelated")

    answer = await query_client.get("/logs/", params={"query": "vk-provider", "pattern": "node log query"})
    assert answer.headers["Content-Type"] == "text/plain;charset=UTF-8"
    lines = (await answer.text()).splitlines()
    assert [line.rsplit(" ", 1)[-1] for line in lines[-5:]] == [f"i={i}" for i in range(5)]
    assert all('"a line for the node log query"' in line for line in lines)

    tail = await query_client.get(
        "/logs/", params={"query": "vk-provider", "pattern": "node log query", "tailLines": "2"}
    )
    assert [line.rsplit(" ", 1)[-1] for line in (await tail.text()).splitlines()] == ["i=3", "i=4"]

    future = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert await (await query_client.get(f"/logs/?query=vk-provider&sinceTime={future}")).text() == ""

    zipped = await query_client.get(
        "/logs/?query=vk-provider&tailLines=1", headers={"Accept-Encoding": "gzip"}, auto_decompress=False
    )
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(await zipped.read()).decode().count("\n") == 1


async def test_a_service_without_a_journal_is_read_from_its_files(
    query_client: TestClient[web.Request, web.Application], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no journalctl on this host
    assert await (await query_client.get("/logs/?query=sshd")).text() == "an sshd line\n"
    assert await (await query_client.get("/logs/?query=sub")).text() == "a sub line\n"
    assert await (await query_client.get("/logs/?query=nope")).text() == "\nlog not found for nope\n"
    with_options = await (await query_client.get("/logs/?query=sshd&tailLines=1")).text()
    assert with_options == (
        "\noptions present and query resolved to log files for [sshd]\ntry without specifying options\n"
    )
    assert await (await query_client.get("/logs/?query=/syslog")).text() == "a syslog line\n"


async def test_a_journald_unit_is_read_with_the_kubelets_journalctl_arguments(
    query_client: TestClient[web.Request, web.Application], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A stand-in journalctl (these machines have no journald) that knows unit containerd."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "journalctl"
    stand_in.write_text(
        '#!/bin/sh\nif [ "$1" = --field ]; then echo containerd.service; exit 0; fi\necho "journalctl $*"\n'
    )
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    answer = await query_client.get(
        "/logs/?query=containerd&sinceTime=2026-12-05T10:00:00Z&tailLines=3&pattern=err&boot=0"
    )
    assert await answer.text() == (
        "journalctl --utc --no-pager --output=short-precise --since=2026-12-05 10:00:00 --pager-end "
        "--lines=3 --unit=containerd --grep=err --boot 0\n"
    )


@pytest.mark.parametrize(
    ("query", "status", "text"),
    [
        ("query=", 400, 'query: Invalid value: [""]: may not be empty'),
        (
            "query=x&tailLines=ten",
            400,
            'tailLines: Invalid value: "ten": strconv.Atoi: parsing "ten": invalid syntax',
        ),
        ("query=x&sinceTime=yesterday", 400, 'sinceTime: Invalid value: "yesterday": invalid time format'),
        ("tailLines=3", 406, "query: Required value: cannot be empty with options"),
        (
            "query=x&tailLines=100001",
            406,
            "tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive",
        ),
        ("query=x&boot=1", 406, "boot: Invalid value: 1: must be less than 1"),
        ("query=a;b", 406, 'query: Invalid value: "a;b": input contains unsupported characters'),
        ("query=a&query=b&query=c&query=d&query=e", 406, "query: Too many: 5: must have at most 4 items"),
        (
            "query=/syslog&query=sshd",
            406,
            'query: Invalid value: "[/syslog], [sshd]": cannot specify a file and service',
        ),
        (
            "query=/syslog&tailLines=1",
            406,
            'query: Invalid value: ["/syslog"]: cannot specify file with options',
        ),
        ("query=/none", 406, 'query: Invalid value: ["/none"]: statat /none: no such file or directory'),
        (
            "query=x&sinceTime=2026-12-05T10:00:00Z&untilTime=2026-12-05T09:00:00Z",
            406,
            'untilTime: Invalid value: "2026-12-05T09:00:00Z": must be after `sinceTime`',
        ),
        (
            "query=x&boot=1&tailLines=-1",
            406,
            "[boot: Invalid value: 1: must be less than 1, "
            "tailLines: Invalid value: -1: must be between 0 and 100000, inclusive]",
        ),
    ],
)
async def test_bad_queries_get_the_kubelets_status_and_text(
    query_client: TestClient[web.Request, web.Application], query: str, status: int, text: str
) -> None:
    answer = await query_client.get(f"/logs/?{query}")
    assert (answer.status, await answer.text()) == (status, text + "\n")


async def test_a_path_with_a_query_is_refused(query_client: TestClient[web.Request, web.Application]) -> None:
    answer = await query_client.get("/logs/syslog?query=vk-provider")
    assert (answer.status, await answer.text()) == (406, "path not allowed in query mode\n")


def test_no_parameter_is_no_query_and_a_pattern_must_compile(log_dir: Path) -> None:
    assert parse_query({}) == (None, [])
    query, errors = parse_query({"query": ["vk-provider"], "pattern": ["("]})
    assert errors == [] and query is not None
    assert [e.split(": error parsing regexp")[0] for e in validate(query, log_dir)] == [
        'pattern: Invalid value: "("'
    ]
