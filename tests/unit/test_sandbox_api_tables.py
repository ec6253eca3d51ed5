"""Server-side Tables: upstream's columns, cells, pod STATUS reasons and HumanDuration."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from vk_common.kube_version import KUBE_VERSION
from vk_sandbox.api.tables import human_duration, pod_status_reason, to_table

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (150, "2m30s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 20 * 60, "3h20m"),
        (47 * 3600, "47h"),
        (2 * 86400 + 5 * 3600, "2d5h"),
        (8 * 86400, "8d"),
        (400 * 86400, "400d"),
        (3 * 365 * 86400 + 20 * 86400, "3y20d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(timedelta(seconds=seconds)) == text


def _pod(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "7",
            "creationTimestamp": ts(300),
        },
        "spec": {"containers": [{"name": "app", "image": "x"}], "nodeName": "vk-node"},
        "status": {"phase": "Running", **status},
    }


def running(name: str = "app", ready: bool = True, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": ts(60)}},
        **extra,
    }


def test_pod_row_cells_and_columns() -> None:
    pod = _pod(containerStatuses=[running()], podIP="10.0.0.2", podIPs=[{"ip": "10.0.0.2"}])
    table = to_table("pods", [pod], list_meta={"resourceVersion": "42"}, now=NOW)
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "42"}
    cols = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert cols == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]
    assert table["columnDefinitions"][0]["format"] == "name"
    row = table["rows"][0]
    assert row["cells"] == ["web", "1/1", "Running", "0", "5m", "10.0.0.2", "vk-node", "<none>", "<none>"]
    assert row["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": pod["metadata"],
    }


def test_include_object() -> None:
    pod = _pod()
    assert to_table("pods", [pod], list_meta={}, now=NOW, include_object="Object")["rows"][0]["object"] == pod
    assert "object" not in to_table("pods", [pod], list_meta={}, now=NOW, include_object="None")["rows"][0]


def test_restarts_with_last_restart_time() -> None:
    cs = running(restarts=3, lastState={"terminated": {"exitCode": 1, "finishedAt": ts(120)}})
    row = to_table("pods", [_pod(containerStatuses=[cs])], list_meta={}, now=NOW)["rows"][0]
    assert row["cells"][3] == "3 (2m ago)"


def waiting(reason: str, name: str = "app") -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": 0, "state": {"waiting": {"reason": reason}}}


def terminated(name: str = "app", exit_code: int = 0, reason: str = "", signal: int = 0) -> dict[str, Any]:
    term: dict[str, Any] = {"exitCode": exit_code}
    if reason:
        term["reason"] = reason
    if signal:
        term["signal"] = signal
    return {"name": name, "ready": False, "restartCount": 0, "state": {"terminated": term}}


def test_status_reasons() -> None:
    assert pod_status_reason(_pod(phase="Pending")) == "Pending"
    assert pod_status_reason(_pod(phase="Pending", containerStatuses=[waiting("ContainerCreating")])) == (
        "ContainerCreating"
    )
    assert pod_status_reason(_pod(containerStatuses=[waiting("CrashLoopBackOff")])) == "CrashLoopBackOff"
    assert pod_status_reason(_pod(phase="Succeeded", containerStatuses=[terminated(reason="Completed")])) == (
        "Completed"
    )
    assert pod_status_reason(
        _pod(phase="Failed", containerStatuses=[terminated(exit_code=1, reason="Error")])
    ) == ("Error")
    assert pod_status_reason(_pod(containerStatuses=[terminated(exit_code=2)])) == "ExitCode:2"
    assert pod_status_reason(_pod(containerStatuses=[terminated(exit_code=137, signal=9)])) == "Signal:9"
    assert pod_status_reason(_pod(phase="Failed", reason="Evicted")) == "Evicted"


def test_completed_with_running_container_is_running_or_notready() -> None:
    pod = _pod(containerStatuses=[terminated(name="a", reason="Completed"), running(name="b")])
    pod["spec"]["containers"] = [{"name": "a"}, {"name": "b"}]
    # The loop runs from the last status to the first, so "a"'s Completed wins, then is corrected.
    assert pod_status_reason(pod) == "NotReady"
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert pod_status_reason(pod) == "Running"


def test_completed_with_a_failed_container_shows_the_failure() -> None:
    """printPod: a Completed summary gives way to the first failed container's reason unless a
    container still runs in a Ready pod."""
    statuses = [terminated(name="a", reason="Completed"), terminated(name="b", exit_code=1, reason="Error")]
    pod = _pod(phase="Failed", containerStatuses=statuses)
    pod["spec"]["containers"] = [{"name": "a"}, {"name": "b"}]
    assert pod_status_reason(pod) == "Error"
    pod["status"]["containerStatuses"] = [terminated(name="a", reason="Completed"), running(name="b")]
    pod["status"]["containerStatuses"].insert(1, terminated(name="c", exit_code=3))
    pod["spec"]["containers"].append({"name": "c"})
    assert pod_status_reason(pod) == "ExitCode:3"  # not NotReady: the failure comes first
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert pod_status_reason(pod) == "Running"


def test_init_container_reasons() -> None:
    pod = _pod(phase="Pending", containerStatuses=[waiting("PodInitializing")])
    pod["spec"]["initContainers"] = [{"name": "i1"}, {"name": "i2"}]
    pod["status"]["initContainerStatuses"] = [terminated(name="i1"), waiting("PodInitializing", name="i2")]
    assert pod_status_reason(pod) == "Init:1/2"
    pod["status"]["initContainerStatuses"] = [
        waiting("PodInitializing", name="i1"),
        waiting("PodInitializing", "i2"),
    ]
    assert pod_status_reason(pod) == "Init:0/2"
    pod["status"]["initContainerStatuses"] = [
        terminated(name="i1", exit_code=1, reason="Error"),
        waiting("x", "i2"),
    ]
    assert pod_status_reason(pod) == "Init:Error"
    pod["status"]["initContainerStatuses"] = [waiting("CrashLoopBackOff", name="i1"), waiting("x", "i2")]
    assert pod_status_reason(pod) == "Init:CrashLoopBackOff"
    pod["status"]["initContainerStatuses"] = [terminated(name="i1", exit_code=3), waiting("x", "i2")]
    assert pod_status_reason(pod) == "Init:ExitCode:3"


def test_sidecar_counts_in_ready_total() -> None:
    pod = _pod(containerStatuses=[running()])
    pod["spec"]["initContainers"] = [{"name": "side", "restartPolicy": "Always"}]
    pod["status"]["initContainerStatuses"] = [running(name="side", started=True, restarts=2)]
    row = to_table("pods", [pod], list_meta={}, now=NOW)["rows"][0]
    assert row["cells"][1:4] == ["2/2", "Running", "2"]


def test_terminating_and_unknown() -> None:
    pod = _pod(containerStatuses=[running()])
    pod["metadata"]["deletionTimestamp"] = ts(-30)
    assert pod_status_reason(pod) == "Terminating"
    pod["status"]["phase"] = "Succeeded"
    pod["status"]["containerStatuses"] = [terminated(reason="Completed")]
    assert pod_status_reason(pod) == "Completed"
    pod["status"]["phase"] = "Running"
    pod["status"]["reason"] = "NodeLost"
    pod["status"]["containerStatuses"] = []
    assert pod_status_reason(pod) == "Unknown"


def test_readiness_gates_and_completed_row_condition() -> None:
    pod = _pod(phase="Succeeded", conditions=[{"type": "example.com/gate", "status": "True"}])
    pod["spec"]["readinessGates"] = [{"conditionType": "example.com/gate"}, {"conditionType": "other"}]
    row = to_table("pods", [pod], list_meta={}, now=NOW)["rows"][0]
    assert row["cells"][8] == "1/2"
    assert row["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]


def test_node_table() -> None:
    node = {
        "metadata": {
            "name": "vk-node",
            "creationTimestamp": ts(3 * 86400),
            "labels": {
                "node-role.kubernetes.io/agent": "",
                "kubernetes.io/role": "virtual",
                "node-role.kubernetes.io/": "",
            },
        },
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "Unknown"},
            ],
            "addresses": [
                {"type": "Hostname", "address": "vk-node"},
                {"type": "InternalIP", "address": "10.1.1.1"},
            ],
            "nodeInfo": {
                "kubeletVersion": f"{KUBE_VERSION}-vk",
                "architecture": "arm64",
                "osImage": "Docker",
                "containerRuntimeVersion": "docker://20.10",
            },
        },
    }
    table = to_table("nodes", [node], list_meta={"resourceVersion": "1"}, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Status",
        "Roles",
        "Age",
        "Version",
        "Internal-IP",
        "External-IP",
        "OS-Image",
        "Kernel-Version",
        "Container-Runtime",
    ]
    assert table["rows"][0]["cells"] == [
        "vk-node",
        "NotReady,SchedulingDisabled",
        "agent,virtual",
        "3d",
        f"{KUBE_VERSION}-vk",
        "10.1.1.1",
        "<none>",
        "Docker",
        "<unknown> (arm64)",  # printNode appends the architecture to the kernel version
        "docker://20.10",
    ]
    no_conditions = {"metadata": {"name": "n"}}
    assert to_table("nodes", [no_conditions], list_meta={}, now=NOW)["rows"][0]["cells"][1:3] == [
        "Unknown",
        "<none>",
    ]


def test_event_table() -> None:
    ev = {
        "metadata": {"name": "web.1", "namespace": "default", "creationTimestamp": ts(100)},
        "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
        "reason": "Pulled",
        "message": "  Container image already present \n",
        "source": {"component": "kubelet", "host": "vk-node"},
        "firstTimestamp": ts(100),
        "lastTimestamp": ts(10),
        "count": 3,
        "type": "Normal",
    }
    table = to_table("events", [ev], list_meta={}, now=NOW)
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Last Seen", 0),
        ("Type", 0),
        ("Reason", 0),
        ("Object", 0),
        ("Subobject", 1),
        ("Source", 1),
        ("Message", 0),
        ("First Seen", 1),
        ("Count", 1),
        ("Name", 1),
    ]
    assert table["rows"][0]["cells"] == [
        "10s",
        "Normal",
        "Pulled",
        "pod/web",
        "spec.containers{app}",
        "kubelet, vk-node",
        "Container image already present",
        "100s",
        3,
        "web.1",
    ]
    new_style = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Node"},
        "eventTime": "2026-01-01T11:59:00.000000Z",
        "reportingComponent": "default-scheduler",
        "type": "Warning",
        "reason": "FailedScheduling",
        "message": "0/1 nodes are available",
    }
    cells = to_table("events", [new_style], list_meta={}, now=NOW)["rows"][0]["cells"]
    assert cells[0] == "60s"
    assert cells[3] == "node"
    assert cells[5] == "default-scheduler"
    assert cells[8] == 1


def test_simple_tables() -> None:
    meta = {"name": "x", "creationTimestamp": ts(30)}
    assert to_table("namespaces", [{"metadata": meta, "status": {"phase": "Active"}}], list_meta={}, now=NOW)[
        "rows"
    ][0]["cells"] == ["x", "Active", "30s"]
    cm = {"metadata": meta, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert to_table("configmaps", [cm], list_meta={}, now=NOW)["rows"][0]["cells"] == ["x", 3, "30s"]
    secret = {"metadata": meta, "type": "Opaque", "data": {"a": "MQ=="}}
    table = to_table("secrets", [secret], list_meta={}, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert table["rows"][0]["cells"] == ["x", "Opaque", 1, "30s"]
    lease = {"metadata": meta, "spec": {"holderIdentity": "vk-node"}}
    assert to_table("leases", [lease], list_meta={}, now=NOW)["rows"][0]["cells"] == [
        "x",
        "vk-node",
        "30s",
    ]
    account = {"metadata": meta, "secrets": [{"name": "t"}]}
    accounts = to_table("serviceaccounts", [account], list_meta={}, now=NOW)
    assert [c["name"] for c in accounts["columnDefinitions"]] == ["Name", "Age"]  # no SECRETS in 1.37
    assert accounts["rows"][0]["cells"] == ["x", "30s"]
    generic = to_table("widgets.example.com", [{"metadata": meta}], list_meta={}, now=NOW)
    assert [c["name"] for c in generic["columnDefinitions"]] == ["Name", "Age"]
    assert generic["rows"][0]["cells"] == ["x", "30s"]


def test_service_table() -> None:
    svc = {
        "metadata": {"name": "web", "creationTimestamp": ts(30)},
        "spec": {
            "type": "NodePort",
            "clusterIP": "10.96.0.10",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            "selector": {"app": "web"},
        },
    }
    assert to_table("services", [svc], list_meta={}, now=NOW)["rows"][0]["cells"] == [
        "web",
        "NodePort",
        "10.96.0.10",
        "<none>",
        "80:30080/TCP,53/UDP",
        "30s",
        "app=web",
    ]


def test_grouped_resource_names() -> None:
    lease = {"metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1"}}
    table = to_table("leases.coordination.k8s.io", [lease], list_meta={}, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Holder", "Age"]
    csr = {
        "metadata": {"name": "csr-1"},
        "spec": {
            "signerName": "kubernetes.io/kubelet-serving",
            "username": "system:node:n1",
            "expirationSeconds": 86400,
        },
        "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "Y2VydA=="},
    }
    cells = to_table("certificatesigningrequests", [csr], list_meta={}, now=NOW)["rows"][0]["cells"]
    assert cells == [
        "csr-1",
        "<unknown>",
        "kubernetes.io/kubelet-serving",
        "system:node:n1",
        "24h",
        "Approved,Issued",
    ]


def test_watch_table_without_column_definitions() -> None:
    table = to_table("pods", [_pod()], list_meta={}, now=NOW, column_definitions=False)
    assert table["columnDefinitions"] == []
    assert len(table["rows"]) == 1


def test_naive_timestamps_are_utc() -> None:
    obj = {"metadata": {"name": "x", "creationTimestamp": "2026-01-01T11:59:00"}}
    assert to_table("configmaps", [obj], list_meta={}, now=NOW.replace(tzinfo=None))["rows"][0]["cells"] == [
        "x",
        0,
        "60s",
    ]
