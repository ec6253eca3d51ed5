"""The `vk-provider` command line, called in-process (vk_cli.main.main)."""

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from tests.support.fake_provider import fake_provider
from tests.support.klog import parse_line
from tests.support.kubeconfigs import write_kubeconfig
from vk_cli.main import main
from vk_provider import __version__
from vk_provider.config import Config
from vk_provider.config_load import effective_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A usable kubeconfig in $KUBECONFIG: check-config and run check the one they would use."""
    path = write_kubeconfig(tmp_path / "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


@pytest.mark.usefixtures("kubeconfig")
def test_check_config_example_prints_effective_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(REPO / "config.example.yaml")]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    printed = yaml.safe_load(out)
    assert printed == effective_config(Config())
    assert printed["docker"]["maxConcurrency"] == 8
    assert printed["status"]["syncPeriod"] == "10s"
    assert printed["node"]["statusReportInterval"] == "5m"


@pytest.mark.usefixtures("kubeconfig")
def test_check_config_fills_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("node:\n  name: docker-7\n")
    assert main(["check-config", str(path)]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["node"]["name"] == "docker-7"
    assert printed["staticPods"]["relistInterval"] == "20s"


BAD_CONFIGS = [
    (
        "docker:\n  maxConcurrency: many\n",
        "config.yaml: docker.maxConcurrency: expected a positive integer, got 'many'",
    ),
    ("bogus: 1\n", "config.yaml: bogus: unknown key"),
    ("node:\n  nmae: x\n", "config.yaml: node.nmae: unknown key"),
    ("node:\n  capacity:\n    gpu: 1\n", "config.yaml: node.capacity.gpu: unknown key"),
    (
        "kubeletServer:\n  tls:\n    mode: files\n    cert: a\n",
        "config.yaml: kubeletServer.tls.cert: unknown key",
    ),
    ("metrics:\n  enabled: 1\n", "config.yaml: metrics.enabled: expected true or false, got 1"),
    ("kubernetes:\n  burst: 1.5\n", "config.yaml: kubernetes.burst: expected a positive integer, got 1.5"),
    (
        "node:\n  capacity:\n    memory: 16GB\n",
        "config.yaml: node.capacity.memory: expected a Kubernetes quantity",
    ),
    ("status:\n  syncPeriod: ten\n", "config.yaml: status.syncPeriod: expected a duration"),
    ("logging:\n  format: xml\n", "config.yaml: logging.format: expected one of text, json, got 'xml'"),
    (
        "node:\n  taints:\n  - key: a\n    effect: Never\n",
        "config.yaml: node.taints[0].effect: expected one of",
    ),
    ("- node\n- docker\n", "config.yaml: expected a mapping of sections at the top level, got a list"),
    ("just text\n", "config.yaml: expected a mapping of sections at the top level, got text"),
    ("node:\n  name: a\n  name: b\n", "config.yaml:3:3: invalid YAML: duplicate key 'name'"),
    ("node:\n  name: [a\n", "config.yaml:3:1: invalid YAML:"),
    ("node:\n  name: a\n bad: b\n", "config.yaml:3:2: invalid YAML:"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_CONFIGS)
def test_check_config_rejects_bad_files(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("config.yaml").write_text(text)
    assert main(["check-config", "config.yaml"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(expected), err
    assert err.count("\n") == 1, "one line"


def test_check_config_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "absent.yaml"
    assert main(["check-config", str(path)]) == 2
    assert capsys.readouterr().err == f"{path}: no such file\n"


def test_check_config_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"{tmp_path}: is a directory, not a configuration file\n"


def test_run_with_bad_config_exits_2_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("docker:\n  network: 3\n")
    assert main(["run", "--config", str(path)]) == 2
    assert capsys.readouterr().err == f"{path}: docker.network: expected a string, got 3\n"


def test_run_with_bad_flag_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    example = str(REPO / "config.example.yaml")
    assert main(["run", "--config", example, "--log-level", "loud"]) == 2
    assert capsys.readouterr().err.startswith("command line: --log-level: expected one of debug, info")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    assert capsys.readouterr().out == f"vk-provider {__version__}\n"


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["frobnicate"]) == 2
    assert main(["run"]) == 2, "--config is required"
    assert "usage: vk-provider" in capsys.readouterr().err


def test_remove_node_names_a_bad_deployment_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    example = str(REPO / "config.example.yaml")
    assert main(["remove-node", "--config", example, "--stop-deployment", "just-a-name"]) == 2
    err = capsys.readouterr().err
    assert "argument --stop-deployment: expected NAMESPACE/NAME, got 'just-a-name'" in err, err


def test_remove_node_hands_the_config_and_the_deployment_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str | None]] = []

    async def remove_node(config: Config, *, deployment: str | None = None) -> int:
        seen.append((config.node.name, deployment))
        return 1

    fake = types.ModuleType("vk_provider.node_removal")
    fake.remove_node = remove_node  # type: ignore[attr-defined]
    fake.parse_deployment = lambda value: tuple(value.split("/"))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vk_provider.node_removal", fake)
    path = tmp_path / "config.yaml"
    path.write_text("node:\n  name: docker-1\n")
    assert main(["remove-node", "--config", str(path), "--stop-deployment", "vk-system/vk"]) == 1
    assert main(["remove-node", "--config", str(path), "--node-name", "docker-2"]) == 1
    assert seen == [("docker-1", "vk-system/vk"), ("docker-2", None)]


def test_run_hands_the_overridden_config_to_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig"))
    seen = fake_provider(monkeypatch, exit_code=3)
    path = tmp_path / "config.yaml"
    path.write_text("node:\n  name: from-file\nlogging:\n  level: warning\n")
    argv = [
        "run",
        "--config",
        str(path),
        "--node-name",
        "from-flag",
        "--kubeconfig",
        kubeconfig,
        "--log-format",
        "json",
    ]
    assert main(argv) == 3
    (config,) = seen
    assert config.node.name == "from-flag"
    assert config.kubernetes.kubeconfig == kubeconfig
    assert (config.logging.level, config.logging.format) == ("warning", "json")


def test_python_dash_m_runs_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vk_cli", "version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"vk-provider {__version__}\n")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_an_unreachable_docker_engine_is_one_error_line_and_exit_1(tmp_path: Path, fmt: str) -> None:
    """No engine at DOCKER_HOST: the provider stops at start-up with one line naming the engine's
    address and the reason, no traceback (the apiserver is never reached before the engine)."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"node:\n  name: no-engine\nkubeletServer:\n  listen: 127.0.0.1:0\nlogging:\n  format: {fmt}\n"
    )
    socket = f"unix://{tmp_path}/no-docker.sock"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vk_cli",
            "run",
            "--config",
            str(config),
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "DOCKER_HOST": socket},
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    parsed = [parse_line(line) for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in parsed if line.severity == "E"]
    assert len(errors) == 1, done.stderr
    expected = f"cannot connect to the Docker engine at {socket}: [Errno 2] No such file or directory"
    assert (errors[0].msg, errors[0].pairs["err"]) == ("provider failed to start", expected), errors
    assert (errors[0].pairs["node"], errors[0].pairs["reason"]) == ("no-engine", "RuntimeUnavailable")
