"""The real kubectl, through the sandbox API server's proxy, to `KubeletServer` on real Docker.

A Node whose InternalIP is 127.0.0.1 and whose kubelet port is the server's; a pod bound to
it whose containers DockerRuntime starts under the pod's uid; then `kubectl logs`, `logs -f`,
`exec` (WebSocket v5.channel.k8s.io and SPDY/3.1 end to end) and `port-forward` (SPDY in a
WebSocket, and SPDY) as a user would run them. The kubelet
API demands the sandbox's kubelet-client certificate and asks the sandbox for a
SubjectAccessReview per request (auth webhook with the sandbox CA and an apiserver client).
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import manifests
from tests.support.images import BUSYBOX_IMAGE
from tests.support.kubectl import read_lines, run_kubectl, streaming_kubectl
from tests.support.polling import eventually
from tests.support.runtime_calls import ensure_sandbox, running_docker_runtime, start_container
from tests.support.sandbox import RunningSandbox, running_sandbox
from vk_provider.config import DockerConfig, KubeletServerConfig, KubernetesConfig
from vk_provider.kube.client import make_kube_client
from vk_provider.kubeletapi import KubeletServer
from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.runtime.types import ContainerRole

pytestmark = [pytest.mark.kubectl, pytest.mark.docker]

SCRIPT = (
    "httpd -p 8080 -h /var/www; echo hello from app;"
    " i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done"
)


@dataclass
class Cluster:
    sandbox: RunningSandbox
    kubeconfig: Path
    kubelet: KubeletServer


@pytest.fixture
async def cluster(node_name: str, test_images: dict[str, str], tmp_path: Path) -> AsyncIterator[Cluster]:
    docker = DockerConfig(
        sandbox_image=test_images["pause"], max_concurrency=4, state_dir=str(tmp_path / "state")
    )
    async with (
        running_sandbox(tmp_path, controllers=False) as sandbox,
        running_docker_runtime(docker, node_name) as runtime,
    ):
        config = KubeletServerConfig(
            listen="127.0.0.1:0", auth="webhook", client_ca_file=str(sandbox.pki.ca_cert_path)
        )
        kube = await make_kube_client(KubernetesConfig(kubeconfig=str(sandbox.kubeconfig)))
        kubelet = KubeletServer(config, node_name, runtime, "127.0.0.1", kube=kube)
        await kubelet.start()
        try:
            await sandbox.store.create("nodes", manifests.kubelet_node(node_name, kubelet.port))
            spec = {"name": "app", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", SCRIPT]}
            manifest = manifests.pod("web", [spec], nodeName=node_name)
            (tmp_path / "pod.json").write_text(json.dumps(manifest))
            code, out, err = await run_kubectl(
                sandbox.kubeconfig, "create", "-f", str(tmp_path / "pod.json"), "-o", "json"
            )
            assert code == 0, err
            pod = json.loads(out)
            status = ["patch", "pod", "web", "--subresource=status", "--type=merge"]
            code, _, err = await run_kubectl(
                sandbox.kubeconfig, *status, "-p", '{"status":{"phase":"Running"}}'
            )
            assert code == 0, err  # kubectl port-forward wants a Running pod
            sandbox_state = await ensure_sandbox(runtime, pod)
            assert await runtime.image_id(BUSYBOX_IMAGE) is not None
            await start_container(
                runtime,
                ContainerLaunch(
                    pod=pod,
                    container=pod["spec"]["containers"][0],
                    role=ContainerRole.APP,
                    attempt=0,
                    env=(),
                    command=("sh", "-c", SCRIPT),
                    args=None,
                    sandbox=sandbox_state,
                ),
            )
            yield Cluster(sandbox, sandbox.kubeconfig, kubelet)
        finally:
            await kubelet.stop()
            await kube.close()


async def test_kubectl_logs_and_logs_follow(cluster: Cluster) -> None:
    code, out, err = 0, "", ""

    async def ticked() -> bool:
        nonlocal code, out, err
        code, out, err = await run_kubectl(cluster.kubeconfig, "logs", "web")
        return code == 0 and "tick 1\n" in out

    await eventually(ticked, within=60, interval=0.3, what=lambda: f"tick 1 in the log ({code, out, err})")
    assert out.startswith("hello from app\ntick 0\ntick 1\n")
    code, out, err = await run_kubectl(cluster.kubeconfig, "logs", "web", "--tail=1")
    assert code == 0 and out.count("\n") == 1 and out.startswith("tick "), (out, err)

    async with streaming_kubectl(cluster.kubeconfig, "logs", "-f", "web", "--tail=1") as proc:
        lines = await read_lines(proc, 4)
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == list(range(numbers[0], numbers[0] + 4)), lines  # new lines arrive as written


@pytest.mark.parametrize("websockets", ["true", "false"])  # false: kubectl speaks SPDY/3.1
async def test_kubectl_exec(cluster: Cluster, websockets: str) -> None:
    env = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": websockets}
    code, out, err = await run_kubectl(
        cluster.kubeconfig, "exec", "web", "--", "sh", "-c", "echo hi", env=env
    )
    assert (code, out) == (0, "hi\n"), err
    code, out, err = await run_kubectl(
        cluster.kubeconfig, "exec", "web", "--", "sh", "-c", "echo bye; echo err >&2; exit 3", env=env
    )
    assert (code, out) == (3, "bye\n"), err
    assert "err\n" in err
    code, out, err = await run_kubectl(
        cluster.kubeconfig, "exec", "-i", "web", "--", "wc", "-c", stdin=b"hello\n", env=env
    )
    assert (code, out.strip()) == (0, "6"), err


def http_get(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
        return str(resp.read().decode())


@pytest.mark.parametrize("websockets", ["true", "false"])  # true: SPDY tunnelled in a WebSocket
async def test_kubectl_port_forward(cluster: Cluster, websockets: str) -> None:
    env = {"KUBECTL_PORT_FORWARD_WEBSOCKETS": websockets}
    async with streaming_kubectl(cluster.kubeconfig, "port-forward", "pod/web", ":8080", env=env) as proc:
        assert proc.stderr is not None
        (line,) = await read_lines(proc, 1)
        match = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> 8080", line)
        assert match, (line, await proc.stderr.read())
        port = int(match.group(1))

        async def answered() -> str | None:  # httpd may still be starting
            try:
                return await asyncio.to_thread(http_get, port)
            except OSError:
                return None

        body = await eventually(answered, within=60, interval=0.3, what=f"an answer on port {port}")
        assert body == "hello from vk-test/busybox\n"
        assert await asyncio.to_thread(http_get, port) == body  # a second connection, a second stream pair


@pytest.mark.parametrize("websockets", ["true", "false"])
async def test_kubectl_attach_streams_the_main_process(cluster: Cluster, websockets: str) -> None:
    env = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": websockets}
    async with streaming_kubectl(cluster.kubeconfig, "attach", "web", env=env) as proc:
        lines = await read_lines(proc, 3)
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == list(range(numbers[0], numbers[0] + 3)), lines
