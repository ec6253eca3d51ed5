"""`kubectl top` against `vk-provider sandbox`: the sandbox's metrics.k8s.io API, scraped from the
provider's kubelet `/stats/summary`, end to end with the real kubectl and Docker.

One sandbox (one provider node) serves the module, with one busybox pod that burns a little CPU
(limited to 100m). The first CPU rate needs two scrapes of the kubelet, so the tests poll.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.manifests import burner
from tests.support.polling import until
from tests.support.sandbox_process import Sandbox, pod_manifest, running_sandbox

pytestmark = [pytest.mark.kubectl, pytest.mark.docker]

POD = "busy"
RATE_DEADLINE = 90.0  # two scrapes, 5 s apart, plus a loaded machine


@pytest.fixture(scope="module")
def sandbox(
    tmp_path_factory: pytest.TempPathFactory, docker_client: Any, test_images: dict[str, str]
) -> Iterator[Sandbox]:
    with running_sandbox(
        tmp_path_factory.mktemp("metrics-kubectl"), test_images["pause"], docker_client
    ) as sb:
        yield sb


@pytest.fixture(scope="module")
def busy(sandbox: Sandbox, test_images: dict[str, str]) -> str:
    container = burner()
    manifest = pod_manifest(POD, sandbox.node, [container])
    manifest["metadata"]["labels"] = {"app": "busy"}
    sandbox.apply(manifest)
    phase = "jsonpath={.status.phase}"
    until(
        f"pod {POD} Running",
        lambda: sandbox.kubectl("get", "pod", POD, "-o", phase, check=False).stdout == "Running",
    )
    return POD


def _rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}


def _top(sandbox: Sandbox, *args: str) -> dict[str, list[str]] | None:
    """The rows of `kubectl top ...`, or None while the metrics are not there yet."""
    result = sandbox.kubectl("top", *args, check=False)
    if result.returncode != 0:
        assert "metrics not available yet" in result.stderr or "not found" in result.stderr, (
            result.stderr,
            sandbox.log_tail(),
        )
        return None
    return _rows(result.stdout)


def test_api_resources_lists_the_metrics_api(sandbox: Sandbox) -> None:
    out = sandbox.kubectl("api-resources", "--api-group", "metrics.k8s.io").stdout
    rows = {tuple(line.split()) for line in out.splitlines()[1:]}
    assert rows == {
        ("nodes", "metrics.k8s.io/v1beta1", "false", "NodeMetrics"),
        ("pods", "metrics.k8s.io/v1beta1", "true", "PodMetrics"),
    }


def test_kubectl_top_node_shows_cpu_and_memory(sandbox: Sandbox, busy: str) -> None:
    def node_row() -> list[str] | None:
        rows = _top(sandbox, "node")
        row = (rows or {}).get(sandbox.node)
        return row if row is not None and row[1] != "<unknown>" else None

    row = until("a node CPU rate in kubectl top node", node_row, RATE_DEADLINE)
    # NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%)
    assert re.fullmatch(r"\d+m", row[1]) and re.fullmatch(r"\d+Mi", row[3]), row
    named = _top(sandbox, "node", sandbox.node)
    assert named is not None and list(named) == [sandbox.node]


def test_kubectl_top_pod_shows_the_pods_cpu_and_memory(sandbox: Sandbox, busy: str) -> None:
    def busy_row() -> list[str] | None:
        row = (_top(sandbox, "pod") or {}).get(POD)
        # the loop burns CPU: wait for a rate above zero (not on the very first one on a busy box)
        return row if row is not None and int(row[1].rstrip("m")) > 0 else None

    row = until("a pod CPU rate in kubectl top pod", busy_row, RATE_DEADLINE)
    # NAME CPU(cores) MEMORY(bytes); the limit is 100m (a little over through rounding)
    assert re.fullmatch(r"\d+m", row[1]) and int(row[1][:-1]) <= 150, row
    assert re.fullmatch(r"\d+Mi", row[2]), row
    containers = until("kubectl top pod --containers", lambda: _top(sandbox, "pod", POD, "--containers"))
    # POD NAME CPU(cores) MEMORY(bytes)
    assert containers[POD][1] == "burn", containers
    selected = until("kubectl top pod -l app=busy", lambda: _top(sandbox, "pod", "-l", "app=busy"))
    assert list(selected) == [POD]


def test_the_raw_api_answers_like_metrics_server(sandbox: Sandbox, busy: str) -> None:
    path = f"/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/{POD}"

    def pod_metrics() -> dict[str, Any] | None:
        result = sandbox.kubectl("get", "--raw", path, check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    doc = until("PodMetrics of the busy pod", pod_metrics, RATE_DEADLINE)
    assert doc["kind"] == "PodMetrics" and doc["apiVersion"] == "metrics.k8s.io/v1beta1"
    assert doc["metadata"]["name"] == POD and doc["metadata"]["labels"] == {"app": "busy"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["timestamp"])
    assert re.fullmatch(r"[\d.]+s", doc["window"]), doc["window"]
    [container] = doc["containers"]
    assert container["name"] == "burn"
    assert re.fullmatch(r"\d+[num]?|0", container["usage"]["cpu"]), container
    assert re.fullmatch(r"\d+(Ki|Mi)?|\d+k", container["usage"]["memory"]), container
    table = sandbox.kubectl("get", "pods.metrics.k8s.io", POD).stdout.splitlines()
    assert table[0].split() == ["NAME", "CPU", "MEMORY", "WINDOW"], table
    assert table[1].split()[0] == POD and table[1].split()[3].endswith("s"), table
    missing = sandbox.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/nope", check=False)
    assert missing.returncode != 0 and 'nodes "nope" not found' in missing.stderr


def test_the_nodes_own_metrics_count_the_status_patches_it_sent(sandbox: Sandbox, busy: str) -> None:
    """`/metrics` on the kubelet API (nodes/proxy/metrics, as a kubelet's): the provider's counters."""
    path = f"/api/v1/nodes/{sandbox.node}/proxy/metrics"

    def patches() -> int | None:
        result = sandbox.kubectl("get", "--raw", path, check=False)
        assert result.returncode == 0, (result.stderr, sandbox.log_tail())
        found = re.search(r"^vk_provider_pod_status_patches_total (\S+)$", result.stdout, re.M)
        assert found is not None, result.stdout
        return int(float(found.group(1))) or None

    assert until("a status patch counted on /metrics", patches, RATE_DEADLINE) >= 1
    text = sandbox.kubectl("get", "--raw", path).stdout
    assert "# TYPE vk_provider_pod_status_patches_total counter" in text
    for name in ("deletions", "status_conflicts", "status_errors"):
        assert re.search(rf"^vk_provider_pod_{name}_total \d+\.\d+$", text, re.M), text
