"""Node labels under NodeRestriction: what a provider running as system:node:<name> may set."""

from __future__ import annotations

import pytest

from vk_provider.config import NodeConfig
from vk_provider.node.build import kubelet_may_set, node_labels


@pytest.mark.parametrize(
    "key",
    [
        "type",
        "example.com/team",
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "topology.kubernetes.io/zone",
        "node.kubernetes.io/exclude-from-external-load-balancers",
        "kubelet.kubernetes.io/anything",
        "x.node.kubernetes.io/y",
    ],
)
def test_a_kubelet_may_set(key: str) -> None:
    assert kubelet_may_set(key)


@pytest.mark.parametrize(
    "key",
    [
        "kubernetes.io/role",
        "node-role.kubernetes.io/agent",
        "node-restriction.kubernetes.io/pool",
        "example.node-restriction.kubernetes.io/pool",
        "k8s.io/anything",
        "sub.k8s.io/anything",
    ],
)
def test_noderestriction_forbids(key: str) -> None:
    assert not kubelet_may_set(key)


def test_as_kubelet_the_role_and_forbidden_configured_labels_are_left_out() -> None:
    node = NodeConfig(name="docker-1", labels={"team": "a", "node-role.kubernetes.io/agent": ""})
    full = node_labels(node, None)
    restricted = node_labels(node, None, as_kubelet=True)
    assert full["kubernetes.io/role"] == "agent" and "node-role.kubernetes.io/agent" in full
    assert set(full) - set(restricted) == {"kubernetes.io/role", "node-role.kubernetes.io/agent"}
    assert restricted["kubernetes.io/hostname"] == "docker-1" and restricted["team"] == "a"
