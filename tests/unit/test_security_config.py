"""Hostile configuration values end in exit code 2 and one line, never a traceback (issue 13, item 9).

Also the bound on quantities and durations (vk_common.quantity) that makes this so, and what a
pod whose memory is out of range gets instead of a crashing sync.
"""

from __future__ import annotations

import sys
import types
from decimal import Decimal
from pathlib import Path

import pytest

from tests.support import docker_kwargs
from tests.support.kubeconfigs import write_kubeconfig
from vk_cli.main import main
from vk_common.qos import pod_qos_class
from vk_common.quantity import (
    MAX_DURATION_NANOS,
    MAX_QUANTITY,
    DurationOutOfRange,
    QuantityOutOfRange,
    parse_duration,
    parse_quantity,
)
from vk_provider.runtime.types import ContainerConfigError

NINES = "9" * 400

HOSTILE = [
    pytest.param(
        'node:\n  capacity:\n    cpu: "1e1000000"\n',
        "config.yaml: node.capacity.cpu: expected a Kubernetes quantity of at most "
        "9223372036854775807, got '1e1000000'",
        id="cpu-1e1000000",
    ),
    pytest.param(
        "node:\n  capacity:\n    memory: 1e9999999999\n",
        "config.yaml: node.capacity.memory: expected a Kubernetes quantity of at most "
        "9223372036854775807, got '1e9999999999'",
        id="memory-1e9999999999",
    ),
    pytest.param(
        "node:\n  capacity:\n    memory: 1e99999999999999999999\n",
        "config.yaml: node.capacity.memory: expected a Kubernetes quantity like",
        id="memory-exponent-beyond-int64",
    ),
    pytest.param(
        "? [a]\n: 1\n",
        "config.yaml:1:3: invalid YAML: a mapping key must be a plain value, not a list or a mapping",
        id="complex-key-top-level",
    ),
    pytest.param(
        "node:\n  ? [a]\n  : 1\n",
        "config.yaml:2:5: invalid YAML: a mapping key must be a plain value, not a list or a mapping",
        id="complex-key-in-a-section",
    ),
    pytest.param(
        "node:\n  labels:\n    ? {a: 1}\n    : x\n",
        "config.yaml:3:7: invalid YAML: a mapping key must be a plain value",
        id="mapping-as-key",
    ),
    pytest.param("[" * 5000 + "\n", "config.yaml: invalid YAML: nested too deeply", id="5000-brackets"),
    pytest.param(
        "node:\n  labels: " + "{a: [" * 2500 + "\n",
        "config.yaml: invalid YAML: nested too deeply",
        id="5000-nested-under-a-key",
    ),
    pytest.param(
        'kubeletServer:\n  listen: "a:²"\n',
        "config.yaml: kubeletServer.listen: expected host:port like '0.0.0.0:10250' or '[::]:10250', "
        "got 'a:²'",
        id="listen-superscript-digit",
    ),
    pytest.param(
        'kubeletServer:\n  listen: "0.0.0.0:١٠٢٥٠"\n',
        "config.yaml: kubeletServer.listen: expected host:port",
        id="listen-arabic-indic-digits",
    ),
    pytest.param(
        f'kubeletServer:\n  listen: "0.0.0.0:{"1" * 5000}"\n',
        "config.yaml: kubeletServer.listen: expected host:port",
        id="listen-5000-digit-port",
    ),
    pytest.param(
        f'status:\n  syncPeriod: "{NINES}s"\n',
        "config.yaml: status.syncPeriod: expected a duration of at most 2562047h47m16.854775807s, "
        f"got '{NINES}s'",
        id="duration-400-nines",
    ),
    pytest.param(
        f'pods:\n  resyncInterval: "1.{NINES}h{NINES}m"\n',
        "config.yaml: pods.resyncInterval: expected a duration of at most 2562047h47m16.854775807s",
        id="duration-400-nines-in-parts",
    ),
    pytest.param(
        'node:\n  statusReportInterval: "2562047h47m16.854775808s"\n',
        "config.yaml: node.statusReportInterval: expected a duration of at most 2562047h47m16.854775807s",
        id="duration-one-ns-too-long",
    ),
    pytest.param(
        f"docker:\n  maxConcurrency: {'9' * 5000}\n", "config.yaml: invalid YAML:", id="5000-digit-int"
    ),
    pytest.param(
        "node:\n  name: 2001-02-30\n", "config.yaml: invalid YAML: day is out of range", id="bad-date"
    ),
    pytest.param(  # found by tests/unit/fuzz/test_config_load_fuzz.py: YAML's reader error spans two lines
        "node:\n  name: a\x1fb\n",
        "config.yaml:2:10: invalid YAML: unacceptable character #x001f",
        id="control-character",
    ),
    *(  # found by the same: PyYAML's constructors fail with AttributeError, IndexError, KeyError
        pytest.param(
            f"node:\n  name: {tagged}\n",
            "config.yaml: invalid YAML: a tagged value that does not fit its tag",
            id=f"tag-{tagged}",
        )
        for tagged in ("!!timestamp 2001-02-30-", "!!float", "!!int", "!!bool x")
    ),
]


