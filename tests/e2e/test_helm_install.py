"""`helm install` of charts/vk-provider on the real control plane, end to end, as a user does it.

A first provider, run as a process by `vk-provider sandbox --control-plane real`, plays the
host's kubelet: node `host-1`, a kubelet's identity (`system:node:host-1` under the Node
authorizer), hostPath allowed for the chart's socket mount. The apiserver also listens on the
Docker bridge's gateway (`--apiserver-address`), which is how a pod on host-1 reaches it:
this cluster has no kube-proxy, so the chart's `apiServer.host`/`apiServer.port` name it.
Then, with the image scripts/build-image.sh built and the chart's default kubelet-API
settings: the chart's Deployment runs on host-1 in a container, the provider inside it uses
in-cluster configuration and registers `docker-1`; a pod selected onto docker-1 runs and
`kubectl logs`, `logs -f`, `exec` and `port-forward` work on it; the provider's own log shows
its decisions; `helm test` passes; `helm upgrade` with a changed setting restarts the
provider, which adopts the running pod without restarting it; `helm uninstall` runs the
pre-delete hook, after which the Node and the node's containers are gone.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.chart import CHART
from tests.support.helm_host import NAMESPACE, _bridge_gateway, _helm, _jsonpath, host_sandbox
from tests.support.images import BUSYBOX_IMAGE, PAUSE_IMAGE
from tests.support.kubectl import KUBECTL, port_forward
from tests.support.manifests import sh
from tests.support.polling import until
from tests.support.sandbox_process import (
    POD_NAME_LABEL,
    Sandbox,
    node_containers,
    pod_manifest,
)

pytestmark = [pytest.mark.docker, pytest.mark.kubectl, pytest.mark.real_only, pytest.mark.timeout(1500)]

HOST = "host-1"
NODE = "docker-1"
RELEASE = "vk"
DEPLOYMENT = "vk-vk-provider"
PROVIDER_SELECTOR = f"app.kubernetes.io/name=vk-provider,app.kubernetes.io/instance={RELEASE}"
HTTPD = "mkdir -p /www && echo hello from docker-1 > /www/index.html && exec httpd -f -p 8080 -h /www"
WAIT = ("--wait", "--timeout", "5m")
COUNTER = "i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done"


@pytest.fixture
def host(
    control_plane: str, tmp_path: Path, test_images: dict[str, str], docker_client: Any
) -> Iterator[Sandbox]:
    """The real control plane with host-1's provider; afterwards both nodes' containers go."""
    with host_sandbox(tmp_path / "host", test_images["pause"], docker_client, NODE) as sandbox:
        yield sandbox


def _http_get(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as resp:
            return str(resp.read().decode())
    except OSError:
        return None


def _port_forward_answers(sandbox: Sandbox) -> str:
    with port_forward(sandbox.kubeconfig, "pod/web", 8080, 8080) as port:
        return str(until("an answer through port-forward", lambda: _http_get(port), 60))


def _follow(
    sandbox: Sandbox, *args: str, until_line: str = "", lines: int = 0, timeout: float = 120
) -> list[str]:
    """`kubectl logs -f ARGS`: its first `lines` lines, or its lines up to one containing
    `until_line`; a stream that shows neither within `timeout` seconds fails the test."""
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(sandbox.kubeconfig), "logs", "-f", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = threading.Timer(timeout, proc.kill)
    deadline.start()
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line.rstrip("\n"))
            if len(seen) == lines or (until_line and until_line in line):
                return seen
        raise AssertionError(f"kubectl logs -f {' '.join(args)} ended or timed out: {seen[-5:]}")
    finally:
        deadline.cancel()
        proc.kill()
        proc.wait()


def _provider_log(sandbox: Sandbox) -> str:
    return sandbox.kubectl("--namespace", NAMESPACE, "logs", f"deploy/{DEPLOYMENT}", check=False).stdout


def _provider_pods(sandbox: Sandbox) -> str:
    """`name node` of each running pod of the release's Deployment."""
    return _jsonpath(
        sandbox,
        *(
            "--namespace",
            NAMESPACE,
            "pods",
            "-l",
            f"app.kubernetes.io/name=vk-provider,app.kubernetes.io/instance={RELEASE}",
        ),
        "--field-selector=status.phase=Running",
        path="{range .items[*]}{.metadata.name} {.spec.nodeName} {end}",
    )


def _web_containers(docker_client: Any) -> list[str]:
    return sorted(c.id for c in node_containers(docker_client, NODE, **{POD_NAME_LABEL: "web"}))


def _gone(sandbox: Sandbox, *what: str) -> bool:
    return sandbox.kubectl("get", *what, "-o", "name", check=False).stdout == ""


def _values(sandbox: Sandbox, image: str, state_dir: Path, credentials: str) -> dict[str, Any]:
    """The user's values: the locally built image, the apiserver on the bridge, host-1."""
    repository, tag = image.rsplit(":", 1)
    server = sandbox.kubectl("config", "view", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
    return {
        "node": {"name": NODE},
        "credentials": credentials,
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "apiServer": {"host": _bridge_gateway(), "port": int(server.rsplit(":", 1)[1])},
        "nodeSelector": {"kubernetes.io/hostname": sandbox.node},
        "tolerations": [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}],
        "test": {"image": BUSYBOX_IMAGE},
        "config": {"docker": {"sandboxImage": PAUSE_IMAGE, "stateDir": str(state_dir)}},
    }


