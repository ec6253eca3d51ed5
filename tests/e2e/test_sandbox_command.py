"""`vk-provider sandbox --no-provider` on a fresh state directory, driven by the real kubectl."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KUBECTL = "/usr/bin/kubectl"
DEADLINE = 60.0

# `cli.py` gains the subcommand from the lead; until then build the parser here.
LAUNCHER = """
import argparse, sys
from vk_provider.sandbox.command import add_parser, run_sandbox
parser = argparse.ArgumentParser(prog="vk-provider")
add_parser(parser.add_subparsers(dest="command", required=True))
sys.exit(run_sandbox(parser.parse_args(sys.argv[1:])))
"""


def _command(*args: str) -> list[str]:
    """`python -m vk_provider sandbox ...` once cli.py has the subcommand, else the launcher."""
    wired = subprocess.run(
        [sys.executable, "-m", "vk_provider", "sandbox", "--help"], capture_output=True, check=False
    )
    if wired.returncode == 0:
        return [sys.executable, "-m", "vk_provider", "sandbox", *args]
    return [sys.executable, "-c", LAUNCHER, "sandbox", *args]


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    end = time.monotonic() + DEADLINE
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"sandbox exited with {proc.returncode}: {out.decode()} {err.decode()}")
        if time.monotonic() > end:
            raise AssertionError(f"{path} did not appear")
        time.sleep(0.1)


@pytest.mark.kubectl
def test_fresh_state_dir_serves_kubectl(tmp_path: Path) -> None:
    state = tmp_path / "fresh"
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "nonexistent")}
    proc = subprocess.Popen(
        _command("--no-provider", "--state-dir", str(state), "--port", "0"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        kubeconfig = state / "kubeconfig"
        _wait_for(kubeconfig, proc)
        result = subprocess.run(
            [KUBECTL, "--kubeconfig", str(kubeconfig), "get", "namespaces", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        names = {line.removeprefix("namespace/") for line in result.stdout.split()}
        assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
        assert (state / "pki" / "ca.crt").is_file()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert f"export KUBECONFIG={kubeconfig}" in out.decode()
