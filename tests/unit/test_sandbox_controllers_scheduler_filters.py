"""The sandbox scheduler's pure decisions: quantities, filters, node choice and FitError messages."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from vk_sandbox.api.pod_requests import pod_requests
from vk_sandbox.api.quantity import ORDER_LIMIT, parse_quantity
from vk_sandbox.controllers.scheduler_filters import (
    NodeInfo,
    choose_node,
    fit_error_message,
    tolerates,
    waits_for_scheduling,
)

READY = [{"type": "Ready", "status": "True"}]


def node(name: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    status = {"conditions": READY, "allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"}}
    status.update(extra.pop("status", {}))
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": extra, "status": status}


def pod(**spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "c", "image": "x"}])
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec, "status": {"phase": "Pending"}}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        ("64Mi", 64 * 2**20),
        ("1Gi", 2**30),
        ("2G", 2 * 10**9),
        ("1e3", 1000),
        ("500n", Fraction(5, 10**7)),
        (3, 3),
    ],
)
def test_parse_quantity(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


def test_parse_quantity_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_quantity("12 apples")
    with pytest.raises(ValueError):
        parse_quantity("\u0663")  # an Arabic-Indic 3: upstream's grammar is ASCII digits only


@pytest.mark.timeout(20)  # computed exactly, 1e10000000 takes ~16 s of CPU and 1e100000000 far more
def test_parse_quantity_clamps_huge_exponents_instead_of_computing_them() -> None:
    assert parse_quantity("1e100000000") == Fraction(10) ** ORDER_LIMIT
    assert parse_quantity("-2.5e100000000") == -(Fraction(10) ** ORDER_LIMIT)
    assert parse_quantity("1e-100000000") == Fraction(1, 10**ORDER_LIMIT)
    assert parse_quantity("0e100000000") == 0
    assert parse_quantity("123e27") == 123 * Fraction(10) ** 27  # within the limit: exact


def test_pod_requests_take_limits_init_and_overhead() -> None:
    p = pod(
        containers=[
            {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "200m"}}},
        ],
        initContainers=[{"name": "i", "resources": {"requests": {"cpu": "1", "memory": "1Mi"}}}],
        overhead={"cpu": "10m"},
    )
    assert pod_requests(p) == (Fraction(101, 100), Fraction(64 * 2**20))


def test_pod_requests_count_sidecars() -> None:
    p = pod(
        containers=[{"name": "app", "resources": {"requests": {"cpu": "500m"}}}],
        initContainers=[
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
            {"name": "setup", "resources": {"requests": {"cpu": "1"}}},
        ],
    )
    assert pod_requests(p)[0] == Fraction(6, 5)  # setup (1) runs beside the sidecar (0.2)


def test_which_pods_wait() -> None:
    assert waits_for_scheduling(pod())
    assert waits_for_scheduling(pod(schedulerName="default-scheduler"))
    assert not waits_for_scheduling(pod(schedulerName="other"))
    assert not waits_for_scheduling(pod(nodeName="n"))
    assert not waits_for_scheduling(pod(schedulingGates=[{"name": "example.com/wait"}]))
    done = pod()
    done["status"]["phase"] = "Succeeded"
    assert not waits_for_scheduling(done)


def test_tolerations() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert tolerates({"key": "k", "value": "v"}, taint)
    assert tolerates({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, taint)
    assert tolerates({"operator": "Exists"}, taint)
    assert not tolerates({"key": "k", "value": "w"}, taint)
    assert not tolerates({"key": "k", "operator": "Exists", "effect": "NoExecute"}, taint)


def test_node_affinity_operators_and_fields() -> None:
    nodes = [NodeInfo(node("a", {"zone": "1", "gen": "5"})), NodeInfo(node("b", {"zone": "2"}))]

    def chosen(**affinity: Any) -> str | None:
        terms = [{"matchExpressions": affinity.get("exprs", []), "matchFields": affinity.get("fields", [])}]
        p = pod(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            }
        )
        info, _ = choose_node(p, nodes)
        return info.name if info else None

    assert chosen(exprs=[{"key": "zone", "operator": "In", "values": ["2"]}]) == "b"
    assert chosen(exprs=[{"key": "zone", "operator": "NotIn", "values": ["2"]}]) == "a"
    assert chosen(exprs=[{"key": "gen", "operator": "Exists"}]) == "a"
    assert chosen(exprs=[{"key": "gen", "operator": "DoesNotExist"}]) == "b"
    assert chosen(exprs=[{"key": "gen", "operator": "Gt", "values": ["4"]}]) == "a"
    assert chosen(exprs=[{"key": "gen", "operator": "Lt", "values": ["4"]}]) is None
    assert chosen(fields=[{"key": "metadata.name", "operator": "In", "values": ["b"]}]) == "b"


def test_fit_error_message_form() -> None:
    nodes = [
        NodeInfo(node("a", {"disk": "hdd"})),
        NodeInfo(node("b", {"disk": "ssd"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])),
        NodeInfo(node("c", {"disk": "ssd"}, taints=[{"key": "soft", "effect": "PreferNoSchedule"}])),
    ]
    p = pod(
        nodeSelector={"disk": "ssd"},
        containers=[{"name": "c", "resources": {"requests": {"cpu": "3"}}}],
    )
    info, message = choose_node(p, nodes)
    assert info is None
    assert message == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {k: v}. preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
    )
    assert fit_error_message(0, {}) == "no nodes available to schedule pods"


def test_not_ready_unschedulable_and_pod_count() -> None:
    not_ready = node("nr", status={"conditions": [{"type": "Ready", "status": "False"}]})
    cordoned = node("co", unschedulable=True)
    full = NodeInfo(node("full", status={"allocatable": {"pods": "1"}}), pods=1)
    info, message = choose_node(pod(), [NodeInfo(not_ready), NodeInfo(cordoned), full])
    assert info is None
    assert "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }" in message
    assert "1 node(s) were unschedulable" in message
    assert "1 Too many pods" in message


def test_least_allocated_node_wins() -> None:
    busy = NodeInfo(node("busy"), cpu=Fraction(3, 2), pods=3)
    idle = NodeInfo(node("idle"))
    info, _ = choose_node(
        pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]), [busy, idle]
    )
    assert info is idle


def test_host_ports_conflict_per_node() -> None:
    def with_port(port: int, ip: str = "") -> dict[str, Any]:
        spec = {
            "name": "c",
            "ports": [{"containerPort": 80, "hostPort": port, **({"hostIP": ip} if ip else {})}],
        }
        return pod(containers=[spec])

    busy = NodeInfo(node("busy"))
    busy.add(with_port(8080))
    free = NodeInfo(node("free"))
    info, _ = choose_node(with_port(8080), [busy, free])
    assert info is free
    info, message = choose_node(with_port(8080), [busy])
    assert info is None
    assert message.startswith(
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    )
    assert message.endswith("1 No preemption victims found for incoming pod.")
    info, _ = choose_node(with_port(8081), [busy])
    assert info is busy
    scoped = NodeInfo(node("scoped"))
    scoped.add(with_port(9090, "127.0.0.1"))
    assert choose_node(with_port(9090, "127.0.0.2"), [scoped])[0] is scoped
    assert choose_node(with_port(9090), [scoped])[0] is None
