"""Pod specs the apiserver accepts but the node cannot run, each with what the user must be shown.

What lives here: `BAD_PODS`, 50 `BadPod`s (a spec, and where its refusal shows: the pod `Failed`
with a status reason, a container waiting with a reason, or only a `FailedMount` Event while the
pod waits); `unreported`, which says what the API does not show yet of one of them (pure, over
the pod and its Events); `CONFIGMAP` and `SECRET`, the objects the missing-key cases read
(`configmap_and_secret`). The pod cases are the "accepted but unrunnable" set of the real
kube-apiserver's validation (docs/pod-spec-support.md lists what the node refuses); what they say
is in the kubelet's words. Must not: talk to an API server or Docker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tests.support.images import BUSYBOX_IMAGE

Shows = Literal["pod", "container", "mount"]
CONFIGMAP = "bad-input-cm"
SECRET = "bad-input-secret"
ABSENT = "no-such-object"
_ABSENT_IMAGE = "vk-test/not-built-anywhere:1"
_FORBIDDEN = "Forbidden"
_CONFIG_ERROR = "CreateContainerConfigError"
_PULL = ("ErrImagePull", "ImagePullBackOff")


@dataclass(frozen=True)
class BadPod:
    """A pod the node cannot run. `shows` where: "pod" (phase Failed, status.reason the first of
    `reasons`), "container" (a container waits with one of `reasons`; the first one's message
    carries `says`, a later one is the back-off that follows it) or "mount" (the pod waits in
    ContainerCreating). Always a Warning Event `event` whose message carries `says`."""

    name: str
    spec: dict[str, Any]
    shows: Shows
    reasons: tuple[str, ...]
    event: str
    says: str
    labels: dict[str, str] | None = None
    phase: str = "Pending"  # the phase while it is refused ("pod": Failed)


def _main(**extra: Any) -> dict[str, Any]:
    return {"name": "main", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"], **extra}


def _spec(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"containers": list(containers) or [_main()], "terminationGracePeriodSeconds": 2, **spec}


def _with_volume(volume: dict[str, Any], **mount: Any) -> dict[str, Any]:
    mounts = [{"name": volume["name"], "mountPath": "/v", **mount}]
    return _spec(_main(volumeMounts=mounts), volumes=[volume])


def _refused(
    name: str, spec: dict[str, Any], says: str, reason: str = _FORBIDDEN, event: str = "Failed"
) -> BadPod:
    return BadPod(name, spec, "pod", (reason,), event, says)


def _config(name: str, container: dict[str, Any], says: str, **spec: Any) -> BadPod:
    return BadPod(name, _spec(container, **spec), "container", (_CONFIG_ERROR,), "Failed", says)


def _mount(name: str, volume: dict[str, Any], says: str) -> BadPod:
    return BadPod(name, _with_volume(volume), "mount", ("ContainerCreating",), "FailedMount", says)


def _env(source: dict[str, Any]) -> dict[str, Any]:
    return _main(env=[{"name": "X", "valueFrom": source}])


def _cap(name: str) -> BadPod:
    security = {"capabilities": {"add": [name]}}
    return _refused(
        f"cap-{name.lower().replace('_', '-')}",
        _spec(_main(securityContext=security)),
        f"capability {name} is not allowed on this node (docker.allow.capabilities)",
    )


def _unsupported_volume(kind: str, source: dict[str, Any]) -> BadPod:
    return _mount(
        f"vol-{kind.lower()}",
        {"name": "v", kind: source},
        f"{kind} volumes are not supported on this node: it has no volume plugin for them",
    )


def _sysctl(name: str, value: str) -> BadPod:
    return _refused(
        f"sysctl-{name.replace('.', '-').replace('_', '-')}",
        _spec(securityContext={"sysctls": [{"name": name, "value": value}]}),
        f'forbidden sysctl: "{name}" not allowlisted',
        "SysctlForbidden",
        "SysctlForbidden",
    )


def _never(name: str, image: str, *, init: bool = False) -> BadPod:
    container = _main(image=image, imagePullPolicy="Never")
    spec = _spec(_main(), initContainers=[{**container, "name": "init"}]) if init else _spec(container)
    says = f'Container image "{image}" is not present with pull policy of Never'
    return BadPod(name, spec, "container", ("ErrImageNeverPull",), "ErrImageNeverPull", says)


_NOT_ALLOWED = "are not allowed on this node"
_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["mars"]}]}
            ]
        }
    }
}
_CLAIM = [{"name": "gpu", "resourceClaimName": "gpu"}]
_PVC = {"name": "v", "persistentVolumeClaim": {"claimName": ABSENT}}

BAD_PODS: tuple[BadPod, ...] = (
    # The pod is refused (phase Failed): allowances of docker.allow.*, what the engine cannot do.
    _refused(
        "host-network",
        _spec(hostNetwork=True),
        f"spec.hostNetwork: pods using the host's network namespace {_NOT_ALLOWED}",
    ),
    _refused(
        "host-pid", _spec(hostPID=True), f"spec.hostPID: pods using the host's PID namespace {_NOT_ALLOWED}"
    ),
    _refused(
        "host-ipc", _spec(hostIPC=True), f"spec.hostIPC: pods using the host's IPC namespace {_NOT_ALLOWED}"
    ),
    _refused(
        "privileged",
        _spec(_main(securityContext={"privileged": True})),
        f"spec.containers[0].securityContext.privileged: privileged containers {_NOT_ALLOWED}",
    ),
    _refused(
        "privileged-init",
        _spec(initContainers=[_main(name="init", command=["true"], securityContext={"privileged": True})]),
        f"spec.initContainers[0].securityContext.privileged: privileged containers {_NOT_ALLOWED}",
    ),
    _cap("NET_ADMIN"),
    _cap("SYS_ADMIN"),
    _refused(
        "host-path",
        _with_volume({"name": "v", "hostPath": {"path": "/etc"}}),
        f"spec.volumes[0].hostPath: hostPath volumes {_NOT_ALLOWED}",
    ),
    _refused(
        "seccomp-unconfined",
        _spec(securityContext={"seccompProfile": {"type": "Unconfined"}}),
        f"seccompProfile: Unconfined seccomp profiles {_NOT_ALLOWED}",
    ),
    _refused(
        "seccomp-localhost",
        _spec(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}),
        f"seccompProfile: Localhost seccomp profiles {_NOT_ALLOWED}",
    ),
    _refused(
        "resource-claims",
        _spec(_main(resources={"claims": [{"name": "gpu"}]}), resourceClaims=_CLAIM),
        "spec.resourceClaims: resource claims are not supported on this node",
    ),
    _refused(
        "propagation-emptydir",
        _with_volume({"name": "v", "emptyDir": {}}, mountPropagation="HostToContainer"),
        "mountPropagation: HostToContainer propagation is supported on hostPath volumes only on this node",
    ),
    # The kubelet's admission (Pod was rejected: ...).
    _sysctl("kernel.msgmax", "65536"),
    _sysctl("kernel.sem", "250 32000 100 128"),
    _refused(
        "os-windows",
        _spec(os={"name": "windows"}),
        "Failed to admit pod as the OS field doesn't match node OS",
        "PodOSNotSupported",
        "PodOSNotSupported",
    ),
    BadPod(
        "os-label",
        _spec(),
        "pod",
        ("PodOSSelectorNodeLabelDoesNotMatch",),
        "PodOSSelectorNodeLabelDoesNotMatch",
        "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
        labels={"kubernetes.io/os": "windows"},
    ),
    _refused(
        "node-selector",
        _spec(nodeSelector={"disk": "ssd"}),
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
        "NodeAffinity",
        "NodeAffinity",
    ),
    _refused(
        "node-affinity",
        _spec(affinity=_AFFINITY),
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
        "NodeAffinity",
        "NodeAffinity",
    ),
    _refused(
        "groups-strict",
        _spec(securityContext={"supplementalGroupsPolicy": "Strict"}),
        "SupplementalGroupsPolicy=Strict is not supported in this node",
        "SupplementalGroupsPolicyNotSupported",
        "SupplementalGroupsPolicyNotSupported",
    ),
    # A container is refused (CreateContainerConfigError), tried again on every sync.
    _config(
        "env-configmap",
        _env({"configMapKeyRef": {"name": ABSENT, "key": "a"}}),
        f'configmap "{ABSENT}" not found',
    ),
    _config(
        "env-secret", _env({"secretKeyRef": {"name": ABSENT, "key": "a"}}), f'secret "{ABSENT}" not found'
    ),
    _config(
        "env-configmap-key",
        _env({"configMapKeyRef": {"name": CONFIGMAP, "key": "b"}}),
        f"couldn't find key b in ConfigMap default/{CONFIGMAP}",
    ),
    _config(
        "env-secret-key",
        _env({"secretKeyRef": {"name": SECRET, "key": "b"}}),
        f"couldn't find key b in Secret default/{SECRET}",
    ),
    _config(
        "envfrom-configmap",
        _main(envFrom=[{"configMapRef": {"name": ABSENT}}]),
        f'configmap "{ABSENT}" not found',
    ),
    _config(
        "envfrom-secret", _main(envFrom=[{"secretRef": {"name": ABSENT}}]), f'secret "{ABSENT}" not found'
    ),
    BadPod(
        "init-env-secret",
        _spec(initContainers=[{**_env({"secretKeyRef": {"name": ABSENT, "key": "a"}}), "name": "init"}]),
        "container",
        (_CONFIG_ERROR,),
        "Failed",
        f'secret "{ABSENT}" not found',
    ),
    _config(
        "non-root-image",
        _main(securityContext={"runAsNonRoot": True}),
        "container has runAsNonRoot and image will run as root",
    ),
    _config(
        "non-root-uid-0",
        _main(securityContext={"runAsNonRoot": True, "runAsUser": 0}),
        "container's runAsUser breaks non-root policy",
    ),
    BadPod(
        "subpath-memory-emptydir",
        _with_volume({"name": "v", "emptyDir": {"medium": "Memory"}}, subPath="x"),
        "container",
        (_CONFIG_ERROR,),
        "Failed",
        "subPath on emptyDir volume 'v' needs its Docker volume's directory on this host",
    ),
    BadPod(
        "subpathexpr-unset",
        _with_volume({"name": "v", "downwardAPI": {"items": []}}, subPathExpr="$(NOT_SET)"),
        "container",
        (_CONFIG_ERROR,),
        "Failed",
        "missing value for NOT_SET",
    ),
    BadPod(
        "recursive-read-only",
        _with_volume({"name": "v", "emptyDir": {}}, readOnly=True, recursiveReadOnly="Enabled"),
        "container",
        (_CONFIG_ERROR,),
        "Failed",
        'volume "v" requested recursive read-only mode, but it is not supported by the runtime',
    ),
    # Images that cannot be had.
    _never("image-never", _ABSENT_IMAGE),
    _never("image-never-init", _ABSENT_IMAGE, init=True),
    BadPod(
        "image-unreachable",
        _spec(_main(image="127.0.0.1:1/absent:1")),
        "container",
        _PULL,
        "Failed",
        'Failed to pull image "127.0.0.1:1/absent:1"',
    ),
    BadPod(
        "image-invalid-name",
        _spec(_main(image="Upper/Case:1")),
        "container",
        ("InvalidImageName",),
        "InspectFailed",
        'Failed to apply default image tag "Upper/Case:1": repository name must be lowercase',
    ),
    BadPod(
        "command-missing",
        _spec(_main(command=["/no/such/binary"])),
        "container",
        ("RunContainerError", "CrashLoopBackOff"),
        "Failed",
        'exec: "/no/such/binary": stat /no/such/binary: no such file or directory',
        phase="Running",  # getPhase: restartPolicy Always, every container restarting
    ),
    # Volumes the node cannot set up: the pod waits, FailedMount Events say why.
    _mount("vol-configmap", {"name": "v", "configMap": {"name": ABSENT}}, f'configmap "{ABSENT}" not found'),
    _mount("vol-secret", {"name": "v", "secret": {"secretName": ABSENT}}, f'secret "{ABSENT}" not found'),
    _mount(
        "vol-configmap-key",
        {"name": "v", "configMap": {"name": CONFIGMAP, "items": [{"key": "b", "path": "b"}]}},
        "configmap references non-existent config key: b",
    ),
    _mount(
        "vol-secret-key",
        {"name": "v", "secret": {"secretName": SECRET, "items": [{"key": "b", "path": "b"}]}},
        "references non-existent secret key: b",
    ),
    _mount(
        "vol-projected",
        {"name": "v", "projected": {"sources": [{"configMap": {"name": ABSENT}}]}},
        f'configmap "{ABSENT}" not found',
    ),
    _unsupported_volume("persistentVolumeClaim", {"claimName": ABSENT}),
    _unsupported_volume("csi", {"driver": "csi.example.com"}),
    _unsupported_volume("nfs", {"server": "192.0.2.1", "path": "/exports"}),
    _unsupported_volume(
        "iscsi", {"targetPortal": "192.0.2.1:3260", "iqn": "iqn.2001-04.com.example:t", "lun": 0}
    ),
    _unsupported_volume("rbd", {"monitors": ["192.0.2.1:6789"], "image": "img"}),
    _unsupported_volume("flexVolume", {"driver": "example.com/flex"}),
    _unsupported_volume(
        "ephemeral",
        {
            "volumeClaimTemplate": {
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }
        },
    ),
    BadPod(
        "volume-devices",
        _spec(_main(volumeDevices=[{"name": "v", "devicePath": "/dev/xvda"}]), volumes=[_PVC]),
        "mount",
        ("ContainerCreating",),
        "FailedMount",
        "persistentVolumeClaim volumes are not supported on this node",
    ),
)


def configmap_and_secret() -> list[tuple[str, dict[str, Any]]]:
    """(plural, object): the ConfigMap and Secret with key `a` only that the missing-key cases read."""
    meta = {"namespace": "default"}
    return [
        (
            "configmaps",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": CONFIGMAP, **meta},
                "data": {"a": "1"},
            },
        ),
        (
            "secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": SECRET, **meta},
                "data": {"a": "MQ=="},
            },
        ),
    ]


def _waiting(status: dict[str, Any]) -> list[dict[str, Any]]:
    lists = (status.get("initContainerStatuses") or [], status.get("containerStatuses") or [])
    return [(entry.get("state") or {}).get("waiting") or {} for entries in lists for entry in entries]


def _status_problem(bad: BadPod, status: dict[str, Any]) -> str | None:
    phase, reason, message = status.get("phase"), status.get("reason"), str(status.get("message"))
    if bad.shows == "pod":
        if (phase, reason) != ("Failed", bad.reasons[0]) or bad.says not in message:
            return f"phase {phase}, reason {reason}, message {message!r}"
        return None
    waiting = _waiting(status)
    seen = [(w.get("reason"), w.get("message")) for w in waiting]
    if phase != bad.phase or not any(w.get("reason") in bad.reasons for w in waiting):
        return f"phase {phase}, waiting {seen}"
    first = [w for w in waiting if w.get("reason") == bad.reasons[0]]
    if bad.shows == "container" and first and not any(bad.says in str(w.get("message")) for w in first):
        return f"waiting {seen}"
    return None


def unreported(bad: BadPod, pod: dict[str, Any] | None, events: list[dict[str, Any]]) -> str | None:
    """What the API does not show (yet) of `bad`'s refusal, given the pod and its Events; None
    once its status and a Warning Event both say it in the kubelet's words."""
    if pod is None:
        return "not in the API"
    if problem := _status_problem(bad, pod.get("status") or {}):
        return problem
    said = [e for e in events if e.get("type") == "Warning" and e.get("reason") == bad.event]
    if not any(bad.says in str(e.get("message")) for e in said):
        reasons = sorted({f"{e.get('reason')}: {e.get('message')}" for e in events})
        return f"no Warning {bad.event} Event saying {bad.says!r}; Events: {reasons}"
    return None