def _kubelet_client_csrs(sandbox: Sandbox) -> list[tuple[str, ...]]:
    """Each CSR for the kubelet client signer: its conditions, and whether it was issued."""
    items = json.loads(sandbox.kubectl("get", "csr", "-o", "json").stdout)["items"]
    return [
        (
            *sorted(c["type"] for c in item["status"].get("conditions", [])),
            "Issued" if item["status"].get("certificate") else "Pending",
        )
        for item in items
        if item["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
    ]


@pytest.mark.parametrize("credentials", ["serviceAccount", "node"])
def test_helm_install_runs_the_provider_in_the_cluster_and_uninstall_removes_its_node(
    host: Sandbox, helm: str, provider_image: str, docker_client: Any, tmp_path: Path, credentials: str
) -> None:
    """With `credentials: node` the same flow runs under the Node authorizer: the provider's
    service account only bootstraps the certificate of system:node:docker-1."""
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps(_values(host, provider_image, tmp_path / "docker-1", credentials)))

    # Install: the provider runs on host-1 as a container and registers docker-1.
    _helm(helm, host, "install", RELEASE, str(CHART), "--create-namespace", "-f", str(values), *WAIT)
    provider_pod, provider_host = _provider_pods(host).split()
    assert provider_host == host.node
    ready = "{.status.conditions[?(@.type=='Ready')].status}"
    until(f"node {NODE} Ready", lambda: _jsonpath(host, "node", NODE, path=ready) == "True", 180)
    identity = [line for line in _provider_log(host).splitlines() if '"running under NodeRestriction' in line]
    assert bool(identity) == (credentials == "node"), _provider_log(host)
    assert all(f'user="system:node:{NODE}"' in line for line in identity), identity
    assert _kubelet_client_csrs(host) == ([("Approved", "Issued")] if credentials == "node" else [])

    # A user's pod selected onto docker-1, and kubectl against it with the chart's defaults.
    host.apply(pod_manifest("web", NODE, [sh("web", HTTPD), sh("counter", COUNTER)]))
    host.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=180s", timeout=200)
    assert _jsonpath(host, "pod", "web", path="{.spec.nodeName}") == NODE
    until("two lines of logs", lambda: "line 1" in host.kubectl("logs", "web", "-c", "counter").stdout)
    followed = _follow(host, "web", "-c", "counter", lines=2)
    assert all(re.fullmatch(r"line \d+", line) for line in followed), followed
    page = host.kubectl("exec", "web", "-c", "web", "--", "cat", "/www/index.html").stdout
    assert page == "hello from docker-1\n"
    assert _port_forward_answers(host) == page

    # The provider's own log (klog's text format): one line per decision, naming the pod.
    decision = 'container="web" role="app"'
    followed = _follow(host, "--namespace", NAMESPACE, f"deploy/{DEPLOYMENT}", until_line=decision)
    assert '"started container"' in followed[-1] and 'pod="default/web"' in followed[-1], followed[-1]
    assert any('"registered node"' in line and 'node="docker-1"' in line for line in followed), followed

    # helm test: a pod the scheduler places on docker-1, run to completion there.
    tested = _helm(helm, host, "test", RELEASE, "--logs", "--timeout", "3m")
    assert re.search(r"Phase:\s+Succeeded", tested) and f"ran on node {NODE}" in tested, tested

    # helm upgrade with another setting: a new provider pod, the user's pod adopted, not restarted.
    containers = _web_containers(docker_client)
    running_since = "{.status.containerStatuses[*].state.running.startedAt}"
    started = _jsonpath(host, "pod", "web", path=running_since)
    upgrade = ("upgrade", RELEASE, str(CHART), "--reuse-values", "--set", "config.logging.format=json")
    _helm(helm, host, *upgrade, *WAIT)
    until("one new provider pod", lambda: (_provider_pods(host).split() or [provider_pod])[0] != provider_pod)
    until("the new provider adopting pod web", lambda: '"adopted running containers"' in _provider_log(host))
    adopted = [json.loads(line) for line in _provider_log(host).splitlines() if "adopted running" in line]
    assert [line["pod"] for line in adopted] == [{"name": "web", "namespace": "default"}], adopted
    time.sleep(5)  # a restart would show by now
    assert _web_containers(docker_client) == containers
    assert _jsonpath(host, "pod", "web", path="{.status.containerStatuses[*].restartCount}") == "0 0"
    assert _jsonpath(host, "pod", "web", path=running_since) == started
    # The new provider reuses the node's certificate: no second CSR.
    assert _kubelet_client_csrs(host) == ([("Approved", "Issued")] if credentials == "node" else [])

    # helm uninstall: the pre-delete hook stops the provider, removes the node's containers and the Node.
    _helm(helm, host, "uninstall", RELEASE, *WAIT)
    assert _gone(host, "node", NODE)
    assert node_containers(docker_client, NODE) == []
    until("pod web deleted by the pod garbage collector", lambda: _gone(host, "pod", "web"), 180)
    until("the hook's Job and the test pod gone", lambda: _gone(host, "-n", NAMESPACE, "jobs,pods"), 180)
