"""A `vk-provider sandbox` subprocess (control plane + one provider on the real Docker engine) for e2e tests.

What lives here: `KUBECTL` (re-exported from tests/support/kubectl.py), `start_sandbox` /
`stop_sandbox` (a unique node prefix, a free port, `--clean`; its output goes to a file, never an
unread pipe), the `Sandbox` handle with a `kubectl` runner, the node's containers by label, and
`pod_manifest` for pods scheduled onto the node (built with tests/support/manifests.py), and
`module_sandbox`, the module-scoped fixture of one sandbox.
Must not: assert anything about the product itself; the tests do that.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import manifests
from tests.support.containers import labelled
from tests.support.kubectl import KUBECTL
from tests.support.polling import until
from vk_common.ports import free_port

DEADLINE = 120.0
NODE_LABEL = "io.vk-provider.node"
POD_NAME_LABEL = "io.vk-provider.pod.name"
TOLERATION = {
    "key": "virtual-kubelet.io/provider",
    "operator": "Equal",
    "value": "docker",
    "effect": "NoSchedule",
}
COUNTER = "i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done"


@dataclass
class Sandbox:
    proc: subprocess.Popen[bytes]
    output: Path
    state_dir: Path
    node: str

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    def kubectl(
        self,
        *args: str,
        stdin: str | None = None,
        check: bool = True,
        timeout: float = DEADLINE,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **(env or {})},
        )
        if check:
            assert result.returncode == 0, (args, result.stdout, result.stderr, self.log_tail())
        return result

    def apply(self, manifest: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))

    def log_tail(self, lines: int = 60) -> str:
        """The end of the sandbox's output (its providers log there too), for failure messages."""
        return "\n".join(self.output.read_text(errors="replace").splitlines()[-lines:])


def node_containers(docker_client: Any, node: str, **labels: str) -> list[Any]:
    filters = [f"{NODE_LABEL}={node}", *(f"{k}={v}" for k, v in labels.items())]
    return labelled(docker_client, filters)


def remove_node_containers(docker_client: Any, node: str) -> None:
    for container in node_containers(docker_client, node):
        container.remove(force=True, v=True)


def start_sandbox(
    directory: Path,
    pause_image: str,
    control_plane: str = "emulator",
    *,
    prefix: str | None = None,
    allow: dict[str, Any] | None = None,
    extra_args: tuple[str, ...] = (),
) -> Sandbox:
    """`vk-provider sandbox --clean` with one node, running until its node is Ready.
    `control_plane="real"`: on the upstream control plane (`--control-plane real`), the
    providers with the Helm chart's RBAC. `prefix` names the node (default: a unique one),
    `allow` is the provider's docker.allow, `extra_args` more sandbox flags."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "provider.yaml"
    docker = {"sandboxImage": pause_image, "stateDir": str(directory / "docker"), "allow": allow or {}}
    config.write_text(yaml.safe_dump({"docker": docker}))
    prefix = prefix or f"vk-e2e-{uuid.uuid4().hex[:6]}-"
    for _ in range(3):  # the free port may be taken by someone else before the sandbox binds it
        sandbox = _launch(directory, config, prefix, free_port(), control_plane, extra_args)
        try:
            until("the kubeconfig", functools.partial(_started, sandbox))
        except PortTaken:
            continue
        except BaseException:
            stop_sandbox(sandbox)
            raise
        break
    else:
        raise AssertionError(f"the sandbox found no free port: {sandbox.log_tail()}")
    ready = "jsonpath={.status.conditions[?(@.type=='Ready')].status}"
    try:
        until(
            f"node {sandbox.node} Ready",
            lambda: sandbox.kubectl("get", "node", sandbox.node, "-o", ready, check=False).stdout == "True",
        )
    except BaseException:
        stop_sandbox(sandbox)
        raise
    return sandbox


class PortTaken(Exception):
    """The sandbox could not bind its --port."""


def _launch(
    directory: Path, config: Path, prefix: str, port: int, control_plane: str, extra_args: tuple[str, ...]
) -> Sandbox:
    state_dir = directory / "state"
    args = [
        *("--state-dir", str(state_dir), "--port", str(port), "--nodes", "1"),
        *("--config", str(config), "--node-prefix", prefix, "--clean"),
        *("--control-plane", control_plane, *extra_args),
    ]
    output = directory / "sandbox.out"
    with output.open("wb") as sink:  # a file, not a pipe nobody reads while the tests run
        proc = subprocess.Popen(
            [sys.executable, "-m", "vk_cli", "sandbox", *args],
            cwd=directory,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    return Sandbox(proc, output, state_dir, f"{prefix}1")


def _started(sandbox: Sandbox) -> bool:
    if sandbox.proc.poll() is not None:
        if sandbox.proc.returncode == 1 and "cannot start the API server" in sandbox.log_tail():
            raise PortTaken
        raise AssertionError(f"sandbox exited with {sandbox.proc.returncode}: {sandbox.log_tail()}")
    return sandbox.kubeconfig.exists()


def stop_sandbox(sandbox: Sandbox) -> int:
    if sandbox.proc.poll() is not None:
        return sandbox.proc.returncode
    sandbox.proc.send_signal(signal.SIGTERM)
    try:
        return sandbox.proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        sandbox.proc.kill()
        sandbox.proc.wait()
        raise


def pod_manifest(name: str, node: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A Pod the sandbox's scheduler binds to `node` (selected by hostname, its taint tolerated)."""
    return manifests.pod(
        name, containers, nodeSelector={"kubernetes.io/hostname": node}, tolerations=[TOLERATION], **spec
    )


@contextlib.contextmanager
def running_sandbox(
    directory: Path, pause_image: str, docker_client: Any, control_plane: str = "emulator"
) -> Iterator[Sandbox]:
    """A started sandbox; afterwards it is stopped and its node's containers are removed."""
    sandbox = start_sandbox(directory, pause_image, control_plane)
    try:
        yield sandbox
    finally:
        if sandbox.proc.poll() is None:
            stop_sandbox(sandbox)
        remove_node_containers(docker_client, sandbox.node)


def module_sandbox(directory: str) -> Any:
    """A module-scoped `sandbox` fixture: one `running_sandbox` on the test's control plane, in a
    temporary directory named `directory` (`sandbox = module_sandbox("provider-kubectl")`)."""

    @pytest.fixture(scope="module")
    def sandbox(
        tmp_path_factory: pytest.TempPathFactory,
        docker_client: Any,
        test_images: dict[str, str],
        control_plane: str,
    ) -> Iterator[Sandbox]:
        with running_sandbox(
            tmp_path_factory.mktemp(directory), test_images["pause"], docker_client, control_plane
        ) as sb:
            yield sb

    return sandbox
