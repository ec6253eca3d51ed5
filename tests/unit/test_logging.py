"""Log lines as a user reads them (`kubectl logs`, a log shipper): the JSON fields of a line's
context (`node`, `pod`, `uid`, `container`, `reason`) and the text line's `key=value` prefix."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from vk_provider.logging import get_logger, pod_fields, setup_logging

POD = {"metadata": {"name": "web", "namespace": "shop", "uid": "1b2c"}}


@pytest.fixture
def restore_root() -> Iterator[None]:
    """setup_logging replaces the root handler and sets the levels; put pytest's back afterwards."""
    root, ours = logging.getLogger(), logging.getLogger("vk_provider")
    handlers, levels = list(root.handlers), (root.level, ours.level)
    yield
    root.handlers[:] = handlers
    root.setLevel(levels[0])
    ours.setLevel(levels[1])


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_json_lines_carry_pod_uid_container_and_reason_as_fields(
    restore_root: None, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("info", "json")
    log = get_logger("pods.containers")
    log.info(
        "container %s: %s",
        "app",
        "back-off",
        extra=pod_fields(POD, container="app", reason="CrashLoopBackOff"),
    )
    log.info("pulled image %s", "busybox", extra=pod_fields(POD))
    log.info("provider started", extra={"node": "docker-1"})
    first, second, third = (json.loads(line) for line in lines(capsys))
    assert {k: v for k, v in first.items() if k != "time"} == {
        "level": "info",
        "component": "pods.containers",
        "msg": "container app: back-off",
        "pod": "shop/web",
        "uid": "1b2c",
        "container": "app",
        "reason": "CrashLoopBackOff",
    }
    assert (second["pod"], second["uid"]) == ("shop/web", "1b2c")
    assert "container" not in second and "reason" not in second  # only where they apply
    assert third["node"] == "docker-1" and "pod" not in third


def test_text_lines_name_the_node_pod_and_container(
    restore_root: None, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("info", "text")
    get_logger("pods.containers").info(
        "started container app", extra={"node": "docker-1", **pod_fields(POD, container="app")}
    )
    [line] = lines(capsys)
    assert line.endswith(" [pods.containers] node=docker-1 pod=shop/web container=app started container app")


def test_pod_fields_of_a_pod_without_uid_has_no_uid() -> None:
    assert pod_fields({"metadata": {"name": "p", "namespace": "d"}}) == {"pod": "d/p"}
