"""The sandbox scheduler's decisions as pure functions over pod and node dicts.

What lives here: which pods wait for scheduling, the default profile's filters in upstream
order (NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit; upstream
`pkg/scheduler/framework/plugins/*`), the choice among feasible nodes (least allocated), and
the `FitError` message (`pkg/scheduler/framework/types.go`, `FitError.Error`).
Must not: do I/O; the shell in `scheduler.py` lists, binds and records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from vk_common.objects import is_sidecar
from vk_sandbox.api.pod_requests import pod_requests
from vk_sandbox.api.quantity import parse_quantity

SCHEDULER_NAME = "default-scheduler"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"

# What reading a malformed stored object (a field of the wrong type) raises: the controllers skip
# that object and go on with the others, as the real ones skip an object they cannot decode.
MALFORMED = (AttributeError, KeyError, TypeError, ValueError)

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_CPU = "Insufficient cpu"
REASON_MEMORY = "Insufficient memory"
REASON_PODS = "Too many pods"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
_RESOLVABLE_BY_PREEMPTION = {REASON_CPU, REASON_MEMORY, REASON_PODS, REASON_PORTS}
_ANY_IP = "0.0.0.0"
NO_NODES_MESSAGE = "no nodes available to schedule pods"


def waits_for_scheduling(pod: dict[str, Any]) -> bool:
    """A pod this scheduler must place: unbound, not terminating, not finished, not gated, ours.

    Pods with `spec.schedulingGates` wait (the SchedulingGates PreEnqueue plugin); their
    `SchedulingGated` condition comes from the API server at creation, not from here.
    """
    spec = pod.get("spec") or {}
    if spec.get("nodeName") or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if spec.get("schedulingGates"):
        return False
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return spec.get("schedulerName") in (None, "", SCHEDULER_NAME)


def counts_against_node(pod: dict[str, Any]) -> bool:
    """Bound pods that still hold resources (the scheduler cache drops terminal pods)."""
    return bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def host_ports(pod: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(protocol, hostPort, hostIP) the pod's containers and sidecars claim on their node."""
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or [])
    containers += [c for c in spec.get("initContainers") or [] if is_sidecar(c)]
    return [
        (port.get("protocol") or "TCP", int(port["hostPort"]), port.get("hostIP") or _ANY_IP)
        for c in containers
        for port in c.get("ports") or []
        if port.get("hostPort")
    ]


def _ports_conflict(wanted: list[tuple[str, int, str]], used: list[tuple[str, int, str]]) -> bool:
    """NodePorts: the same protocol and port on overlapping addresses (0.0.0.0 overlaps every one)."""
    for protocol, port, ip in wanted:
        for used_protocol, used_port, used_ip in used:
            if (protocol, port) == (used_protocol, used_port) and (ip == used_ip or _ANY_IP in (ip, used_ip)):
                return True
    return False


@dataclass
class NodeInfo:
    """A node with what the pods already bound to it request."""

    node: dict[str, Any]
    cpu: Fraction = Fraction(0)
    memory: Fraction = Fraction(0)
    pods: int = 0
    host_ports: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.node["metadata"]["name"])

    def add(self, pod: dict[str, Any]) -> None:
        cpu, memory = pod_requests(pod)
        self.cpu += cpu
        self.memory += memory
        self.pods += 1
        self.host_ports += host_ports(pod)

    def allocatable(self, resource: str) -> Fraction | None:
        """Allocatable (falling back to capacity); None when the node publishes neither, which
        the sandbox treats as unlimited so hand-made test nodes stay usable."""
        status = self.node.get("status") or {}
        for key in ("allocatable", "capacity"):
            value = (status.get(key) or {}).get(resource)
            if value is not None:
                return parse_quantity(value)
        return None


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """`Toleration.ToleratesTaint` (staging/src/k8s.io/api/core/v1/toleration.go)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def _effective_taints(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The node's taints, plus the not-ready taint the real node lifecycle controller would have
    added to a node whose Ready condition is not True and that carries no such taint yet."""
    taints = list((node.get("spec") or {}).get("taints") or [])
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if (ready is None or ready.get("status") != "True") and not any(
        t.get("key") in (NOT_READY_TAINT, UNREACHABLE_TAINT) for t in taints
    ):
        taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
    return taints


