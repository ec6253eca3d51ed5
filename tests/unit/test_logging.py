"""Log lines as a user reads them (`kubectl logs`, a log shipper): klog's text format (header,
quoted message, logfmt pairs) and component-base's JSON format, every `extra=` key written, a
pod as klog's KObj, one line per entry even with a traceback, and per-component levels."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from tests.support.klog import parse_line, parse_text
from vk_common.log_ring import PROCESS_LOG
from vk_common.logging import get_logger, pod_fields, setup_logging

POD = {"metadata": {"name": "web", "namespace": "shop", "uid": "1b2c"}}


@pytest.fixture
def restore_root() -> Iterator[None]:
    """setup_logging replaces the root handler and sets the levels; put pytest's back afterwards."""
    root, ours = logging.getLogger(), logging.getLogger("vk_provider")
    pods = logging.getLogger("vk_provider.pods")
    handlers, levels = list(root.handlers), (root.level, ours.level, pods.level)
    yield
    root.handlers[:] = handlers
    root.setLevel(levels[0])
    ours.setLevel(levels[1])
    pods.setLevel(levels[2])


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def _log_sample() -> None:
    log = get_logger("pods.containers")
    log.info(
        "Back-off restarting failed container",
        extra=pod_fields(POD, container="app", reason="CrashLoopBackOff"),
    )
    log.warning(
        "Pulled image", extra={**pod_fields(POD), "image": 'busybox:"1"', "bytes": 4096, "cached": False}
    )
    try:
        raise RuntimeError("engine went away")
    except RuntimeError:
        log.exception("Sync failed", extra={"node": "docker-1"})


def test_text_lines_are_klog_headers_with_logfmt_pairs(
    restore_root: None, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("info", "text")
    _log_sample()
    first, second, third = (parse_text(line) for line in lines(capsys))
    assert (first.severity, first.msg, first.caller.split(":")[0]) == (
        "I",
        "Back-off restarting failed container",
        "test_logging.py",
    )
    assert first.pairs == {
        "logger": "pods.containers",
        "pod": "shop/web",
        "uid": "1b2c",
        "container": "app",
        "reason": "CrashLoopBackOff",
    }
    assert second.severity == "W"
    assert (second.pairs["image"], second.pairs["bytes"], second.pairs["cached"]) == (
        'busybox:"1"',
        "4096",
        "false",
    )
    assert third.severity == "E" and third.pairs["err"] == "engine went away"
    assert "RuntimeError: engine went away" in third.pairs["stacktrace"]  # the traceback, on the one line


def test_json_lines_are_component_base_entries(
    restore_root: None, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("info", "json")
    _log_sample()
    first, second, third = (json.loads(line) for line in lines(capsys))
    assert isinstance(first["ts"], float) and first["caller"].startswith("test_logging.py:")
    assert {k: v for k, v in first.items() if k not in ("ts", "caller")} == {
        "logger": "pods.containers",
        "msg": "Back-off restarting failed container",
        "v": 0,
        "pod": {"name": "web", "namespace": "shop"},
        "uid": "1b2c",
        "container": "app",
        "reason": "CrashLoopBackOff",
    }
    assert (second["v"], second["level"], second["bytes"], second["cached"]) == (0, "warning", 4096, False)
    assert "v" not in third and third["err"] == "engine went away"
    assert [parse_line(json.dumps(e)).severity for e in (first, second, third)] == ["I", "W", "E"]


def test_per_component_levels(restore_root: None, capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging("warning", "text", {"pods": "debug"})
    get_logger("pods.workers").debug("Syncing pod", extra=pod_fields(POD))
    get_logger("node.agent").info("Updated node status")
    [line] = lines(capsys)
    assert parse_text(line).msg == "Syncing pod"


def test_pod_fields_of_a_pod_without_uid_has_no_uid() -> None:
    assert str(pod_fields({"metadata": {"name": "p", "namespace": "d"}})["pod"]) == "d/p"
    assert "uid" not in pod_fields({"metadata": {"name": "p", "namespace": "d"}})


def test_recent_lines_are_kept_only_for_the_node_log_query(restore_root: None) -> None:
    setup_logging("info", "text")
    assert PROCESS_LOG not in logging.getLogger().handlers  # no line formatted a second time
    setup_logging("info", "text", keep_recent=True)
    get_logger("node.agent").info("kept for the query", extra={"node": "vk-1"})
    line = PROCESS_LOG.lines()[-1].text
    assert parse_text(line).msg == "kept for the query" and 'node="vk-1"' in line
