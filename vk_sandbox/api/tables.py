"""Server-side `meta.k8s.io/v1` Tables, the way kube-apiserver prints objects for `kubectl get`.

Lives here: the column definitions and cell values of `pkg/printers/internalversion/printers.go`
(pods, nodes, events, namespaces, configmaps, secrets, services, leases, certificatesigningrequests;
the resource.k8s.io kinds' from tables_dra.py; a NAME/AGE table for anything else, serviceaccounts
included) and the pod STATUS reason; durations and column helpers are in table_columns.py.
The server always fills the wide (priority 1) columns; kubectl shows them only with `-o wide`.
Must not: read the store or know about HTTP; the caller passes objects, list metadata and `now`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from vk_common.objects import is_sidecar, parse_time
from vk_sandbox.api import tables_dra
from vk_sandbox.api.table_columns import (
    age_col,
    col,
    doc,
    get,
    human_duration,
    items_at,
    name_col,
    obj_at,
    since,
)

Obj = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Column definitions

_CORE = "io.k8s.api.core.v1."


@functools.cache
def _columns(resource: str) -> list[Obj]:
    if resource in tables_dra.COLUMNS:
        return tables_dra.COLUMNS[resource]()
    if resource == "pods":
        return [
            name_col(),
            col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            col("Status", "The aggregate status of the containers in this pod."),
            col(
                "Restarts",
                "The number of times the containers in this pod have been restarted and when the last "
                "container in this pod has restarted.",
            ),
            age_col(),
            col("IP", doc(_CORE + "PodStatus", "podIP"), priority=1),
            col("Node", doc(_CORE + "PodSpec", "nodeName"), priority=1),
            col("Nominated Node", doc(_CORE + "PodStatus", "nominatedNodeName"), priority=1),
            col("Readiness Gates", doc(_CORE + "PodSpec", "readinessGates"), priority=1),
        ]
    if resource == "nodes":
        info = _CORE + "NodeSystemInfo"
        return [
            name_col(),
            col("Status", "The status of the node"),
            col("Roles", "The roles of the node"),
            age_col(),
            col("Version", doc(info, "kubeletVersion")),
            col("Internal-IP", doc(_CORE + "NodeStatus", "addresses"), priority=1),
            col("External-IP", doc(_CORE + "NodeStatus", "addresses"), priority=1),
            col("OS-Image", doc(info, "osImage"), priority=1),
            col("Kernel-Version", doc(info, "kernelVersion"), priority=1),
            col("Container-Runtime", doc(info, "containerRuntimeVersion"), priority=1),
        ]
    if resource == "events":
        ev = _CORE + "Event"
        return [
            col("Last Seen", doc(ev, "lastTimestamp")),
            col("Type", doc(ev, "type")),
            col("Reason", doc(ev, "reason")),
            col("Object", doc(ev, "involvedObject")),
            col("Subobject", doc(_CORE + "ObjectReference", "fieldPath"), priority=1),
            col("Source", doc(ev, "source"), priority=1),
            col("Message", doc(ev, "message")),
            col("First Seen", doc(ev, "firstTimestamp"), priority=1),
            col("Count", doc(ev, "count"), priority=1),
            name_col(priority=1),
        ]
    if resource == "namespaces":
        return [name_col(), col("Status", "The status of the namespace"), age_col()]
    if resource == "configmaps":
        return [name_col(), col("Data", doc(_CORE + "ConfigMap", "data")), age_col()]
    if resource == "podtemplates":
        return [
            name_col(),
            col("Containers", "Names of each container in the template."),
            col("Images", "Images referenced by each container in the template."),
            col("Pod Labels", "The labels for the pod template."),
        ]
    if resource == "secrets":
        return [
            name_col(),
            col("Type", doc(_CORE + "Secret", "type")),
            col("Data", doc(_CORE + "Secret", "data")),
            age_col(),
        ]
    if resource == "services":
        spec = _CORE + "ServiceSpec"
        return [
            name_col(),
            col("Type", doc(spec, "type")),
            col("Cluster-IP", doc(spec, "clusterIP")),
            col("External-IP", doc(spec, "externalIPs")),
            col("Port(s)", doc(spec, "ports")),
            age_col(),
            col("Selector", doc(spec, "selector"), priority=1),
        ]
    if resource == "leases":
        return [
            name_col(),
            col("Holder", doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
            age_col(),
        ]
    if resource == "certificatesigningrequests":
        spec = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec"
        return [
            name_col(),
            age_col(),
            col("SignerName", doc(spec, "signerName")),
            col("Requestor", doc(spec, "username")),
            col("RequestedDuration", doc(spec, "expirationSeconds")),
            col("Condition", doc("io.k8s.api.certificates.v1.CertificateSigningRequestStatus", "conditions")),
        ]
    return [name_col(), age_col()]


# ---------------------------------------------------------------------------------------------
# Pods


def _terminated_reason(term: Obj, prefix: str) -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _restartable(container: Obj | None) -> bool:
    return container is not None and is_sidecar(container)


def _later(current: datetime | None, value: Any) -> datetime | None:
    ts = parse_time(value if isinstance(value, str) else None)
    if ts is None:
        return current
    return ts if current is None or ts > current else current


def _condition_true(pod: Obj, type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True" for c in items_at(pod, "status", "conditions")
    )


def _pod_summary(pod: Obj) -> tuple[str, int, int, int, datetime | None]:
    """(reason, ready, total, restarts, last restart time) exactly as printPod computes them."""
    spec = obj_at(pod, "spec")
    status = obj_at(pod, "status")
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in items_at(status, "conditions"):
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = {c.get("name"): c for c in items_at(spec, "initContainers")}
    total = len(items_at(spec, "containers")) + sum(1 for c in init_specs.values() if _restartable(c))
    ready = restarts = sidecar_restarts = 0
    last: datetime | None = None
    sidecar_last: datetime | None = None

    initializing = False
    n_init = len(items_at(spec, "initContainers"))
    for i, cs in enumerate(items_at(status, "initContainerStatuses")):
        restarts += int(cs.get("restartCount") or 0)
        last = _later(last, get(cs, "lastState", "terminated", "finishedAt"))
        sidecar = _restartable(init_specs.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            sidecar_last = _later(sidecar_last, get(cs, "lastState", "terminated", "finishedAt"))
        state = obj_at(cs, "state")
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        if sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{n_init}"
        initializing = True
        break

    if not initializing or _condition_true(pod, "Initialized"):
        restarts, last = sidecar_restarts, sidecar_last
        has_running = False
        error_reason = ""
        for cs in reversed(items_at(status, "containerStatuses")):
            restarts += int(cs.get("restartCount") or 0)
            last = _later(last, get(cs, "lastState", "terminated", "finishedAt"))
            state = obj_at(cs, "state")
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None:
                reason = _terminated_reason(term, "")
                if term.get("exitCode", 0) != 0:
                    error_reason = reason
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        # "Completed" (the first container exited 0) gives way to Running when a container still
        # runs and the pod is Ready, else to the reason of the first container that failed.
        if reason == "Completed":
            if has_running and _condition_true(pod, "Ready"):
                reason = "Running"
            elif error_reason:
                reason = error_reason
            elif has_running:
                reason = "NotReady"

    if get(pod, "metadata", "deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return reason, ready, total, restarts, last


def pod_status_reason(pod: Obj) -> str:
    """What kubectl's STATUS column shows for pod (Running, ContainerCreating, Init:0/1, ...)."""
    return _pod_summary(pod)[0]


