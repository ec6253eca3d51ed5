"""The kubelet's admission on real Docker: a pod bound to the node it cannot run on is rejected."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.pod_status import phase
from tests.support.provider_harness import ProviderHarness
from vk_common.ports import free_port
from vk_provider.kube.client import ApiStatusError

pytestmark = pytest.mark.docker

MAIN = {"name": "c", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}


async def _rejected(
    harness: ProviderHarness, name: str, main: dict[str, Any] = MAIN, **spec: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    await harness.create(harness.manifest(name, [main], **spec))
    pod = await harness.wait_for(name, lambda p: phase(p) == "Failed")
    event = await harness.wait_event(name, pod["status"]["reason"])
    return pod, event


async def test_a_windows_pod_is_rejected(harness: ProviderHarness, docker_client: Any) -> None:
    pod, event = await _rejected(harness, "windows", os={"name": "windows"})
    assert pod["status"]["reason"] == "PodOSNotSupported"
    assert (
        pod["status"]["message"]
        == "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"
    )
    assert (
        event["type"] == "Warning"
        and event["message"] == "Failed to admit pod as the OS field doesn't match node OS"
    )
    assert not docker_client.containers.list(
        all=True, filters={"label": f"io.vk-provider.pod.uid={pod['metadata']['uid']}"}
    )


async def test_a_node_selector_that_does_not_match_is_rejected(harness: ProviderHarness) -> None:
    pod, event = await _rejected(
        harness, "elsewhere", nodeSelector={"kubernetes.io/hostname": "another-node"}
    )
    assert pod["status"]["reason"] == "NodeAffinity"
    assert pod["status"]["message"] == (
        "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
    )
    assert (
        event["message"] == "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
    )


async def test_a_matching_node_affinity_runs(harness: ProviderHarness) -> None:
    term = {
        "matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [harness.node_name]}
        ]
    }
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    await harness.create(harness.manifest("here", [MAIN], affinity=affinity, terminationGracePeriodSeconds=1))
    await harness.wait_for("here", lambda p: phase(p) == "Running")


async def test_a_host_port_another_pod_holds_is_rejected_and_free_again_once_that_pod_is_gone(
    harness: ProviderHarness,
) -> None:
    """The NodePorts check of the kubelet's admission: what the StatefulSet conformance spec
    "Should recreate evicted statefulset" relies on."""
    port = {"containerPort": 8080, "hostPort": free_port(), "protocol": "TCP"}
    holder = {**MAIN, "ports": [port]}
    await harness.create(harness.manifest("holder", [holder], terminationGracePeriodSeconds=1))
    await harness.wait_for("holder", lambda p: phase(p) == "Running")
    pod, event = await _rejected(harness, "second", holder)
    message = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    assert (pod["status"]["reason"], pod["status"]["message"]) == (
        "NodePorts",
        "Pod was rejected: " + message,
    )
    assert event["message"] == message
    await harness.delete("holder", grace=0)
    await harness.wait_gone("holder")
    await harness.create(harness.manifest("third", [holder], terminationGracePeriodSeconds=1))
    await harness.wait_for("third", lambda p: phase(p) == "Running")


async def test_a_pod_naming_a_missing_runtime_class_is_refused_by_the_apiserver(
    harness: ProviderHarness,
) -> None:
    with pytest.raises(ApiStatusError) as refused:
        await harness.create(harness.manifest("norc", [MAIN], runtimeClassName="no-such-class"))
    assert refused.value.status == 403
    assert 'pod rejected: RuntimeClass "no-such-class" not found' in str(refused.value)


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        (
            "claims",
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]},
            "spec.resourceClaims: resource claims are not supported on this node "
            "(no dynamic resource allocation driver)",
        ),
    ],
)
async def test_what_the_runtime_cannot_honour_is_refused_by_path(
    harness: ProviderHarness, name: str, spec: dict[str, Any], message: str
) -> None:
    await harness.create(harness.manifest(name, [MAIN], **spec))
    pod = await harness.wait_for(name, lambda p: phase(p) == "Failed")
    assert (pod["status"]["reason"], pod["status"]["message"]) == ("Forbidden", message)
    failed = await harness.wait_event(name, "Failed")
    assert failed["message"] == f"Error: {message}"


async def test_restart_policy_rules_restart_on_the_listed_exit_code(harness: ProviderHarness) -> None:
    # exits 42 on its first run (restarted by the rule), then 0 (not restarted: its own Never)
    script = "if [ -f /data/ran ]; then exit 0; fi; touch /data/ran; exit 42"
    rule = {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}
    container = {
        "name": "c",
        "image": BUSYBOX_IMAGE,
        "command": ["sh", "-c", script],
        "restartPolicy": "Never",
        "restartPolicyRules": [rule],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    manifest = harness.manifest(
        "ruled", [container], restartPolicy="Never", volumes=[{"name": "data", "emptyDir": {}}]
    )
    await harness.create(manifest)
    pod = await harness.wait_for("ruled", lambda p: phase(p) == "Succeeded")
    [status] = pod["status"]["containerStatuses"]
    assert status["restartCount"] == 1 and status["state"]["terminated"]["exitCode"] == 0
    assert status["lastState"]["terminated"]["exitCode"] == 42
