"""A real control plane for `helm install` of the chart, and the helm and kubectl calls on it.

What lives here, for tests/e2e/test_helm_install.py (the chart from the source tree) and
tests/e2e/test_release.py (the chart package and image archive of `make release`):
`host_sandbox`, the real control plane with a first provider playing the host's kubelet (a
kubelet's identity under the Node authorizer, hostPath allowed for the chart's socket mount,
the apiserver also on the Docker bridge's gateway, which is how a pod on the host node reaches
it: no kube-proxy here); `_bridge_gateway`; `_helm` (a helm command in the release's namespace,
failing the test with its output); `_jsonpath` (`kubectl get -o jsonpath`).
Must not: install anything itself or hold a test's values.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.sandbox_process import Sandbox, remove_node_containers, start_sandbox, stop_sandbox
from vk_sandbox.bridge_address import bridge_gateway

NAMESPACE = "vk-system"


def _bridge_gateway() -> str:
    gateway = bridge_gateway()
    assert gateway is not None, "the Docker bridge network has no gateway address"
    return gateway


@contextmanager
def host_sandbox(
    directory: Path, pause_image: str, docker_client: Any, node: str, prefix: str = "host-"
) -> Iterator[Sandbox]:
    """The real control plane with the host's provider (node `<prefix>1`); afterwards the
    containers of both the host's node and `node` (the one the chart registers) go."""
    remove_node_containers(docker_client, node)  # a failed earlier run's
    sandbox = start_sandbox(
        directory,
        pause_image,
        "real",
        prefix=prefix,
        allow={"hostPath": True},
        extra_args=("--provider-identity", "node", "--apiserver-address", _bridge_gateway()),
    )
    try:
        yield sandbox
    finally:
        stop_sandbox(sandbox)
        remove_node_containers(docker_client, node)
        remove_node_containers(docker_client, sandbox.node)


def _helm(helm: str, sandbox: Sandbox, *args: str, timeout: float = 400) -> str:
    result = subprocess.run(
        [helm, "--kubeconfig", str(sandbox.kubeconfig), "--namespace", NAMESPACE, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, (args, result.stdout, result.stderr, sandbox.log_tail())
    return result.stdout


def _jsonpath(sandbox: Sandbox, *what: str, path: str) -> str:
    return sandbox.kubectl("get", *what, "-o", f"jsonpath={path}", check=False).stdout