def _pod_row(pod: Obj, now: datetime) -> tuple[list[Any], list[Obj]]:
    reason, ready, total, restarts, last = _pod_summary(pod)
    restarts_cell = str(restarts)
    if restarts and last is not None:
        restarts_cell = f"{restarts} ({human_duration(now - last)} ago)"
    spec, status = obj_at(pod, "spec"), obj_at(pod, "status")
    ips = items_at(status, "podIPs")
    pod_ip = (ips[0].get("ip") if ips else "") or "<none>"
    gates = items_at(spec, "readinessGates")
    gates_cell = "<none>"
    if gates:
        conds = {c.get("type"): c.get("status") for c in items_at(status, "conditions")}
        true = sum(1 for g in gates if conds.get(g.get("conditionType")) == "True")
        gates_cell = f"{true}/{len(gates)}"
    cells = [
        get(pod, "metadata", "name") or "",
        f"{ready}/{total}",
        reason,
        restarts_cell,
        since(get(pod, "metadata", "creationTimestamp"), now),
        pod_ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_cell,
    ]
    conditions: list[Obj] = []
    if status.get("phase") == "Succeeded":
        conditions = [_row_completed("Succeeded", "The pod has completed successfully.")]
    elif status.get("phase") == "Failed":
        conditions = [_row_completed("Failed", "The pod failed.")]
    return cells, conditions