@pytest.mark.parametrize(("text", "expected"), HOSTILE)
@pytest.mark.parametrize("command", ["check-config", "run"])
def test_hostile_values_exit_2_with_one_line_naming_the_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    expected: str,
    command: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("config.yaml").write_text(text, encoding="utf-8")
    started: list[object] = []

    async def run_provider(config: object) -> int:  # must not be reached
        started.append(config)
        return 0

    fake_app = types.ModuleType("vk_provider.app")
    fake_app.run_provider = run_provider  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vk_provider.app", fake_app)
    argv = (
        ["check-config", "config.yaml"] if command == "check-config" else ["run", "--config", "config.yaml"]
    )
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(expected), err[:300]
    assert err.count("\n") == 1, "one line"
    assert "Traceback" not in err
    assert started == []


def test_the_bounds_still_admit_what_is_in_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig")))
    path = tmp_path / "config.yaml"
    path.write_text(
        "node:\n  capacity:\n    cpu: '9223372036854775807'\n    memory: 9Ei\n"
        "status:\n  syncPeriod: 2562047h47m16.854775807s\n"
        "kubeletServer:\n  listen: '[::]:65535'\n"
    )
    assert main(["check-config", str(path)]) == 0
    assert "memory: 9Ei" in capsys.readouterr().out


# --- the bound itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "1e1000000",
        "1e9999999999",
        "9223372036854775808",
        "-1e1000000",
        "1e19",
        "10E",
        "9223372036854775807.1",
    ],
)
def test_decimal_quantities_beyond_int64_are_refused_at_once(text: str) -> None:
    with pytest.raises(QuantityOutOfRange, match="out of range"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("9223372036854775807", Decimal(MAX_QUANTITY)),
        ("9.223372036854775807e18", Decimal(MAX_QUANTITY)),
        ("9Ei", Decimal(MAX_QUANTITY)),  # a binary quantity is capped, as ParseQuantity does
        ("1" + "0" * 100000 + "Ki", Decimal(MAX_QUANTITY)),
        ("-9Ei", Decimal(-MAX_QUANTITY)),
        ("7Ei", Decimal(7 * 2**60)),
        ("1e-12", Decimal("1e-9")),  # rounded up to 1n
        ("1e-9999999999", Decimal("1e-9")),
        ("0e99999", Decimal(0)),
        ("0." + "0" * 1000 + "1e1010", Decimal("1e9")),
    ],
)
def test_quantities_at_the_edges(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_an_exponent_beyond_int64_is_not_a_quantity() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity("1e" + "9" * 30)


def test_durations_are_bounded_as_go_time_duration() -> None:
    assert parse_duration("2562047h47m16.854775807s") == MAX_DURATION_NANOS / 1e9
    for text in (f"{NINES}s", "2562047h47m16.854775808s", "9223372036854775808ns"):
        with pytest.raises(DurationOutOfRange):
            parse_duration(text)
    assert parse_duration(f"1.{'0' * 5000}1s") == 1.0  # digits below a nanosecond are dropped
    assert parse_duration("0.5ns") == 0.0


# --- a pod whose quantity is out of range -------------------------------------------------------


def test_an_out_of_range_memory_limit_is_a_container_config_error() -> None:
    container = {"name": "c", "resources": {"limits": {"memory": "1e1000000", "cpu": "1"}}}
    with pytest.raises(ContainerConfigError) as refused:
        docker_kwargs.resource_kwargs(container, "spec.containers[0]")
    assert refused.value.reason == "CreateContainerConfigError"
    assert refused.value.message == (
        "spec.containers[0].resources: quantity out of range (at most 9223372036854775807): '1e1000000'"
    )


def test_the_pod_status_of_such_a_pod_is_still_generated() -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": "1e1000000"}}}]}}
    assert pod_qos_class(pod) == "BestEffort"  # the unusable limit counts as none
