"""A configuration whose files are bad stops `check-config` and `run` alike (issue 30, items 4 and 5).

Each case is a configuration whose kubeconfig, kubelet API certificate, key or client CA, or
engine address `run` could not use, or a configuration file that is no configuration (shaped
like /etc/shadow). What a user sees, for `check-config` and `run` (in-process, and `run` as the
real command): exit code 2, exactly one line on stderr naming the key path and the reason, no
traceback, and nothing of what the file holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from tests.support.fake_provider import fake_provider
from tests.support.kubeconfigs import write_kubeconfig
from vk_cli.main import main
from vk_provider.config import Config
from vk_provider.config_load import effective_config
from vk_provider.kubeletapi.tls import self_signed

# Shaped like /etc/shadow: each line ends in ':', so YAML reads a mapping whose keys hold the hashes.
SHADOW = "root:$y$j9T$SECRETSALT$SECRETHASH:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n"
KNOWN = ", ".join(effective_config(Config()))  # the top-level sections
ENV_KEYS = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "DOCKER_HOST")

# A case writes config.yaml (and its files) into the directory; returns the environment it
# runs in and the line expected after "config.yaml: ".
Case = Callable[[Path], tuple[dict[str, str], str]]


def _pem_pair(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = self_signed(name, "127.0.0.1")
    (directory / f"{name}.crt").write_bytes(cert)
    (directory / f"{name}.key").write_bytes(key)
    return directory / f"{name}.crt", directory / f"{name}.key"


def _with_kubeconfig(directory: Path, config: str) -> dict[str, str]:
    """config.yaml holding `config`, run with a usable kubeconfig in $KUBECONFIG."""
    (directory / "config.yaml").write_text(config)
    return {"KUBECONFIG": str(write_kubeconfig(directory / "kubeconfig"))}


def _kubeconfig_holding(directory: Path, text: str) -> str:
    (directory / "kc").write_text(text)
    (directory / "config.yaml").write_text(f"kubernetes:\n  kubeconfig: {directory / 'kc'}\n")
    return str(directory / "kc")


def kubeconfig_missing(d: Path) -> tuple[dict[str, str], str]:
    (d / "config.yaml").write_text(f"kubernetes:\n  kubeconfig: {d / 'absent'}\n")
    return {}, f"kubernetes.kubeconfig: {d / 'absent'}: no such file"


def kubeconfig_from_env_missing(d: Path) -> tuple[dict[str, str], str]:
    (d / "config.yaml").write_text("node:\n  name: n1\n")
    return {
        "KUBECONFIG": str(d / "absent")
    }, f"kubernetes.kubeconfig: empty, so $KUBECONFIG: {d / 'absent'}: no such file"


def kubeconfig_path_with_a_newline(d: Path) -> tuple[dict[str, str], str]:
    (d / "config.yaml").write_text('kubernetes:\n  kubeconfig: "/absent\\n/x"\n')
    return {}, "kubernetes.kubeconfig: /absent\\n/x: no such file"


def kubeconfig_not_yaml(d: Path) -> tuple[dict[str, str], str]:
    path = _kubeconfig_holding(d, "apiVersion: v1\nclusters: [\n")
    return {}, f"kubernetes.kubeconfig: {path}: not a kubeconfig: not valid YAML (line 3, column 1)"


def kubeconfig_not_a_mapping(d: Path) -> tuple[dict[str, str], str]:
    path = _kubeconfig_holding(d, "SECRET-TOKEN-abc\n")
    return {}, f"kubernetes.kubeconfig: {path}: not a kubeconfig: not a YAML mapping"


def kubeconfig_shaped_like_shadow(d: Path) -> tuple[dict[str, str], str]:
    path = _kubeconfig_holding(d, SHADOW)
    return {}, f"kubernetes.kubeconfig: {path}: no current-context"


def kubeconfig_without_its_context(d: Path) -> tuple[dict[str, str], str]:
    path = _kubeconfig_holding(d, yaml.safe_dump({"current-context": "gone", "contexts": []}))
    return {}, f"kubernetes.kubeconfig: {path}: current-context names no entry of contexts"


def kubeconfig_is_a_directory(d: Path) -> tuple[dict[str, str], str]:
    (d / "kc").mkdir()
    (d / "config.yaml").write_text(f"kubernetes:\n  kubeconfig: {d / 'kc'}\n")
    return {}, f"kubernetes.kubeconfig: {d / 'kc'}: not a regular file"


def kubeconfig_unreadable(d: Path) -> tuple[dict[str, str], str]:
    """A regular file whose read fails (the tests run as root, whom a mode 000 does not stop)."""
    (d / "config.yaml").write_text("kubernetes:\n  kubeconfig: /proc/self/mem\n")
    return {}, "kubernetes.kubeconfig: /proc/self/mem: cannot read: Input/output error"


def kubeconfig_empty(d: Path) -> tuple[dict[str, str], str]:
    path = _kubeconfig_holding(d, "")
    return {}, f"kubernetes.kubeconfig: {path}: not a kubeconfig: not a YAML mapping"


def kubeconfig_not_text(d: Path) -> tuple[dict[str, str], str]:
    (d / "kc").write_bytes(b"\xff\xfeSECRET\x00")
    (d / "config.yaml").write_text(f"kubernetes:\n  kubeconfig: {d / 'kc'}\n")
    return {}, f"kubernetes.kubeconfig: {d / 'kc'}: not a kubeconfig: not UTF-8 text"


def kubeconfig_without_contexts(d: Path) -> tuple[dict[str, str], str]:
    clusters = [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}]
    path = _kubeconfig_holding(d, yaml.safe_dump({"apiVersion": "v1", "clusters": clusters}))
    return {}, f"kubernetes.kubeconfig: {path}: no current-context"


def _kubeconfig_context(d: Path, context: dict[str, str]) -> str:
    kubeconfig = {
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "SECRET"}}],
        "contexts": [{"name": "ctx", "context": context}],
        "current-context": "ctx",
    }
    return _kubeconfig_holding(d, yaml.safe_dump(kubeconfig))


def kubeconfig_context_names_a_missing_cluster(d: Path) -> tuple[dict[str, str], str]:
    path = _kubeconfig_context(d, {"cluster": "gone", "user": "u"})
    return {}, f"kubernetes.kubeconfig: {path}: the current context's cluster is not in clusters"


def kubeconfig_context_names_a_missing_user(d: Path) -> tuple[dict[str, str], str]:
    path = _kubeconfig_context(d, {"cluster": "c", "user": "gone"})
    return {}, f"kubernetes.kubeconfig: {path}: the current context's user is not in users"


def kubeconfig_ca_missing(d: Path) -> tuple[dict[str, str], str]:
    cluster = {"server": "https://127.0.0.1:1", "certificate-authority": "ca-absent.crt"}
    kubeconfig = {
        "clusters": [{"name": "c", "cluster": cluster}],
        "contexts": [{"name": "c", "context": {"cluster": "c"}}],
        "current-context": "c",
    }
    path = _kubeconfig_holding(d, yaml.safe_dump(kubeconfig))
    return {}, f"kubernetes.kubeconfig: {path}: certificate-authority {d / 'ca-absent.crt'}: no such file"


def empty_config_outside_a_cluster(d: Path) -> tuple[dict[str, str], str]:
    (d / "config.yaml").write_text("")
    return {}, (
        "kubernetes.kubeconfig: empty, and there is no $KUBECONFIG, no ~/.kube/config and no "
        "in-cluster service account ($KUBERNETES_SERVICE_HOST): set it to a kubeconfig file"
    )


def in_a_pod_without_the_service_port(d: Path) -> tuple[dict[str, str], str]:
    (d / "config.yaml").write_text("{}\n")
    return {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, (
        "kubernetes.kubeconfig: empty, so the in-cluster service account: $KUBERNETES_SERVICE_PORT is not set"
    )


def client_ca_missing(d: Path) -> tuple[dict[str, str], str]:
    env = _with_kubeconfig(d, f"kubeletServer:\n  clientCAFile: {d / 'ca.crt'}\n")
    return env, f"kubeletServer.clientCAFile: {d / 'ca.crt'}: no such file"


def client_ca_not_pem(d: Path) -> tuple[dict[str, str], str]:
    (d / "shadow").write_text(SHADOW)
    env = _with_kubeconfig(d, f"kubeletServer:\n  auth: x509\n  clientCAFile: {d / 'shadow'}\n")
    return env, f"kubeletServer.clientCAFile: {d / 'shadow'}: not a PEM certificate"


def _tls_files(d: Path, cert: Path, key: Path) -> dict[str, str]:
    return _with_kubeconfig(
        d, f"kubeletServer:\n  tls:\n    mode: files\n    certFile: {cert}\n    keyFile: {key}\n"
    )


def tls_cert_missing(d: Path) -> tuple[dict[str, str], str]:
    _, key = _pem_pair(d, "serving")
    return _tls_files(
        d, d / "absent.crt", key
    ), f"kubeletServer.tls.certFile: {d / 'absent.crt'}: no such file"


def tls_cert_not_pem(d: Path) -> tuple[dict[str, str], str]:
    _, key = _pem_pair(d, "serving")
    (d / "shadow").write_text(SHADOW)
    return _tls_files(
        d, d / "shadow", key
    ), f"kubeletServer.tls.certFile: {d / 'shadow'}: not a PEM certificate"


def tls_key_not_pem(d: Path) -> tuple[dict[str, str], str]:
    cert, _ = _pem_pair(d, "serving")
    (d / "shadow").write_text(SHADOW)
    return _tls_files(
        d, cert, d / "shadow"
    ), f"kubeletServer.tls.keyFile: {d / 'shadow'}: not a PEM private key"


def tls_key_of_another_certificate(d: Path) -> tuple[dict[str, str], str]:
    cert, _ = _pem_pair(d, "serving")
    _, other = _pem_pair(d, "other")
    expected = f"kubeletServer.tls.keyFile: {other}: not the key of the certificate in certFile"
    return _tls_files(d, cert, other), expected


def tls_key_encrypted(d: Path) -> tuple[dict[str, str], str]:
    cert, key = _pem_pair(d, "serving")
    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        )
    )
    expected = f"kubeletServer.tls.keyFile: {key}: an encrypted key; it must not have a passphrase"
    return _tls_files(d, cert, key), expected


def docker_host_port_out_of_range(d: Path) -> tuple[dict[str, str], str]:
    env = _with_kubeconfig(d, "docker:\n  host: tcp://localhost:99999\n")
    return env, "docker.host: tcp://localhost:99999: Port out of range 0-65535"


def docker_host_port_not_a_number(d: Path) -> tuple[dict[str, str], str]:
    env = _with_kubeconfig(d, "docker:\n  host: tcp://localhost:http\n")
    return env, "docker.host: tcp://localhost:http: Port could not be cast to integer value as 'http'"


def docker_host_from_env_out_of_range(d: Path) -> tuple[dict[str, str], str]:
    env = _with_kubeconfig(d, "{}\n")
    env["DOCKER_HOST"] = "tcp://10.0.0.1:99999"
    return env, "docker.host: empty, so $DOCKER_HOST: tcp://10.0.0.1:99999: Port out of range 0-65535"


def config_is_a_symlink_to_a_shadow_file(d: Path) -> tuple[dict[str, str], str]:
    (d / "shadow").write_text(SHADOW)
    (d / "config.yaml").symlink_to(d / "shadow")
    return {}, f"unknown key, not shown as it is not a key name (known keys here: {KNOWN})"


def config_is_a_private_key(d: Path) -> tuple[dict[str, str], str]:
    _, key = _pem_pair(d, "serving")
    (d / "config.yaml").write_bytes(key.read_bytes())
    return {}, "expected a mapping of sections at the top level, got text"


CASES: list[Case] = [
    kubeconfig_missing,
    kubeconfig_from_env_missing,
    kubeconfig_path_with_a_newline,
    kubeconfig_not_yaml,
    kubeconfig_not_a_mapping,
    kubeconfig_shaped_like_shadow,
    kubeconfig_without_its_context,
    kubeconfig_is_a_directory,
    kubeconfig_unreadable,
    kubeconfig_empty,
    kubeconfig_not_text,
    kubeconfig_without_contexts,
    kubeconfig_context_names_a_missing_cluster,
    kubeconfig_context_names_a_missing_user,
    kubeconfig_ca_missing,
    empty_config_outside_a_cluster,
    in_a_pod_without_the_service_port,
    client_ca_missing,
    client_ca_not_pem,
    tls_cert_missing,
    tls_cert_not_pem,
    tls_key_not_pem,
    tls_key_of_another_certificate,
    tls_key_encrypted,
    docker_host_port_out_of_range,
    docker_host_port_not_a_number,
    docker_host_from_env_out_of_range,
    config_is_a_symlink_to_a_shadow_file,
    config_is_a_private_key,
]
ARGV = {"check-config": ["check-config", "config.yaml"], "run": ["run", "--config", "config.yaml"]}


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory, outside a cluster: no kubeconfig, no service account, no engine set."""
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.kube/config
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The configurations `run` handed to the provider (a stand-in: nothing starts)."""
    return fake_provider(monkeypatch)


def _assert_one_line(err: str, expected: str) -> None:
    assert err == f"config.yaml: {expected}\n", err
    assert "Traceback" not in err
    assert "SECRET" not in err, "a file's content is never printed"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_bad_file_exits_2_with_one_line(
    directory: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    started: list[object],
    case: Case,
    command: str,
) -> None:
    env, expected = case(directory)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(ARGV[command]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    _assert_one_line(err, expected)
    assert started == [], "the provider was not started"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_the_run_command_exits_2_with_one_line(directory: Path, case: Case) -> None:
    """The real `vk-provider run` process: its whole stderr is the one line."""
    env, expected = case(directory)
    clean = {key: value for key, value in os.environ.items() if key not in ENV_KEYS}
    done = subprocess.run(
        [sys.executable, "-m", "vk_cli", *ARGV["run"]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=directory,
        env={**clean, **env},
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    _assert_one_line(done.stderr, expected)


def test_usable_files_pass_and_run_starts(
    directory: Path, capsys: pytest.CaptureFixture[str], started: list[object]
) -> None:
    """Everything a configuration may name, usable: check-config prints it, run hands it over."""
    cert, key = _pem_pair(directory, "serving")
    ca, client_key = _pem_pair(directory, "client")
    kubeconfig = {
        "clusters": [
            {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": "ca.crt"}}
        ],
        "users": [{"name": "u", "user": {"client-certificate": str(ca), "client-key": str(client_key)}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    (directory / "ca.crt").write_bytes(ca.read_bytes())
    (directory / "kc").write_text(yaml.safe_dump(kubeconfig))
    (directory / "config.yaml").write_text(
        f"kubernetes:\n  kubeconfig: {directory / 'kc'}\ndocker:\n  host: tcp://127.0.0.1:2376\n"
        f"kubeletServer:\n  auth: x509\n  clientCAFile: {ca}\n"
        f"  tls:\n    mode: files\n    certFile: {cert}\n    keyFile: {key}\n"
    )
    assert main(ARGV["check-config"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert yaml.safe_load(out)["kubeletServer"]["tls"]["certFile"] == str(cert)
    assert main(ARGV["run"]) == 0
    assert len(started) == 1
