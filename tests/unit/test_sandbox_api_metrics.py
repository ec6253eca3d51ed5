"""The metrics.k8s.io conversion: kubelet Summaries to NodeMetrics/PodMetrics as metrics-server
writes them (quantities, durations, which nodes and pods have no rate yet), and its discovery."""

from __future__ import annotations

from typing import Any

import pytest

from vk_sandbox.api.discovery import aggregated_discovery, api_group_list, api_resource_list
from vk_sandbox.api.metrics import (
    NodeScrape,
    format_cpu,
    format_memory,
    go_duration,
    metrics_list,
    metrics_table,
    node_metrics,
    pod_metrics,
)
from vk_sandbox.api.resources import RESOURCES

CREATED = "2026-11-30T01:00:10Z"
STAMP = "2026-11-30T01:00:09Z"


@pytest.mark.parametrize(
    ("nano", "text"),
    [
        (0, "0"),
        (137682270, "137682270n"),
        (1230, "1230n"),
        (5_000_000, "5m"),
        (12_000, "12u"),
        (1_000_000_000, "1"),
        (2_500_000_000, "2500m"),
        (10_000_000_000, "10"),
    ],
)
def test_cpu_is_a_canonical_decimal_quantity_of_scale_minus_9(nano: int, text: str) -> None:
    assert format_cpu(nano) == text


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0"),
        (1000, "1k"),  # below 1024 BinarySI falls back to DecimalSI
        (999, "999"),
        (1024, "1Ki"),
        (1_879_003_136, "1834964Ki"),
        (3 * 1024 * 1024, "3Mi"),
        (123_456_789, "123456789"),  # not a multiple of 1024: the exact integer
        (2 * 1024**3, "2Gi"),
    ],
)
def test_memory_is_a_canonical_binary_quantity(size: int, text: str) -> None:
    assert format_memory(size) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (15.003, "15.003s"),
        (20.029, "20.029s"),
        (5, "5s"),
        (60.5, "1m0.5s"),
        (7200, "2h0m0s"),
        (0.5, "500ms"),
        (0.0000015, "1.5µs"),
        (0.000000042, "42ns"),
    ],
)
def test_window_is_a_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def _container(name: str, nano: int | None, working_set: int) -> dict[str, Any]:
    cpu: dict[str, Any] = {"time": STAMP, "usageCoreNanoSeconds": 10**9}
    if nano is not None:
        cpu["usageNanoCores"] = nano
    return {
        "name": name,
        "startTime": "2026-11-30T00:59:00Z",
        "cpu": cpu,
        "memory": {"time": STAMP, "usageBytes": working_set + 4096, "workingSetBytes": working_set},
    }


def _summary(containers: list[dict[str, Any]]) -> dict[str, Any]:
    pods = (
        [{"podRef": {"name": "web", "namespace": "default", "uid": "u1"}, "containers": containers}]
        if containers
        else []
    )
    node: dict[str, Any] = {
        "nodeName": "n1",
        "cpu": {"time": STAMP, "usageCoreNanoSeconds": 2 * 10**9},
        "memory": {"time": STAMP},
    }
    with_rate = [c for c in containers if "usageNanoCores" in c["cpu"]]
    if with_rate:
        node["cpu"]["usageNanoCores"] = sum(c["cpu"]["usageNanoCores"] for c in with_rate)
    if containers:
        node["memory"]["workingSetBytes"] = sum(c["memory"]["workingSetBytes"] for c in containers)
    return {"node": node, "pods": pods}


NODE = {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}, "uid": "x"}, "status": {}}
POD = {
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}, "uid": "u1"},
    "status": {"phase": "Running"},
}


def test_node_metrics_has_metrics_servers_shape() -> None:
    summary = _summary([_container("app", 1_500_000, 2 * 1024 * 1024), _container("side", 230, 4096)])
    got = node_metrics(NODE, NodeScrape(summary, 100.0, 15.25), CREATED)
    assert got == {
        "kind": "NodeMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {"name": "n1", "creationTimestamp": CREATED, "labels": {"kubernetes.io/hostname": "n1"}},
        "timestamp": STAMP,
        "window": "15.25s",
        "usage": {"cpu": "1500230n", "memory": "2052Ki"},
    }


def test_no_node_metrics_on_the_first_scrape_or_before_any_rate() -> None:
    with_rate = _summary([_container("app", 1_000, 4096)])
    assert node_metrics(NODE, NodeScrape(with_rate, 100.0, None), CREATED) is None
    without_rate = _summary([_container("app", None, 4096)])
    assert node_metrics(NODE, NodeScrape(without_rate, 100.0, 5.0), CREATED) is None


