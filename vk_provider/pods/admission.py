"""The kubelet's admission of a pod to its node: what rejects it before anything runs.

What lives here: `admit` (and `needs_other_pods`: whether it reads the other pods), the checks
of the kubelet's predicateAdmitHandler (pkg/kubelet/lifecycle/predicate.go) that apply to this
node, in upstream order: the pod's `kubernetes.io/os` label against the node's
(rejectPodAdmissionBasedOnOSSelector), `spec.os.name` against the node's OS
(rejectPodAdmissionBasedOnOSField), then the node affinity the scheduler also checks
(`spec.nodeSelector` and requiredDuringSchedulingIgnoredDuringExecution, as
k8s.io/component-helpers/scheduling/corev1/nodeaffinity matches them) against the Node object,
and the host ports the pod asks for against those of the node's other admitted pods
(pkg/scheduler/framework/plugins/nodeports, as scheduler.AdmissionCheck runs it).
A rejection is the (reason, message) pair of the kubelet's rejectPod: its Event's reason and
message; the pod's status message is `sysctls.POD_REJECTED` + message.
Must not: touch the runtime, the apiserver or the event loop; keep state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vk_common.objects import meta, spec

NODE_OS = "linux"  # the OS of every container this provider runs (runtime.GOOS of a Linux kubelet)
OS_LABEL = "kubernetes.io/os"
OS_SELECTOR_MISMATCH = (
    "PodOSSelectorNodeLabelDoesNotMatch",
    "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
)
OS_NOT_SUPPORTED = ("PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")
# pkg/scheduler/framework/plugins/nodeaffinity (ErrReasonPod), as PredicateFailureError formats it
NODE_AFFINITY = (
    "NodeAffinity",
    "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
)


# pkg/scheduler/framework/plugins/nodeports (Name, ErrReason)
HOST_PORTS = (
    "NodePorts",
    "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
)
ANY_IP = "0.0.0.0"


def host_ports(pod: Mapping[str, Any]) -> set[tuple[str, str, int]]:
    """(protocol, hostIP, hostPort) of each container port with a hostPort, init containers too
    (schedutil.GetHostPorts); an empty hostIP is 0.0.0.0, as HostPortInfo.sanitize makes it."""
    found: set[tuple[str, str, int]] = set()
    for container in [*(spec(pod).get("initContainers") or []), *(spec(pod).get("containers") or [])]:
        for port in container.get("ports") or []:
            if int(port.get("hostPort") or 0) > 0:
                protocol = str(port.get("protocol") or "TCP")
                found.add((protocol, str(port.get("hostIP") or ANY_IP), int(port["hostPort"])))
    return found


def _ports_conflict(wanted: set[tuple[str, str, int]], in_use: set[tuple[str, str, int]]) -> bool:
    """HostPortInfo.CheckConflict: the same protocol and port on the same IP, or on 0.0.0.0 on
    either side."""
    return any(
        ip == used_ip or ANY_IP in (ip, used_ip)
        for protocol, ip, port in wanted
        for used_protocol, used_ip, used_port in in_use
        if (protocol, port) == (used_protocol, used_port)
    )


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _requirement(req: Mapping[str, Any], value: str | None) -> bool:
    """One NodeSelectorRequirement against the value of its key (None: the node has no such key)."""
    op, values = req.get("operator"), [str(v) for v in req.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        have, bound = _int(value), _int(values[0])
        if have is None or bound is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term(term: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches nothing
    if not all(_requirement(r, labels.get(str(r.get("key")))) for r in expressions):
        return False
    return all(_requirement(r, name if r.get("key") == "metadata.name" else None) for r in fields)


def _terms(pod: Mapping[str, Any]) -> Sequence[Mapping[str, Any]] | None:
    """The required node selector terms (None: the pod has none)."""
    required = ((spec(pod).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return None if required is None else list(required.get("nodeSelectorTerms") or [])


def matches_node(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the pod's nodeSelector and required node affinity select `node`."""
    labels: Mapping[str, str] = meta(node).get("labels") or {}
    selector: Mapping[str, str] = spec(pod).get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    terms = _terms(pod)
    name = str(meta(node).get("name") or "")
    return terms is None or any(_term(t, labels, name) for t in terms)


def needs_other_pods(pod: Mapping[str, Any]) -> bool:
    """Whether `admit` looks at the node's other pods for `pod` (its host ports): a node of 500
    pods need not list them for each new pod that asks for none."""
    return bool(host_ports(pod))


def admit(
    pod: Mapping[str, Any], node: Mapping[str, Any], others: Sequence[Mapping[str, Any]] = ()
) -> tuple[str, str] | None:
    """The kubelet's rejection of `pod` on `node`, beside the node's other admitted pods
    `others`, as (reason, message); None: admitted.

    An empty `node` (not registered yet) skips the node affinity check: nothing to match.
    """
    # The kubelet takes its own OS as the node's label whatever the Node object says.
    pod_os = (meta(pod).get("labels") or {}).get(OS_LABEL)
    if pod_os is not None and pod_os != NODE_OS:
        return OS_SELECTOR_MISMATCH
    os_field = spec(pod).get("os")
    if isinstance(os_field, Mapping) and os_field.get("name") != NODE_OS:
        return OS_NOT_SUPPORTED
    if node and not matches_node(pod, node):
        return NODE_AFFINITY
    wanted = host_ports(pod)
    if wanted and _ports_conflict(wanted, {p for other in others for p in host_ports(other)}):
        return HOST_PORTS
    return None
