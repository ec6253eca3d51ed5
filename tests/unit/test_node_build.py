"""The Node object built from config + runtime facts, and the takeover patch for an existing Node."""

from __future__ import annotations

import dataclasses

from vk_common.kube_version import KUBE_VERSION
from vk_provider import __version__
from vk_provider.config import Config, KubeletServerConfig, NodeCapacity, NodeConfig, Taint
from vk_provider.node.build import (
    CORDONED_ANNOTATION,
    KUBELET_VERSION,
    OWNED_LABELS_ANNOTATION,
    build_node,
    kubelet_port,
    metadata_patch,
    node_capacity,
    node_ip_from,
)
from vk_provider.node.conditions import desired_conditions
from vk_provider.runtime.types import RuntimeInfo

INFO = RuntimeInfo(
    cpus=8,
    memory_bytes=16 * 1024**3 + 512,
    storage_bytes=100 * 1024**3,
    os_type="linux",
    architecture="amd64",
    kernel_version="6.1.0-test",
    os_image="Debian GNU/Linux 12 (bookworm)",
    runtime_version="docker://20.10.24",
    hostname="host-1",
)


def config(**node: object) -> Config:
    return Config(
        node=NodeConfig(name="vk-1", **node), kubelet_server=KubeletServerConfig(listen="0.0.0.0:10999")
    )  # type: ignore[arg-type]


def test_built_node_has_labels_taint_provider_id_capacity_addresses_port_and_info() -> None:
    node = build_node(config(labels={"team": "a", "type": "custom"}), INFO, "10.0.0.5", [])
    labels = node["metadata"]["labels"]
    assert labels["type"] == "custom"  # configured labels win
    assert labels["team"] == "a"
    for key, value in {
        "kubernetes.io/role": "agent",
        "kubernetes.io/hostname": "vk-1",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/exclude-from-external-load-balancers": "true",
    }.items():
        assert labels[key] == value
    assert node["metadata"]["annotations"][OWNED_LABELS_ANNOTATION] == ",".join(sorted(labels))
    assert node["spec"] == {
        "providerID": "docker://vk-1",
        "taints": [{"key": "virtual-kubelet.io/provider", "value": "docker", "effect": "NoSchedule"}],
    }
    status = node["status"]
    assert status["capacity"] == {
        "cpu": "8",
        "memory": f"{16 * 1024**2}Ki",
        "ephemeral-storage": f"{100 * 1024**2}Ki",
        "pods": "110",
    }
    assert status["allocatable"] == status["capacity"]
    assert status["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.5"},
        {"type": "Hostname", "address": "vk-1"},
    ]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10999}}
    info = status["nodeInfo"]
    assert info["kubeletVersion"] == KUBELET_VERSION
    assert f"{KUBE_VERSION}-vk-provider-{__version__}" == KUBELET_VERSION
    assert (info["operatingSystem"], info["architecture"]) == ("linux", "amd64")
    assert info["containerRuntimeVersion"] == "docker://20.10.24"
    assert (info["kernelVersion"], info["osImage"]) == ("6.1.0-test", "Debian GNU/Linux 12 (bookworm)")
    # sorted, as node validation requires; the apiserver refuses an init container resize
    # on a node that does not declare it
    features = status["declaredFeatures"]
    assert features == sorted(features) and "InPlacePodVerticalScalingInitContainers" in features
    # the engine's default handler only (INFO lists no other)
    assert status["runtimeHandlers"] == [
        {"name": "", "features": {"recursiveReadOnlyMounts": False, "userNamespaces": False}}
    ]


def test_the_node_reports_each_runtime_class_handler_it_can_run() -> None:
    info = dataclasses.replace(INFO, runtime_handlers=("", "crun", "runc"))
    status = build_node(config(), info, "10.0.0.5", [])["status"]
    assert [h["name"] for h in status["runtimeHandlers"]] == ["", "crun", "runc"]


def test_configured_capacity_wins_and_unknown_auto_is_left_out() -> None:
    cap = NodeCapacity(cpu="4", memory="8Gi", pods="50", ephemeral_storage="auto")
    assert node_capacity(NodeConfig(capacity=cap), INFO)["memory"] == "8Gi"
    assert node_capacity(NodeConfig(capacity=cap), None) == {"cpu": "4", "memory": "8Gi", "pods": "50"}
    assert node_capacity(NodeConfig(), None) == {"pods": "110"}