def test_a_node_without_pods_uses_nothing() -> None:
    got = node_metrics(NODE, NodeScrape(_summary([]), 100.0, 5.0), CREATED)
    assert got is not None and got["usage"] == {"cpu": "0", "memory": "0"}


def test_pod_metrics_lists_each_containers_usage() -> None:
    stats = _summary([_container("app", 1_500_000, 2 * 1024 * 1024), _container("side", 0, 1000)])["pods"][0]
    got = pod_metrics(POD, stats, 15.0, CREATED)
    assert got == {
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "creationTimestamp": CREATED,
            "labels": {"app": "web"},
        },
        "timestamp": STAMP,
        "window": "15s",
        "containers": [
            {"name": "app", "usage": {"cpu": "1500u", "memory": "2Mi"}},
            {"name": "side", "usage": {"cpu": "0", "memory": "1k"}},
        ],
    }


def test_a_pod_waits_until_every_container_has_a_rate_and_must_be_running() -> None:
    stats = _summary([_container("app", 1_000, 4096), _container("new", None, 4096)])["pods"][0]
    assert pod_metrics(POD, stats, 15.0, CREATED) is None
    ready = _summary([_container("app", 1_000, 4096)])["pods"][0]
    assert pod_metrics(POD, ready, None, CREATED) is None
    pending = {**POD, "status": {"phase": "Pending"}}
    assert pod_metrics(pending, ready, 15.0, CREATED) is None
    assert pod_metrics(POD, {"podRef": {}, "containers": []}, 15.0, CREATED) is None


def test_list_items_carry_no_type_meta() -> None:
    stats = _summary([_container("app", 1_000, 4096)])["pods"][0]
    item = pod_metrics(POD, stats, 15.0, CREATED)
    assert item is not None
    doc = metrics_list("PodMetrics", [item])
    assert doc["kind"] == "PodMetricsList" and doc["apiVersion"] == "metrics.k8s.io/v1beta1"
    assert doc["metadata"] == {}
    assert "kind" not in doc["items"][0] and doc["items"][0]["metadata"]["name"] == "web"


def test_discovery_lists_the_metrics_group_but_the_store_does_not_serve_it() -> None:
    assert {
        "name": "metrics.k8s.io",
        "versions": [{"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}],
        "preferredVersion": {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"},
    } in api_group_list()["groups"]
    resources = api_resource_list("metrics.k8s.io", "v1beta1")
    assert resources is not None
    assert resources["resources"] == [
        {
            "name": "nodes",
            "singularName": "node",
            "namespaced": False,
            "kind": "NodeMetrics",
            "verbs": ["get", "list"],
        },
        {
            "name": "pods",
            "singularName": "pod",
            "namespaced": True,
            "kind": "PodMetrics",
            "verbs": ["get", "list"],
        },
    ]
    aggregated = {i["metadata"].get("name"): i for i in aggregated_discovery(legacy=False)["items"]}
    [version] = aggregated["metrics.k8s.io"]["versions"]
    assert version["version"] == "v1beta1"
    assert [(r["resource"], r["scope"], r["responseKind"]["kind"]) for r in version["resources"]] == [
        ("nodes", "Cluster", "NodeMetrics"),
        ("pods", "Namespaced", "PodMetrics"),
    ]
    assert "nodes.metrics.k8s.io" not in RESOURCES and "pods.metrics.k8s.io" not in RESOURCES


def test_table_sums_a_pods_containers_and_shows_the_window() -> None:
    stats = _summary([_container("app", 1_500_000, 2 * 1024 * 1024), _container("side", 500_000, 1024)])[
        "pods"
    ][0]
    item = pod_metrics(POD, stats, 15.0, CREATED)
    assert item is not None
    table = metrics_table([item])
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "cpu", "memory", "Window"]
    [row] = table["rows"]
    assert row["cells"] == ["web", "2m", "2049Ki", "15s"]
    assert row["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": item["metadata"],
    }
    node = node_metrics(NODE, NodeScrape(_summary([_container("app", 1230, 4096)]), 1.0, 5.0), CREATED)
    assert node is not None
    assert metrics_table([node], "None")["rows"] == [{"cells": ["n1", "1230n", "4Ki", "5s"]}]
    assert metrics_table([]) == {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [],
        "rows": [],
    }