def _row_completed(reason: str, message: str) -> Obj:
    return {"type": "Completed", "status": "True", "reason": reason, "message": message}


# ---------------------------------------------------------------------------------------------
# Other kinds


def _node_roles(node: Obj) -> list[str]:
    roles = set()
    for key, value in obj_at(node, "metadata", "labels").items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key[len("node-role.kubernetes.io/") :]
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return sorted(roles)


def _node_address(node: Obj, type_: str) -> str:
    for addr in items_at(node, "status", "addresses"):
        if addr.get("type") == type_:
            return str(addr.get("address", ""))
    return "<none>"


def _node_cells(node: Obj, now: datetime) -> list[Any]:
    conds = {c.get("type"): c for c in items_at(node, "status", "conditions")}
    status = []
    if "Ready" in conds:
        status.append("Ready" if conds["Ready"].get("status") == "True" else "NotReady")
    if not status:
        status.append("Unknown")
    if get(node, "spec", "unschedulable"):
        status.append("SchedulingDisabled")
    info = obj_at(node, "status", "nodeInfo")
    kernel = info.get("kernelVersion") or "<unknown>"
    if info.get("architecture"):  # printNode appends the architecture to the kernel version
        kernel += f" ({info['architecture']})"
    return [
        get(node, "metadata", "name") or "",
        ",".join(status),
        ",".join(_node_roles(node)) or "<none>",
        since(get(node, "metadata", "creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        kernel,
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _event_cells(ev: Obj, now: datetime) -> list[Any]:
    first = (
        since(ev.get("firstTimestamp"), now) if ev.get("firstTimestamp") else since(ev.get("eventTime"), now)
    )
    last = since(ev.get("lastTimestamp"), now) if ev.get("lastTimestamp") else first
    count = ev.get("count") or 0
    series = ev.get("series")
    if series:
        last = since(series.get("lastObservedTime"), now)
        count = series.get("count") or 0
    elif count == 0:
        count = 1
    involved = obj_at(ev, "involvedObject")
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = obj_at(ev, "source")
    component = source.get("component") or ev.get("reportingComponent") or ""
    instance = source.get("host") or ev.get("reportingInstance") or ""
    return [
        last,
        ev.get("type", ""),
        ev.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component,
        str(ev.get("message", "")).strip(),
        first,
        int(count),
        get(ev, "metadata", "name") or "",
    ]


def _service_external_ip(svc: Obj) -> str:
    spec = obj_at(svc, "spec")
    svc_type = spec.get("type") or "ClusterIP"
    external = spec.get("externalIPs") or []
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(str(ip) for ip in external) if external else "<none>"
    if svc_type == "LoadBalancer":
        ingress = items_at(svc, "status", "loadBalancer", "ingress")
        ips = [str(i.get("ip") or i.get("hostname")) for i in ingress if i.get("ip") or i.get("hostname")]
        ips += [str(ip) for ip in external]
        return ",".join(ips) if ips else "<pending>"
    if svc_type == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _service_cells(svc: Obj, now: datetime) -> list[Any]:
    spec = obj_at(svc, "spec")
    ports = []
    for p in items_at(spec, "ports"):
        proto = p.get("protocol", "TCP")
        ports.append(
            f"{p.get('port')}:{p['nodePort']}/{proto}" if p.get("nodePort") else f"{p.get('port')}/{proto}"
        )
    selector = obj_at(spec, "selector")
    return [
        get(svc, "metadata", "name") or "",
        spec.get("type") or "ClusterIP",
        spec.get("clusterIP") or "<none>",
        _service_external_ip(svc),
        ",".join(ports) or "<none>",
        since(get(svc, "metadata", "creationTimestamp"), now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


def _csr_cells(csr: Obj, now: datetime) -> list[Any]:
    spec = obj_at(csr, "spec")
    types = {c.get("type") for c in items_at(csr, "status", "conditions")}
    condition = "Denied" if "Denied" in types else ("Approved" if "Approved" in types else "Pending")
    if "Failed" in types:
        condition += ",Failed"
    if get(csr, "status", "certificate"):
        condition += ",Issued"
    seconds = spec.get("expirationSeconds")
    return [
        get(csr, "metadata", "name") or "",
        since(get(csr, "metadata", "creationTimestamp"), now),
        spec.get("signerName") or "<none>",
        spec.get("username", ""),
        "<none>" if seconds is None else human_duration(timedelta(seconds=int(seconds))),
        condition,
    ]


def _pod_template_cells(template: Obj, now: datetime) -> list[Any]:
    """printPodTemplate (pkg/printers/internalversion/printers.go): no age column."""
    pod = obj_at(template, "template")
    containers = [c for c in get(pod, "spec", "containers") or [] if isinstance(c, dict)]
    labels = get(pod, "metadata", "labels") or {}
    return [
        get(template, "metadata", "name") or "",
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>",
    ]


def _simple(*extra: Callable[[Obj], Any]) -> Callable[[Obj, datetime], list[Any]]:
    def cells(obj: Obj, now: datetime) -> list[Any]:
        age = since(get(obj, "metadata", "creationTimestamp"), now)
        return [get(obj, "metadata", "name") or "", *(f(obj) for f in extra), age]

    return cells


_CELLS: dict[str, Callable[[Obj, datetime], list[Any]]] = {
    "nodes": _node_cells,
    "events": _event_cells,
    "namespaces": _simple(lambda o: get(o, "status", "phase") or ""),
    "configmaps": _simple(lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
    "secrets": _simple(lambda o: o.get("type", ""), lambda o: len(o.get("data") or {})),
    "services": _service_cells,
    "leases": _simple(lambda o: get(o, "spec", "holderIdentity") or ""),
    "podtemplates": _pod_template_cells,
    "certificatesigningrequests": _csr_cells,
    **tables_dra.CELLS,
}


# ---------------------------------------------------------------------------------------------
# Tables


def _row_object(obj: Obj, include_object: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj_at(obj, "metadata"),
    }


def to_table(
    resource: str,
    objs: list[Obj],
    *,
    list_meta: Obj,
    include_object: str = "Metadata",
    now: datetime,
    column_definitions: bool = True,
) -> Obj:
    """A meta.k8s.io/v1 Table of objs (all of one resource) with upstream's columns and cells.

    list_meta becomes the Table's metadata (carry `resourceVersion`: `kubectl get -w` watches from
    it). include_object is the `includeObject` query parameter: None, Metadata (default: rows carry
    PartialObjectMetadata) or Object. column_definitions=False leaves the definitions empty, as a
    watch may after its first event. resource is the plural, with or without its group
    ("leases" or "leases.coordination.k8s.io")."""
    resource = resource.split(".", 1)[0]
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    rows = []
    for obj in objs:
        conditions: list[Obj] = []
        if resource == "pods":
            cells, conditions = _pod_row(obj, now)
        else:
            cells = _CELLS.get(resource, _simple())(obj, now)
        row: Obj = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row_object = _row_object(obj, include_object)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
        "columnDefinitions": list(_columns(resource)) if column_definitions else [],
        "rows": rows,
    }
