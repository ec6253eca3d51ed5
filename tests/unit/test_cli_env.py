"""The command line's `--version`, `check-config --config` and `VK_PROVIDER_*` variables (issue 29, item 4).

What a user sees: `vk-provider --version` prints the package version; `check-config` takes the
file positionally or as `--config`; each flag of a subcommand has a variable, a flag wins over
its variable, the variable over the configuration file, the file over the defaults; a bad
variable is one line naming it and exit 2. The bad-kubeconfig cases are test_config_files.py's.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.fake_provider import fake_provider
from tests.support.kubeconfigs import write_kubeconfig
from vk_cli.env import env_flags
from vk_cli.main import build_parser, main
from vk_provider import __version__

REPO = Path(__file__).resolve().parents[2]
COMMAND = REPO / ".venv" / "bin" / "vk-provider"


@pytest.fixture(autouse=True)
def no_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("VK_PROVIDER_")]:
        monkeypatch.delenv(name)


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A configuration naming a node and a log level, with a usable kubeconfig in $KUBECONFIG."""
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig")))
    path = tmp_path / "config.yaml"
    path.write_text("node:\n  name: from-file\nlogging:\n  level: warning\n")
    return path


def test_version_flag_prints_the_package_version() -> None:
    done = subprocess.run([COMMAND, "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"vk-provider {__version__}\n", "")


def test_check_config_takes_the_file_as_config_too(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-config", str(config_file)]) == 0
    positional = capsys.readouterr()
    assert main(["check-config", "--config", str(config_file)]) == 0
    assert capsys.readouterr() == positional
    assert yaml.safe_load(positional.out)["node"]["name"] == "from-file"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check-config"], "a configuration file is required: FILE or --config FILE"),
        (["check-config", "a.yaml", "--config", "b.yaml"], "FILE and --config name different files"),
    ],
)
def test_check_config_without_one_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"vk-provider check-config: {message}\n"


def test_check_config_reads_the_config_variable(
    config_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VK_PROVIDER_CONFIG", str(config_file))
    assert main(["check-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["node"]["name"] == "from-file"
    other = config_file.with_name("other.yaml")
    other.write_text("node:\n  name: from-word\n")
    assert main(["check-config", str(other)]) == 0, "the file named wins over the variable"
    assert yaml.safe_load(capsys.readouterr().out)["node"]["name"] == "from-word"


def test_run_takes_flags_then_variables_then_the_file_then_defaults(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = fake_provider(monkeypatch)
    monkeypatch.setenv("VK_PROVIDER_CONFIG", str(config_file))
    monkeypatch.setenv("VK_PROVIDER_NODE_NAME", "from-env")
    monkeypatch.setenv("VK_PROVIDER_LOG_FORMAT", "json")
    monkeypatch.setenv("VK_PROVIDER_LOG_LEVEL", "")  # empty: unset
    assert main(["run"]) == 0
    assert main(["run", "--node-name", "from-flag"]) == 0
    first, second = seen
    assert first.node.name == "from-env"  # type: ignore[attr-defined]
    assert second.node.name == "from-flag"  # type: ignore[attr-defined]
    for config in seen:
        assert config.logging.level == "warning"  # type: ignore[attr-defined]  # the file's
        assert config.logging.format == "json"  # type: ignore[attr-defined]  # the variable's
        assert config.docker.max_concurrency == 8  # type: ignore[attr-defined]  # the default


@pytest.mark.parametrize(
    ("argv", "name", "value", "reason"),
    [
        (["run"], "VK_PROVIDER_LOG_LEVEL", "loud", "expected one of debug, info, warning, error, got 'loud'"),
        (["run"], "VK_PROVIDER_NODE_NAME", "Not_A_Name", "must be a DNS-1123 subdomain"),
        (["sandbox"], "VK_PROVIDER_NODES", "three", "not a valid int: 'three'"),
        (["sandbox"], "VK_PROVIDER_CONTROL_PLANE", "cloud", "expected one of emulator, real, got 'cloud'"),
        (["sandbox"], "VK_PROVIDER_CLEAN", "maybe", "expected one of 1, true, yes, on, 0, false, no, off"),
    ],
)
def test_a_bad_variable_is_one_line_naming_it_and_exit_2(
    config_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    name: str,
    value: str,
    reason: str,
) -> None:
    started = fake_provider(monkeypatch)
    monkeypatch.setenv("VK_PROVIDER_CONFIG", str(config_file))
    monkeypatch.setenv(name, value)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and started == []
    assert err.startswith(f"environment: {name}: {reason}") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_a_variable_of_another_subcommand_is_not_read(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--nodes` is the sandbox's: a bad VK_PROVIDER_NODES does not stop `run`."""
    seen = fake_provider(monkeypatch)
    monkeypatch.setenv("VK_PROVIDER_NODES", "three")
    assert main(["run", "--config", str(config_file)]) == 0
    assert len(seen) == 1


def test_a_switch_variable_turns_the_switch_on_or_off(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("yes", True), ("0", False)):
        monkeypatch.setenv("VK_PROVIDER_CLEAN", value)
        args = build_parser("sandbox", os.environ).parse_args(["sandbox"])
        assert args.clean is expected


def test_configuration_docs_list_every_variable_of_run_and_sandbox() -> None:
    table = (REPO / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `(VK_PROVIDER_[A-Z_]+)` \|", table, re.MULTILINE))
    parser = build_parser()
    assert parser._subparsers is not None
    commands: dict[str, argparse.ArgumentParser] = parser._subparsers._group_actions[0].choices  # type: ignore[assignment]
    for command in ("run", "sandbox", "check-config", "clean", "remove-node"):
        names = {name for name, _ in env_flags(commands[command])}
        assert names <= documented, f"{command}: undocumented {sorted(names - documented)}"
