"""The kubelet's admission: the OS label and field, nodeSelector and required node affinity."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import manifests
from vk_provider.pods.admission import (
    HOST_PORTS,
    NODE_AFFINITY,
    OS_NOT_SUPPORTED,
    OS_SELECTOR_MISMATCH,
    admit,
)

NODE = {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "zone": "a", "cores": "8"}}}


def _pod(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [])
    return manifests.pod("p", containers, namespace=None, labels=labels or {}, **spec)


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def test_the_os_label_then_the_os_field_as_upstream_orders_them() -> None:
    assert admit(_pod(), NODE) is None
    assert admit(_pod(os={"name": "linux"}), NODE) is None
    assert admit(_pod(os={"name": "windows"}), NODE) == OS_NOT_SUPPORTED
    windows = {"kubernetes.io/os": "windows"}
    assert admit(_pod(windows, os={"name": "windows"}), NODE) == OS_SELECTOR_MISMATCH
    assert OS_NOT_SUPPORTED[0] == "PodOSNotSupported"


def test_node_selector() -> None:
    assert admit(_pod(nodeSelector={"zone": "a"}), NODE) is None
    assert admit(_pod(nodeSelector={"zone": "b"}), NODE) == NODE_AFFINITY
    assert admit(_pod(nodeSelector={"gpu": "yes"}), NODE) == NODE_AFFINITY
    # a node not registered yet: nothing to match against
    assert admit(_pod(nodeSelector={"zone": "b"}), {}) is None


@pytest.mark.parametrize(
    ("affinity", "admitted"),
    [
        (_required(_expr("zone", "In", "a", "b")), True),
        (_required(_expr("zone", "NotIn", "a")), False),
        (_required(_expr("gpu", "NotIn", "x")), True),
        (_required(_expr("zone", "Exists")), True),
        (_required(_expr("zone", "DoesNotExist")), False),
        (_required(_expr("cores", "Gt", "4")), True),
        (_required(_expr("cores", "Lt", "4")), False),
        (_required(_expr("zone", "Gt", "4")), False),
        (_required(_expr("zone", "In", "b"), _expr("zone", "In", "a")), True),  # terms are ORed
        (_required({}), False),  # an empty term matches nothing
        (_required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}), True),
        (_required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}), False),
    ],
)
def test_required_node_affinity(affinity: dict[str, Any], admitted: bool) -> None:
    assert (admit(_pod(affinity=affinity), NODE) is None) is admitted
    # preferred terms never reject
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    assert admit(_pod(affinity=preferred), NODE) is None


def _with_port(
    host_port: int, host_ip: str = "", protocol: str = "TCP", init: bool = False
) -> dict[str, Any]:
    port: dict[str, Any] = {"containerPort": 80, "hostPort": host_port, "protocol": protocol}
    if host_ip:
        port["hostIP"] = host_ip
    container = {"name": "c", "ports": [port]}
    return _pod(**({"initContainers": [container]} if init else {"containers": [container]}))


@pytest.mark.parametrize(
    ("wanted", "in_use", "conflict"),
    [
        (_with_port(8080), _with_port(8080), True),
        (_with_port(8080), _with_port(8081), False),
        (_with_port(8080, protocol="UDP"), _with_port(8080), False),
        (_with_port(8080, "127.0.0.1"), _with_port(8080, "10.0.0.1"), False),
        (_with_port(8080, "127.0.0.1"), _with_port(8080, "127.0.0.1"), True),
        (_with_port(8080, "127.0.0.1"), _with_port(8080), True),  # 0.0.0.0 holds every address
        (_with_port(8080), _with_port(8080, "10.0.0.1"), True),
        (_with_port(8080), _with_port(8080, init=True), True),  # init containers' ports count too
        (_pod(containers=[{"name": "c", "ports": [{"containerPort": 8080}]}]), _with_port(8080), False),
    ],
)
def test_host_ports_of_the_nodes_admitted_pods_reject_a_conflicting_pod(
    wanted: dict[str, Any], in_use: dict[str, Any], conflict: bool
) -> None:
    """The NodePorts check of the kubelet's admission (scheduler.AdmissionCheck, nodeports.Fits)."""
    assert admit(wanted, NODE, [in_use]) == (HOST_PORTS if conflict else None)
    assert admit(wanted, NODE) is None
    assert HOST_PORTS == (
        "NodePorts",
        "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    )
