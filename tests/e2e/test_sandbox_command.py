"""`vk-provider sandbox` as a user runs it: a fresh state directory with `--no-provider` serves
the real kubectl; with providers, nodes come up Ready, a pod runs in Docker, and `--clean` tidies up."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.containers import labelled
from tests.support.kubectl import KUBECTL
from tests.support.polling import until

DEADLINE = 60.0


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "vk_cli", "sandbox", *args]


def _start(args: list[str], cwd: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """Start the sandbox with its output (and its providers') in a file: a pipe nobody reads
    while the test runs could fill up and block them."""
    output = cwd / "sandbox.out"
    with output.open("wb") as sink:
        proc = subprocess.Popen(_command(*args), cwd=cwd, stdout=sink, stderr=subprocess.STDOUT)
    return proc, output


def _stop(proc: subprocess.Popen[bytes], timeout: float) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=timeout)


def _wait_for(path: Path, proc: subprocess.Popen[bytes], output: Path) -> None:
    def appeared() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"sandbox exited with {proc.returncode}: {output.read_text()}")
        return path.exists()

    until(f"{path} to appear", appeared, DEADLINE, 0.1)


@pytest.mark.kubectl
def test_fresh_state_dir_serves_kubectl(tmp_path: Path) -> None:
    state = tmp_path / "fresh"
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "nonexistent")}
    proc, output = _start(["--no-provider", "--state-dir", str(state), "--port", "0"], tmp_path)
    try:
        kubeconfig = state / "kubeconfig"
        _wait_for(kubeconfig, proc, output)
        result = subprocess.run(
            [KUBECTL, "--kubeconfig", str(kubeconfig), "get", "namespaces", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
            env=env,
        )
        assert result.returncode == 0, result.stderr
        names = {line.removeprefix("namespace/") for line in result.stdout.split()}
        assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
        assert (state / "pki" / "ca.crt").is_file()
        code = _stop(proc, DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, output.read_text()
    assert f"export KUBECONFIG={kubeconfig}" in output.read_text()


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  nodeSelector:
    kubernetes.io/hostname: {node}
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: vk-test/busybox:1
    command: ["sh", "-c", "echo hello from the sandbox; sleep 3600"]
"""


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _until(kubeconfig: Path, args: list[str], wanted: str) -> str:
    out = ""

    def appeared() -> str | None:
        nonlocal out
        out = _kubectl(kubeconfig, *args)
        return out if wanted in out else None

    return until(lambda: f"{wanted!r} to appear in {out!r}", appeared, DEADLINE * 2)


@pytest.mark.kubectl
@pytest.mark.docker
def test_sandbox_runs_providers_and_cleans_up(
    tmp_path: Path, docker_client: Any, test_images: dict[str, str]
) -> None:
    prefix = f"vk-sbx-{uuid.uuid4().hex[:6]}-"
    nodes = [f"{prefix}1", f"{prefix}2"]
    config = tmp_path / "provider.yaml"
    config.write_text(
        yaml.safe_dump({"docker": {"sandboxImage": test_images["pause"]}, "node": {"taints": []}})
    )
    state = tmp_path / "state"
    args = [
        "--nodes",
        "2",
        "--node-prefix",
        prefix,
        "--state-dir",
        str(state),
        "--config",
        str(config),
        "--clean",
    ]
    proc, output = _start(args, tmp_path)
    try:
        kubeconfig = state / "kubeconfig"
        _wait_for(kubeconfig, proc, output)
        ready = (
            "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=='Ready')].status} {end}"
        )
        _until(kubeconfig, ["get", "nodes", "-o", ready], f"{nodes[0]}=True")
        _until(kubeconfig, ["get", "nodes", "-o", ready], f"{nodes[1]}=True")
        _kubectl(kubeconfig, "apply", "-f", "-", stdin=POD.format(node=nodes[1]))
        _until(kubeconfig, ["get", "pod", "hello", "-o", "jsonpath={.status.phase}"], "Running")
        assert _kubectl(kubeconfig, "get", "pod", "hello", "-o", "jsonpath={.spec.nodeName}") == nodes[1]
        running = labelled(docker_client, f"io.vk-provider.node={nodes[1]}", all=False)
        assert running, "the pod's containers run in the local Docker engine"
        assert _stop(proc, DEADLINE * 2) == 0, output.read_text()
        for node in nodes:
            left = labelled(docker_client, f"io.vk-provider.node={node}")
            assert left == [], f"--clean left containers of {node}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for node in nodes:
            for container in labelled(docker_client, f"io.vk-provider.node={node}"):
                container.remove(force=True, v=True)


def test_port_in_use_and_bad_flags_fail_with_a_message(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            _command("--no-provider", "--state-dir", str(tmp_path / "s"), "--port", str(port)),
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
    assert result.returncode == 1
    assert "cannot start the API server" in result.stderr
    result = subprocess.run(
        _command("--nodes", "0", "--state-dir", str(tmp_path / "s")),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 2
    assert "--nodes must be at least 1" in result.stderr
