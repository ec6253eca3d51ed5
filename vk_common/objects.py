"""The shared vocabulary of Kubernetes objects in their JSON shape: accessors and the kubelet's pod rules.

What lives here: the metadata / spec accessors (`meta`, `annotations_of`, `spec`, `uid`,
`full_name`, `format_pod` (the kubelet's format.Pod), `pod_containers`: every container with its
field path), `copy_json` (the deep copy of a JSON-shaped value, several times cheaper than
copy.deepcopy), the config annotations and the
static / mirror pod tests (`is_static`, `is_mirror`), the restart rules (`restart_policy` with its
default, `is_sidecar`, the one `should_restart` over `container_should_restart`), the apiserver's
`default_pull_policy`, and the RFC 3339 helpers: `parse_time`, and one formatter a precision
(`format_time` for metav1.Time, `format_time_micro` for metav1.MicroTime, `format_time_nano` for
RFC3339Nano).
Every part of the provider, and the sandbox where it needs the same rule (sidecars in the
scheduler's requests and the Tables, the default pull policy, the times it writes), asks these
questions here, so each has one answer.
Must not: import anything but the standard library (this is the ground floor), do I/O, read
the clock or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# pkg/kubelet/types/pod_update.go
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
API_SOURCE = "api"

DEFAULT_RESTART_POLICY = "Always"
PULL_ALWAYS = "Always"
PULL_IF_NOT_PRESENT = "IfNotPresent"

Obj = Mapping[str, Any]


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON-shaped value: dicts (and any other mapping, as a dict) and lists
    copied, a tuple as a tuple, scalars shared. No memo and no dispatch by type as
    copy.deepcopy has: a pod status copies in a third of its time."""
    kind = type(value)
    if kind is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if kind is list:
        return [copy_json(v) for v in value]
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    if isinstance(value, tuple):
        return tuple(copy_json(v) for v in value)
    return value


def meta(obj: Obj) -> Mapping[str, Any]:
    """The object's metadata ({} when missing or not a mapping)."""
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def annotations_of(obj: Obj) -> Mapping[str, Any]:
    value = meta(obj).get("annotations")
    return value if isinstance(value, Mapping) else {}


def spec(obj: Obj) -> Mapping[str, Any]:
    """The object's spec ({} when missing or not a mapping)."""
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def uid(obj: Obj) -> str:
    return str(meta(obj).get("uid") or "")


def full_name(obj: Obj) -> str:
    """`namespace/name` (namespace `default` when unset), the key static and mirror pods pair by."""
    m = meta(obj)
    return f"{m.get('namespace') or 'default'}/{m.get('name', '')}"


def format_pod(pod: Obj) -> str:
    """The kubelet's format.Pod (pkg/kubelet/util/format/pod.go): `name_namespace(uid)`."""
    m = meta(pod)
    return f"{m.get('name', '')}_{m.get('namespace', '')}({uid(pod)})"


def is_static(pod: Obj) -> bool:
    """A pod from a manifest file or URL: its config.source is set and is not the apiserver."""
    return annotations_of(pod).get(CONFIG_SOURCE_ANNOTATION) not in (None, API_SOURCE)


def is_mirror(pod: Obj) -> bool:
    """The apiserver's copy of a static pod (it carries the config.mirror annotation)."""
    return MIRROR_ANNOTATION in annotations_of(pod)


def is_deleting(pod: Obj) -> bool:
    """Whether the pod is being deleted (metadata.deletionTimestamp is set)."""
    return bool(meta(pod).get("deletionTimestamp"))


def restart_policy(pod: Obj) -> str:
    """spec.restartPolicy, `Always` when unset (the apiserver's default)."""
    return str(spec(pod).get("restartPolicy") or DEFAULT_RESTART_POLICY)


def pod_containers(pod: Obj) -> list[tuple[str, Mapping[str, Any]]]:
    """(field path, container) of the init, app, then ephemeral containers, e.g.
    (`spec.initContainers[0]`, {...})."""
    pod_spec = spec(pod)
    keys = ("initContainers", "containers", "ephemeralContainers")
    return [(f"spec.{key}[{i}]", c) for key in keys for i, c in enumerate(pod_spec.get(key) or [])]


def is_sidecar(container: Obj) -> bool:
    """A restartable init container (restartPolicy Always: podutil.IsRestartableInitContainer)."""
    return container.get("restartPolicy") == "Always"