def untolerated_taint(pod: dict[str, Any], node: dict[str, Any]) -> dict[str, Any] | None:
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in _effective_taints(node):
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue  # PreferNoSchedule only affects scoring
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _requirement_matches(req: dict[str, Any], value: str | None) -> bool:
    operator = req.get("operator")
    values = req.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        try:
            have, want = int(value or ""), int(values[0])
        except (ValueError, IndexError):
            return False
        return have > want if operator == "Gt" else have < want
    return False


def _term_matches(term: dict[str, Any], node: dict[str, Any]) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no objects
    labels = (node.get("metadata") or {}).get("labels") or {}
    for req in expressions:
        if not _requirement_matches(req, labels.get(req.get("key"))):
            return False
    for req in fields:
        value = (node.get("metadata") or {}).get("name") if req.get("key") == "metadata.name" else None
        if not _requirement_matches(req, value):
            return False
    return True


def matches_node_selector_and_affinity(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        return True
    return any(_term_matches(term, node) for term in terms)


def _taint_reason(taint: dict[str, Any]) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}"


def filter_reasons(pod: dict[str, Any], info: NodeInfo) -> list[str]:
    """Why `pod` does not fit `info`'s node (empty when it fits), first failing filter only."""
    node = info.node
    if (node.get("spec") or {}).get("unschedulable") and not any(
        tolerates(t, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
        for t in (pod.get("spec") or {}).get("tolerations") or []
    ):
        return [REASON_UNSCHEDULABLE]
    taint = untolerated_taint(pod, node)
    if taint is not None:
        return [_taint_reason(taint)]
    if not matches_node_selector_and_affinity(pod, node):
        return [REASON_AFFINITY]
    if _ports_conflict(host_ports(pod), info.host_ports):
        return [REASON_PORTS]
    reasons = []
    max_pods = info.allocatable("pods")
    if max_pods is not None and info.pods + 1 > max_pods:
        reasons.append(REASON_PODS)
    cpu, memory = pod_requests(pod)
    allocatable_cpu = info.allocatable("cpu")
    if cpu > 0 and allocatable_cpu is not None and info.cpu + cpu > allocatable_cpu:
        reasons.append(REASON_CPU)
    allocatable_memory = info.allocatable("memory")
    if memory > 0 and allocatable_memory is not None and info.memory + memory > allocatable_memory:
        reasons.append(REASON_MEMORY)
    return reasons


def _histogram(reasons: Iterable[str]) -> str:
    return ", ".join(sorted(f"{count} {reason}" for reason, count in Counter(reasons).items()))


def fit_error_message(num_nodes: int, reasons_by_node: dict[str, list[str]]) -> str:
    """`0/N nodes are available: <histogram>. preemption: 0/N nodes are available: <histogram>.`

    The preemption part is what the default PostFilter reports when there is nothing to preempt:
    nodes failing only on resources have no lower-priority victims; the other reasons cannot be
    fixed by preemption at all.
    """
    if num_nodes == 0:
        return NO_NODES_MESSAGE
    filters = _histogram(r for reasons in reasons_by_node.values() for r in reasons)
    preemption = _histogram(
        "No preemption victims found for incoming pod"
        if set(reasons) <= _RESOLVABLE_BY_PREEMPTION
        else "Preemption is not helpful for scheduling"
        for reasons in reasons_by_node.values()
    )
    return (
        f"0/{num_nodes} nodes are available: {filters}. "
        f"preemption: 0/{num_nodes} nodes are available: {preemption}."
    )


def _score(pod: dict[str, Any], info: NodeInfo) -> tuple[Fraction, int, str]:
    """LeastAllocated-like: the node left with the most free cpu+memory share wins (lower is better)."""
    cpu, memory = pod_requests(pod)
    used = Fraction(0)
    for resource, amount in (("cpu", info.cpu + cpu), ("memory", info.memory + memory)):
        allocatable = info.allocatable(resource)
        if allocatable:
            used += amount / allocatable
    return used, info.pods, info.name


def choose_node(pod: dict[str, Any], infos: list[NodeInfo]) -> tuple[NodeInfo | None, str]:
    """The node to bind `pod` to, or None and the FitError message. A malformed node is left out."""
    feasible: list[NodeInfo] = []
    reasons_by_node: dict[str, list[str]] = {}
    for info in infos:
        try:
            reasons = filter_reasons(pod, info)
        except MALFORMED:
            continue  # a node that cannot be read fits nothing
        if reasons:
            reasons_by_node[info.name] = reasons
        else:
            feasible.append(info)
    if feasible:
        return min(feasible, key=lambda info: _score(pod, info)), ""
    return None, fit_error_message(len(infos), reasons_by_node)
