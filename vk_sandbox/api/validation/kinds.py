"""The kind rules of the sandbox apiserver: hand-written validation on top of the schema walk.

What lives here: `validate_object` (the schema causes of schema.py plus the rules of
`pkg/apis/core/validation/` that matter here: metadata names, labels and annotations; pods (names,
images, resources, probes, tolerations); node taints; core/v1 events (legacyValidateEvent);
ConfigMap and Secret data; Lease specs), and the update and mirror-pod rules (`validate_pod_update`,
`validate_config_update`, `validate_mirror_pod`, `MIRROR_POD_ANNOTATION`).
Must not: touch the store, build HTTP responses or raise ApiError (callers turn causes into 422s).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from vk_sandbox.api.quantity import parse_quantity
from vk_sandbox.api.validation.field import (
    cause,
    child_path,
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
)
from vk_sandbox.api.validation.handlers import LIFECYCLE_HANDLERS, port_number_errors, validate_handler
from vk_sandbox.api.validation.hostnames import hostname_override_errors
from vk_sandbox.api.validation.names import (
    config_key_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from vk_sandbox.api.validation.pod_paths import pod_path_errors
from vk_sandbox.api.validation.schema import schema_pass, unknown_field_message
from vk_sandbox.api.validation.sysctls import sysctl_errors

_NAMESPACE_SCOPED_DNS_LABEL_KINDS = {"Namespace", "Service"}
_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def _validate_metadata(obj: dict[str, Any]) -> list[dict[str, str]]:
    meta = _dict(obj.get("metadata"))
    out: list[dict[str, str]] = []
    name = meta.get("name")
    label_named = obj.get("kind") in _NAMESPACE_SCOPED_DNS_LABEL_KINDS
    check = dns1123_label_errors if label_named else dns1123_subdomain_errors
    prefix = meta.get("generateName")
    if prefix:
        # ValidateObjectMeta: the prefix as a name whose trailing '-' is masked (maskTrailingDash)
        errs = check(str(prefix)[:-1] + "a" if str(prefix).endswith("-") else str(prefix))
        if errs:
            out.append(invalid("metadata.generateName", prefix, "; ".join(errs)))
    if not name:
        if not prefix:
            out.append(required("metadata.name", "name or generateName is required"))
    else:
        errs = check(str(name))
        if errs:
            out.append(invalid("metadata.name", name, "; ".join(errs)))
    for key, value in (meta.get("labels") or {}).items():
        errs = qualified_name_errors(str(key))
        if errs:
            out.append(invalid("metadata.labels", key, "; ".join(errs)))
        errs = label_value_errors(str(value))
        if errs:
            out.append(invalid("metadata.labels", value, "; ".join(errs)))
    for key in meta.get("annotations") or {}:
        errs = qualified_name_errors(str(key).lower())
        if errs:
            out.append(invalid("metadata.annotations", key, "; ".join(errs)))
    return out


def _enum(out: list[dict[str, str]], path: str, value: Any, allowed: list[str]) -> None:
    if value is not None and value not in allowed:
        out.append(not_supported(path, value, allowed))


def _unique_label(out: list[dict[str, str]], path: str, name: Any, seen: set[str]) -> None:
    """A container or volume name: a DNS-1123 label not already in `seen` (which it joins)."""
    errs = dns1123_label_errors(str(name))
    if errs:
        out.append(invalid(path, name, "; ".join(errs)))
    elif name in seen:
        out.append(duplicate(path, name))
    seen.add(str(name))


def _validate_containers(
    containers: list[Any], path: str, seen: set[str], volumes: set[str], out: list[dict[str, str]]
) -> None:
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            continue
        p = f"{path}[{i}]"
        name = c.get("name")
        if name:
            _unique_label(out, f"{p}.name", name, seen)
        elif "name" in c:
            out.append(required(f"{p}.name"))
        if not c.get("image"):
            out.append(required(f"{p}.image"))
        _enum(out, f"{p}.imagePullPolicy", c.get("imagePullPolicy"), _PULL_POLICIES)
        _enum(
            out,
            f"{p}.terminationMessagePolicy",
            c.get("terminationMessagePolicy"),
            _TERMINATION_MESSAGE_POLICIES,
        )
        for j, port in enumerate(c.get("ports") or []):
            if not isinstance(port, dict):
                continue
            out.extend(port_number_errors(port.get("containerPort"), f"{p}.ports[{j}].containerPort"))
            if port.get("hostPort") != 0:  # 0: no host port
                out.extend(port_number_errors(port.get("hostPort"), f"{p}.ports[{j}].hostPort"))
            _enum(out, f"{p}.ports[{j}].protocol", port.get("protocol"), _PROTOCOLS)
        for j, env in enumerate(c.get("env") or []):
            if isinstance(env, dict) and not env.get("name"):
                out.append(required(f"{p}.env[{j}].name"))
            if isinstance(env, dict) and env.get("value") and env.get("valueFrom") is not None:
                out.append(
                    invalid(f"{p}.env[{j}].valueFrom", "", "may not be specified when `value` is not empty")
                )
        _validate_resources(c.get("resources") or {}, f"{p}.resources", out)
        lifecycle = c.get("lifecycle")  # validated before the probes, as validateContainerCommon does
        if isinstance(lifecycle, dict):
            for hook in ("postStart", "preStop"):
                validate_handler(lifecycle.get(hook), f"{p}.lifecycle.{hook}", LIFECYCLE_HANDLERS, out)
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            validate_handler(c.get(probe), f"{p}.{probe}", ("exec", "httpGet", "tcpSocket", "grpc"), out)
        for j, mount in enumerate(c.get("volumeMounts") or []):
            if not isinstance(mount, dict):
                continue
            if mount.get("name") and mount["name"] not in volumes:
                out.append(not_found(f"{p}.volumeMounts[{j}].name", mount["name"]))
            if not mount.get("mountPath"):
                out.append(required(f"{p}.volumeMounts[{j}].mountPath"))


def _validate_resources(resources: dict[str, Any], path: str, out: list[dict[str, str]]) -> None:
    """ValidateResourceRequirements: non-negative quantities, requests no larger than limits."""
    limits: dict[str, Any] = {}
    for kind in ("limits", "requests"):
        for name, quantity in (resources.get(kind) or {}).items():
            try:
                value = parse_quantity(quantity)
            except (ValueError, TypeError):
                continue  # reported by the schema pass as a decode error
            if value < 0:
                out.append(
                    invalid(f"{path}.{kind}[{name}]", str(quantity), "must be greater than or equal to 0")
                )
            if kind == "limits":
                limits[name] = (value, quantity)
            elif name in limits and value > limits[name][0]:
                detail = f"must be less than or equal to {name} limit of {limits[name][1]}"
                out.append(invalid(f"{path}.requests", str(quantity), detail))


_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _validate_taints(taints: list[Any], path: str) -> list[dict[str, str]]:
    """validateNodeTaints: qualified keys, label values, a known effect, unique (key, effect)."""
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        if not isinstance(taint, dict):
            continue
        p = f"{path}[{i}]"
        key, value, effect = (
            str(taint.get("key") or ""),
            str(taint.get("value") or ""),
            taint.get("effect") or "",
        )
        out.extend(invalid(f"{p}.key", key, msg) for msg in qualified_name_errors(key))
        errs = label_value_errors(value)
        if errs:
            out.append(invalid(f"{p}.value", value, ";".join(errs)))
        if not effect:
            out.append(required(f"{p}.effect"))
        else:
            _enum(out, f"{p}.effect", effect, _TAINT_EFFECTS)
        if (key, effect) in seen:
            shown = f'core.Taint{{Key:"{key}", Value:"{value}", Effect:"{effect}", TimeAdded:<nil>}}'
            out.append(
                cause(
                    "FieldValueDuplicate",
                    p,
                    f"Duplicate value: {shown}: taints must be unique by key and effect pair",
                )
            )
        seen.add((key, effect))
    return out


def _validate_tolerations(tolerations: list[Any], path: str) -> list[dict[str, str]]:
    """ValidateTolerations (pkg/apis/core/validation/validation.go)."""
    out: list[dict[str, str]] = []
    for i, tol in enumerate(tolerations):
        if not isinstance(tol, dict):
            continue
        p = f"{path}[{i}]"
        key, op, value, effect = (str(tol.get(k) or "") for k in ("key", "operator", "value", "effect"))
        if key:
            out.extend(invalid(f"{p}.key", key, msg) for msg in qualified_name_errors(key))
        if not key and op != "Exists":
            detail = (
                'operator must be Exists when `key` is empty, which means "match all values and all keys"'
            )
            out.append(invalid(f"{p}.operator", op, detail))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            out.append(
                invalid(f"{p}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
            )
        if op in ("Equal", ""):
            errs = label_value_errors(value)
            if errs:
                out.append(invalid(f"{p}.operator", value, ";".join(errs)))
        elif op == "Exists":
            if value:
                out.append(invalid(f"{p}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            out.append(not_supported(f"{p}.operator", op, ["Equal", "Exists"]))
        if effect:
            _enum(out, f"{p}.effect", effect, _TAINT_EFFECTS)
    return out


def _validate_event(ev: dict[str, Any]) -> list[dict[str, str]]:
    """legacyValidateEvent (pkg/apis/core/validation/events.go) as applied to core/v1 requests."""
    out: list[dict[str, str]] = []
    namespace = str(_dict(ev.get("metadata")).get("namespace") or "")
    involved_ns = str(_dict(ev.get("involvedObject")).get("namespace") or "")
    mismatch = invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    if not ev.get("eventTime"):
        if (not involved_ns and namespace not in ("", "default")) or (
            involved_ns and namespace != involved_ns
        ):
            out.append(mismatch)
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            out.append(mismatch)
        component = str(ev.get("reportingComponent") or "")
        if not component:
            out.append(required("reportingComponent"))
        out.extend(invalid("reportingComponent", component, msg) for msg in qualified_name_errors(component))
        for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            value = str(ev.get(key) or "")
            if not value:
                out.append(required(key))
            if len(value) > limit:
                out.append(invalid(key, "", f"can have at most {limit} characters"))
        if len(str(ev.get("message") or "")) > 1024:
            out.append(invalid("message", "", "can have at most 1024 characters"))
    out.extend(invalid("namespace", namespace, msg) for msg in dns1123_subdomain_errors(namespace))
    return out


# The keys each Secret type requires (ValidateSecret, pkg/apis/core/validation/validation.go).
_SECRET_TYPE_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def _validate_config_data(obj: dict[str, Any]) -> list[dict[str, str]]:
    """ValidateConfigMap / ValidateSecret beyond metadata: the keys, a key in both of a
    ConfigMap's bags, and the keys a Secret's type requires."""
    out: list[dict[str, str]] = []
    data, binary = _dict(obj.get("data")), _dict(obj.get("binaryData"))
    for key in data:
        out.extend(invalid(f"data[{key}]", key, msg) for msg in config_key_errors(key))
        if obj.get("kind") == "ConfigMap" and key in binary:
            out.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
    if obj.get("kind") == "ConfigMap":
        for key in binary:
            out.extend(invalid(f"binaryData[{key}]", key, msg) for msg in config_key_errors(key))
        return out
    secret_type = str(obj.get("type") or "")
    if secret_type == "kubernetes.io/service-account-token":
        if not _dict(_dict(obj.get("metadata")).get("annotations")).get("kubernetes.io/service-account.name"):
            out.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif secret_type == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            out.extend([required("data[username]"), required("data[password]")])
    elif secret_type == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            out.append(required("data[ssh-privatekey]"))
    else:
        out.extend(
            required(f"data[{key}]") for key in _SECRET_TYPE_KEYS.get(secret_type, ()) if key not in data
        )
    return out


def validate_config_update(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    """ValidateConfigMapUpdate / ValidateSecretUpdate before the create rules: a Secret's type is
    immutable, and so is everything of an `immutable: true` one."""
    out: list[dict[str, str]] = []
    if new.get("kind") == "Secret" and (new.get("type") or "") != (old.get("type") or ""):
        out.append(invalid("type", new.get("type") or "", "field is immutable"))
    if old.get("immutable") is True:
        locked = "field is immutable when `immutable` is set"
        if new.get("immutable") is not True:
            out.append(forbidden("immutable", locked))
        bags = ("data", "binaryData") if new.get("kind") == "ConfigMap" else ("data",)
        out.extend(forbidden(bag, locked) for bag in bags if _dict(new.get(bag)) != _dict(old.get(bag)))
    return out


def _validate_lease(lease: dict[str, Any]) -> list[dict[str, str]]:
    """ValidateLeaseSpec (pkg/apis/coordination/validation/validation.go)."""
    spec = _dict(lease.get("spec"))
    out: list[dict[str, str]] = []
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if isinstance(duration, int) and duration <= 0:
        out.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    if isinstance(transitions, int) and transitions < 0:
        out.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return out


def _validate_pod(pod: dict[str, Any]) -> list[dict[str, str]]:
    spec = pod.get("spec")
    out: list[dict[str, str]] = []
    if not isinstance(spec, dict):
        return out
    volumes: set[str] = set()
    for i, v in enumerate(spec.get("volumes") or []):
        if not isinstance(v, dict):
            continue
        name = v.get("name")
        if not name:
            out.append(required(f"spec.volumes[{i}].name"))
            continue
        _unique_label(out, f"spec.volumes[{i}].name", name, volumes)
    containers = spec.get("containers") or []
    if not containers:
        out.append(required("spec.containers"))
    seen: set[str] = set()
    _validate_containers(containers, "spec.containers", seen, volumes, out)
    _validate_containers(spec.get("initContainers") or [], "spec.initContainers", seen, volumes, out)
    _enum(out, "spec.restartPolicy", spec.get("restartPolicy"), _RESTART_POLICIES)
    out.extend(_validate_tolerations(spec.get("tolerations") or [], "spec.tolerations"))
    _enum(out, "spec.dnsPolicy", spec.get("dnsPolicy"), _DNS_POLICIES)
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        out.append(invalid("spec.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0"))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= 0:
        out.append(
            invalid("spec.activeDeadlineSeconds", deadline, "must be between 1 and 2147483647, inclusive")
        )
    node_name = spec.get("nodeName")
    if node_name:
        errs = dns1123_subdomain_errors(str(node_name))
        if errs:
            out.append(invalid("spec.nodeName", node_name, "; ".join(errs)))
    out.extend(hostname_override_errors(spec))
    out.extend(sysctl_errors(spec))
    out.extend(pod_path_errors(spec))
    return out


def validate_object(obj: dict[str, Any], *, strict: bool = True) -> list[dict[str, str]]:
    """Causes for obj against its official schema and kind rules; [] when valid. The mirror-pod
    annotation rules are not included: run validate_mirror_pod(new, old) on every pod write.

    strict=True also reports each undeclared field as FieldValueInvalid `unknown field "<path>"`.
    (The real server answers unknown fields under fieldValidation=Strict with a 400
    `strict decoding error: unknown field "<path>"`; use unknown_fields() to build that instead.)
    """
    result = schema_pass(obj)
    causes = list(result.causes)
    if strict:
        causes.extend(
            cause("FieldValueInvalid", path, unknown_field_message(path)) for path in result.unknown
        )
    if result.decode:
        return _dedupe(causes)  # the real server stops at decoding; kind rules need well-typed input
    if obj.get("apiVersion") == "v1" and obj.get("kind") == "Event":
        # core/v1 events get only legacyValidateEvent, no metadata checks (backwards compatibility)
        causes.extend(_validate_event(obj))
        return _dedupe(causes)
    causes.extend(_validate_metadata(obj))
    if obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        causes.extend(_validate_pod(obj))
    if obj.get("kind") == "Node" and obj.get("apiVersion") == "v1":
        causes.extend(_validate_taints(_dict(obj.get("spec")).get("taints") or [], "spec.taints"))
    if obj.get("kind") in ("ConfigMap", "Secret") and obj.get("apiVersion") == "v1":
        causes.extend(_validate_config_data(obj))
    if obj.get("kind") == "Lease" and obj.get("apiVersion") == "coordination.k8s.io/v1":
        causes.extend(_validate_lease(obj))
    return _dedupe(causes)


def _dedupe(causes: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for c in causes:
        key = (c["reason"], c["field"], c["message"])
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


# ---------------------------------------------------------------------------------------------
# Pod updates

UPDATABLE_POD_SPEC_FIELDS = ",".join(
    [
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    ]
)


def _spec_diff(old: Any, new: Any, path: str, lines: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            _spec_diff(old.get(key), new.get(key), child_path(path, key), lines)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _spec_diff(a, b, f"{path}[{i}]", lines)
        return
    lines.append(f"- \t{path}: {json.dumps(old, sort_keys=True)},")
    lines.append(f"+ \t{path}: {json.dumps(new, sort_keys=True)},")


def _only_added_tolerations(old: list[Any], new: list[Any]) -> bool:
    """validateOnlyAddedTolerations (pkg/apis/core/validation/validation.go): every old toleration
    is still there, tolerationSeconds aside. The Go structs are compared, so an absent field equals
    its zero value (`value: ""` is no value); `operator` has no default, "" is not "Equal"."""

    def fields(t: Any) -> Any:
        return (
            tuple(t.get(k) or "" for k in ("key", "operator", "value", "effect"))
            if isinstance(t, dict)
            else t
        )

    remaining = [fields(t) for t in new]
    return all(fields(t) in remaining for t in old)


def validate_pod_update(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    """Causes for changing pod old into new through the main resource (pkg/apis/core/validation
    ValidatePodUpdate): immutable metadata and non-updatable spec fields. The mirror annotation
    rules are validate_mirror_pod's (callers run it for every pod write, status included)."""
    out: list[dict[str, str]] = []
    old_meta, new_meta = _dict(old.get("metadata")), _dict(new.get("metadata"))
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if new_meta.get(key) and new_meta.get(key) != old_meta.get(key):
            out.append(invalid(f"metadata.{key}", new_meta.get(key), "field is immutable"))
    old_spec, new_spec = _dict(old.get("spec")), _dict(new.get("spec"))
    munged = copy.deepcopy(new_spec)
    for kind in ("containers", "initContainers"):
        olds = old_spec.get(kind) or []
        news = munged.get(kind) or []
        if len(olds) == len(news):
            for o, n in zip(olds, news, strict=True):
                if isinstance(o, dict) and isinstance(n, dict) and "image" in o:
                    n["image"] = o["image"]
    new_deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if new_deadline is not None:
        if old_deadline is None or new_deadline <= old_deadline:
            _set_or_drop(munged, "activeDeadlineSeconds", old_deadline)
        else:
            out.append(
                invalid(
                    "spec.activeDeadlineSeconds", new_deadline, "must be less than or equal to previous value"
                )
            )
            _set_or_drop(munged, "activeDeadlineSeconds", old_deadline)
    elif old_deadline is not None:
        out.append(
            invalid(
                "spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil value"
            )
        )
        _set_or_drop(munged, "activeDeadlineSeconds", old_deadline)
    if not _only_added_tolerations(old_spec.get("tolerations") or [], new_spec.get("tolerations") or []):
        out.append(
            forbidden(
                "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
            )
        )
    _set_or_drop(munged, "tolerations", old_spec.get("tolerations"))
    old_grace, new_grace = (
        old_spec.get("terminationGracePeriodSeconds"),
        new_spec.get("terminationGracePeriodSeconds"),
    )
    if isinstance(old_grace, int) and old_grace < 0 and new_grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged != old_spec:
        lines = ["  core.PodSpec{"]
        _spec_diff(old_spec, munged, "spec", lines)
        lines.append("  }")
        diff = "\n".join(lines)
        out.append(
            forbidden(
                "spec", f"pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{diff}"
            )
        )
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _set_or_drop(spec: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        spec.pop(key, None)
    else:
        spec[key] = copy.deepcopy(value)


def validate_mirror_pod(new: dict[str, Any], old: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """The mirror-pod annotation rules (ValidatePodSpecificAnnotations/-Updates in
    pkg/apis/core/validation/validation.go):
    a pod with the annotation must name its node (every write); with old given (an update of the
    main resource or of pods/status) the annotation may not be added, removed or changed."""
    out: list[dict[str, str]] = []
    new_ann = _dict(_dict(new.get("metadata")).get("annotations"))
    field = f"metadata.annotations[{MIRROR_POD_ANNOTATION}]"
    if old is not None:
        old_ann = _dict(_dict(old.get("metadata")).get("annotations"))
        for key, value in old_ann.items():
            if key.startswith(MIRROR_POD_ANNOTATION) and new_ann.get(key) != value:
                out.append(
                    forbidden(
                        f"metadata.annotations[{key}]", "may not remove or update mirror pod annotation"
                    )
                )
        for key in new_ann:
            if key.startswith(MIRROR_POD_ANNOTATION) and key not in old_ann:
                out.append(forbidden(f"metadata.annotations[{key}]", "may not add mirror pod annotation"))
    if MIRROR_POD_ANNOTATION in new_ann and not _dict(new.get("spec")).get("nodeName"):
        out.append(
            invalid(
                field,
                new_ann[MIRROR_POD_ANNOTATION],
                "must set spec.nodeName if mirror pod annotation is set",
            )
        )
    return out