RESTART_ALL_CONTAINERS = "RestartAllContainers"  # a restartPolicyRules action (KEP-5532)


def matching_restart_rule(container: Obj, exit_code: int) -> Obj | None:
    """The first of the container's restartPolicyRules whose exitCodes (In / NotIn) match.
    Upstream: pkg/api/v1/pod/util.go (FindMatchingContainerRestartRule)."""
    for rule in container.get("restartPolicyRules") or []:
        codes = rule.get("exitCodes") or {}
        matched = exit_code in (codes.get("values") or [])
        operator = codes.get("operator")
        if (operator == "In" and matched) or (operator == "NotIn" and not matched):
            found: Obj = rule
            return found
    return None


def all_containers_could_restart(pod: Obj) -> bool:
    """Whether an init or app container has a RestartAllContainers rule (AllContainersCouldRestart)."""
    s = spec(pod)
    return any(
        rule.get("action") == RESTART_ALL_CONTAINERS
        for c in [*(s.get("initContainers") or []), *(s.get("containers") or [])]
        for rule in c.get("restartPolicyRules") or []
    )


def container_should_restart(pod: Obj, container: Obj, exit_code: int) -> bool:
    """Whether a container that exited with `exit_code` runs again by its restart policy: the
    container's own restartPolicy (a sidecar's Always; ContainerRestartRules, on by default
    since 1.35) wins over the pod's, and a container with one first tries its
    restartPolicyRules in order: the first whose exitCodes (In / NotIn) match the exit code
    restarts it when its action is Restart or RestartAllContainers (the whole pod restarts in
    place then, which the pod's plan does first: kuberuntime/restart_all.py).
    Upstream: pkg/api/v1/pod/util.go (ContainerShouldRestart, FindMatchingContainerRestartRule).
    """
    if container.get("restartPolicy"):
        rule = matching_restart_rule(container, exit_code)
        if rule is not None and rule.get("action") in ("Restart", RESTART_ALL_CONTAINERS):
            return True
    policy = container.get("restartPolicy") or restart_policy(pod)
    if policy == "Never":
        return False
    if policy == "OnFailure":
        return exit_code != 0
    return True


def should_restart(pod: Obj, container: Obj, exit_code: int | None) -> bool:
    """Whether a container that is not running is to run (again): the kubelet's rule.

    `exit_code` is the exit code of its latest run, None when it has no run that finished (it
    never ran, was only created, or its state is unknown: those always start). A pod being
    deleted restarts nothing; otherwise `container_should_restart` decides.
    Upstream: pkg/kubelet/container/helpers.go (ShouldContainerBeRestarted).
    """
    if is_deleting(pod):
        return False
    return exit_code is None or container_should_restart(pod, container, exit_code)


def default_pull_policy(image: str) -> str:
    """The apiserver's default imagePullPolicy: Always when the reference's tag is `latest`.

    A reference with neither tag nor digest gets the tag `latest`; one with a digest and no
    tag has none; one that does not parse (empty, upper case in the repository) gets
    IfNotPresent. Upstream: pkg/apis/core/v1/defaults.go (SetDefaults_Container) and
    pkg/util/parsers (ParseImageName).
    """
    name, _, digest = image.partition("@")
    head, slash, last = name.rpartition("/")
    repository, colon, tag = last.partition(":")
    if not colon:
        tag = ""
    if not repository or repository != repository.lower() or (slash and not head):
        return PULL_IF_NOT_PRESENT
    if not tag and not digest:
        tag = "latest"
    return PULL_ALWAYS if tag == "latest" else PULL_IF_NOT_PRESENT


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (`Z` or an offset, any fraction) as an aware datetime (naive: UTC);
    None when `value` is empty or does not parse."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _utc(when: datetime) -> datetime:
    return when.astimezone(UTC) if when.tzinfo is not None else when.replace(tzinfo=UTC)


def format_time(when: datetime) -> str:
    """metav1.Time: RFC 3339 at whole seconds in UTC with a `Z` (naive = UTC)."""
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_time_micro(when: datetime) -> str:
    """metav1.MicroTime: RFC 3339 with all six fraction digits in UTC with a `Z` (naive = UTC)."""
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_time_nano(when: datetime) -> str:
    """Go's RFC3339Nano in UTC: the fraction without trailing zeros, none at whole seconds."""
    utc = _utc(when)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += "." + f"{utc.microsecond:06d}".rstrip("0")
    return text + "Z"