def test_taint_can_be_disabled_or_changed_and_provider_id_configured() -> None:
    assert build_node(config(taints=()), INFO, "1.2.3.4", [])["spec"]["taints"] == []
    spec = build_node(
        config(taints=(Taint("x", "NoExecute"),), provider_id="aws:///i-1"), INFO, "1.2.3.4", []
    )["spec"]
    assert spec == {"providerID": "aws:///i-1", "taints": [{"key": "x", "effect": "NoExecute"}]}


def test_kubelet_port_and_node_ip_sources() -> None:
    assert kubelet_port("0.0.0.0:10250") == 10250
    assert kubelet_port("[::]:11250") == 11250
    assert kubelet_port("") == 10250
    assert node_ip_from("10.1.1.1", {"NODE_IP": "10.2.2.2"}) == "10.1.1.1"
    assert node_ip_from("", {"NODE_IP": "10.2.2.2", "POD_IP": "10.3.3.3"}) == "10.2.2.2"
    assert node_ip_from("", {"POD_IP": "10.3.3.3"}) == "10.3.3.3"
    assert node_ip_from("", {}) == ""


def existing_node(**spec: object) -> dict[str, object]:
    return {
        "metadata": {
            "name": "vk-1",
            "resourceVersion": "77",
            "labels": {"kubernetes.io/hostname": "vk-1", "old-ours": "x", "users": "keep"},
            "annotations": {OWNED_LABELS_ANNOTATION: "kubernetes.io/hostname,old-ours"},
        },
        "spec": spec,
    }


def test_takeover_patch_sets_ours_removes_stale_owned_and_keeps_others() -> None:
    current = existing_node(
        taints=[
            {"key": "virtual-kubelet.io/provider", "value": "old", "effect": "NoSchedule"},
            {
                "key": "node.kubernetes.io/unreachable",
                "effect": "NoExecute",
                "timeAdded": "2026-01-01T00:00:00Z",
            },
        ]
    )
    patch = metadata_patch(current, config(), INFO)
    assert patch is not None
    assert patch["metadata"]["resourceVersion"] == "77"
    labels = patch["metadata"]["labels"]
    assert labels["old-ours"] is None
    assert "users" not in labels and "kubernetes.io/hostname" not in labels
    assert labels["type"] == "virtual-kubelet"
    assert patch["spec"]["taints"] == [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"},
        {"key": "virtual-kubelet.io/provider", "value": "docker", "effect": "NoSchedule"},
    ]
    assert patch["spec"]["providerID"] == "docker://vk-1"


def test_takeover_patch_is_none_when_in_step_and_never_changes_provider_id() -> None:
    built = build_node(config(), INFO, "1.2.3.4", [])
    built["metadata"]["resourceVersion"] = "5"
    assert metadata_patch(built, config(), INFO) is None
    built["spec"]["providerID"] = "someone-else://x"
    assert metadata_patch(built, config(), INFO) is None


def test_takeover_lifts_our_shutdown_cordon() -> None:
    built = build_node(config(), INFO, "1.2.3.4", [])
    built["metadata"]["annotations"][CORDONED_ANNOTATION] = "true"
    built["spec"]["unschedulable"] = True
    patch = metadata_patch(built, config(), INFO)
    assert patch is not None
    assert patch["spec"] == {"unschedulable": False}
    assert patch["metadata"]["annotations"] == {CORDONED_ANNOTATION: None}


def test_disabling_the_taint_removes_it() -> None:
    built = build_node(config(), INFO, "1.2.3.4", [])
    patch = metadata_patch(
        built, dataclasses.replace(config(), node=NodeConfig(name="vk-1", taints=())), INFO
    )
    assert patch is not None and patch["spec"]["taints"] == []


def test_conditions_are_not_part_of_the_takeover_patch() -> None:
    built = build_node(config(), INFO, "1.2.3.4", desired_conditions(None))
    assert metadata_patch(built, config(), INFO) is None
