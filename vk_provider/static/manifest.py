"""One static pod manifest: bytes of a file in, a defaulted static pod dict out.

What lives here: `parse_manifest(data, path, node_name, now)`, which decodes one file
(YAML or JSON, exactly one `v1` Pod; an alias bomb refused before it is expanded, with
go-yaml's limit), refuses references to API objects, validates it
against the official OpenAPI schema of KUBE_VERSION's minor (strict, via kubernetes_validate) plus the few
semantic rules the schema cannot express, and applies the kubelet's file-source defaults.
The identity that becomes host paths is checked before anything else is built from it: a
`metadata.uid` given in the file must be a plain token (letters, digits, `-`; the same rule
as the runtime's `paths.is_safe_name`), the namespace a DNS-1123 label, the name a DNS-1123
subdomain and every volume name a unique DNS-1123 label;
and `ManifestError`, whose message says what is wrong in one line: whatever the bytes, the
only exception `parse_manifest` raises (YAML nested too deeply for the parser and values its
constructors refuse included). Pure: no file access,
no clock (the caller passes `now`), no apiserver.

Upstream: pkg/kubelet/config/common.go (tryDecodeSinglePod, applyDefaults),
pkg/api/pod/util.go (HasAPIObjectReference) and pkg/kubelet/types/pod_update.go.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

import kubernetes_validate
import yaml

from vk_common.kube_version import KUBE_MINOR_VERSION
from vk_common.objects import CONFIG_SOURCE_ANNOTATION, format_time_nano

MAX_MANIFEST_BYTES = 10 * 1024 * 1024

CONFIG_HASH_ANNOTATION = "kubernetes.io/config.hash"
CONFIG_SEEN_ANNOTATION = "kubernetes.io/config.seen"
FILE_SOURCE = "file"
NO_EXECUTE_TOLERATION = {"operator": "Exists", "effect": "NoExecute"}

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# A UID given in the file names the pod's directory under docker.stateDir: one plain token
# (vk_common.guarded_paths.is_safe_name applies the same rule again).
_SAFE_UID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_SAFE_UID_MAX = 253
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
# The object references by name a static pod may not hold, field -> the resource it names.
# Volume sources whose credentials are a Secret named inline (VisitPodSecretNames):
_VOLUME_SECRET_REFS = dict.fromkeys(
    ("secretRef", "nodePublishSecretRef", "controllerExpandSecretRef"), "secrets"
)
_PROJECTED_REFS = {"secret": "secrets", "configMap": "configmaps"}  # a projected volume's sources
_ENV_REFS = {"secretKeyRef": "secrets", "configMapKeyRef": "configmaps"}  # env[].valueFrom
_ENV_FROM_REFS = {"secretRef": "secrets", "configMapRef": "configmaps"}  # envFrom[]
# go-yaml v2's guard against alias bombs ("billion laughs"), which the kubelet's decoder applies to
# every manifest (utilyaml.ToJSON -> sigs.k8s.io/yaml -> go.yaml.in/yaml/v2 decode.go unmarshal,
# allowedAliasRatio): past 1000 decoded values, 100 of them from aliases, at most 99% may come from
# aliases, scaled down to 10% between 400,000 and 4,000,000 values.
_ALIAS_MIN_ALIASED = 100
_ALIAS_MIN_DECODED = 1000
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000


class ManifestError(ValueError):
    """A manifest that cannot become a static pod; the message is one line."""


def parse_manifest(data: bytes, path: str, node_name: str, now: datetime) -> dict[str, Any]:
    """Decode, check and default one manifest file into the static pod the provider runs."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"file is larger than {MAX_MANIFEST_BYTES} bytes (10 MiB)")
    pod = _decode(data)
    _check_identity(pod)
    if problem := api_object_reference(pod):
        raise ManifestError(problem)
    _validate_schema(pod)
    _validate_semantics(pod, node_name)
    return apply_defaults(pod, path, node_name, now)


def _decode(data: bytes) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ManifestError(f"invalid YAML/JSON{where}: {exc.problem or exc.context}") from None
    except yaml.reader.ReaderError as exc:  # a character YAML refuses; no mark, a two-line str()
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - text.rfind("\n", 0, exc.position)
        where = f" at line {line}, column {column}"
        raise ManifestError(
            f"invalid YAML/JSON{where}: unacceptable character #x{exc.character:04x}"
        ) from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"invalid YAML/JSON: {exc}") from None
    except RecursionError:
        raise ManifestError("invalid YAML/JSON: nested too deeply") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a constructor's, e.g. `2001-02-30`
        raise ManifestError(f"invalid YAML/JSON: {exc}") from None
    except (AttributeError, LookupError):  # PyYAML's on tags it cannot read: `!!float`, `!!bool x`
        raise ManifestError("invalid YAML/JSON: a tagged value that does not fit its tag") from None
    if not documents:
        raise ManifestError("the file is empty; expected one Pod")
    if len(documents) > 1:
        raise ManifestError(f"the file holds {len(documents)} documents; expected exactly one Pod per file")
    (pod,) = documents
    if not isinstance(pod, dict):
        raise ManifestError(f"expected a Pod object, got a {type(pod).__name__}")
    _check_aliasing(pod)
    # Round-trip through JSON: what the kubelet sees is the JSON form of the YAML, so YAML-only
    # values (dates, non-string keys) are refused here rather than deep in the runtime.
    try:
        result: dict[str, Any] = json.loads(json.dumps(pod))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ManifestError(f"not representable as JSON: {exc}") from None
    return result


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_RATIO_LOW:
        return 0.99
    if decoded >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


def _check_aliasing(document: Any) -> None:
    """Refuse a document that its aliases expand out of proportion, as go-yaml does.

    PyYAML loads an alias as the same object as its anchor, so the bomb is only built when the
    document is expanded (the JSON round trip below, the schema walk); this walks it in document
    order as go-yaml decodes it, counting a value met again (a mapping or a list: a scalar's alias
    expands to one value) and all under it as aliased, and stops at go-yaml's limit."""
    decoded = aliased = 0
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        value, in_alias = stack.pop()
        decoded += 1
        aliased += in_alias
        if (
            aliased > _ALIAS_MIN_ALIASED
            and decoded > _ALIAS_MIN_DECODED
            and aliased / decoded > _allowed_alias_ratio(decoded)
        ):
            raise ManifestError("invalid YAML/JSON: document contains excessive aliasing")
        if isinstance(value, dict):
            children = [item for pair in value.items() for item in pair]
        elif isinstance(value, list):
            children = value
        else:
            continue
        for child in reversed(children):
            again = False
            if isinstance(child, (dict, list)):
                again = id(child) in seen
                seen.add(id(child))
            stack.append((child, in_alias or again))


def _check_identity(pod: Mapping[str, Any]) -> None:
    kind, api_version = pod.get("kind"), pod.get("apiVersion")
    if kind != "Pod":
        got = "no kind" if kind is None else f"kind {kind!r}"
        raise ManifestError(f"{got}: a static pod manifest must be kind 'Pod' (one pod per file)")
    if api_version != "v1":
        got = "no apiVersion" if api_version is None else f"apiVersion {api_version!r}"
        raise ManifestError(f"{got}: a Pod must have apiVersion 'v1'")
    meta = pod.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ManifestError("metadata.name is missing")
    uid = meta.get("uid")
    if uid not in (None, "") and (
        not isinstance(uid, str) or len(uid) > _SAFE_UID_MAX or not _SAFE_UID.fullmatch(uid)
    ):
        raise ManifestError(
            f"invalid Pod: metadata.uid: {uid!r} must be letters, digits and '-' only "
            "(it names the pod's directory)"
        )


def api_object_reference(pod: Mapping[str, Any]) -> str | None:
    """Why the pod may not be a static pod because it references an API object, or None.

    The message follows the kubelet's `static pods may not reference <resource>`, with the
    offending field appended.
    """
    for resource, where in _references(pod):
        return f"static pods may not reference {resource} ({where})"
    return None


def _references(pod: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return
    for key in ("serviceAccountName", "serviceAccount"):
        if spec.get(key):
            yield "serviceaccounts", f"spec.{key}: {spec[key]!r}"
    for i, ref in enumerate(_list(spec.get("imagePullSecrets"))):
        yield "secrets", f"spec.imagePullSecrets[{i}]: {_name(ref)}"
    if _list(spec.get("resourceClaims")):
        yield "resourceclaims", "spec.resourceClaims"
    for i, volume in enumerate(_list(spec.get("volumes"))):
        if isinstance(volume, Mapping):
            yield from _volume_references(volume, f"spec.volumes[{i}]")
    for list_name in _CONTAINER_LISTS:
        for i, container in enumerate(_list(spec.get(list_name))):
            if isinstance(container, Mapping):
                yield from _container_references(container, f"spec.{list_name}[{i}]")


def _volume_references(volume: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    if isinstance(volume.get("secret"), Mapping):
        yield "secrets", f"{where}.secret: {_name(volume['secret'], 'secretName')}"
    if isinstance(volume.get("configMap"), Mapping):
        yield "configmaps", f"{where}.configMap: {_name(volume['configMap'])}"
    if isinstance(volume.get("persistentVolumeClaim"), Mapping):
        yield "persistentvolumeclaims", f"{where}.persistentVolumeClaim"
    if volume.get("ephemeral") is not None:
        yield "persistentvolumeclaims", f"{where}.ephemeral (creates a PersistentVolumeClaim)"
    projected = volume.get("projected")
    if isinstance(projected, Mapping):
        for j, source in enumerate(_list(projected.get("sources"))):
            if not isinstance(source, Mapping):
                continue
            at = f"{where}.projected.sources[{j}]"
            yield from _named_references(source, at, _PROJECTED_REFS)
            if source.get("serviceAccountToken") is not None:
                yield "serviceaccounts", f"{at}.serviceAccountToken"
            if source.get("clusterTrustBundle") is not None:
                yield "clustertrustbundles", f"{at}.clusterTrustBundle"
    for kind, body in volume.items():
        if kind in ("secret", "configMap", "projected") or not isinstance(body, Mapping):
            continue
        yield from _named_references(body, f"{where}.{kind}", _VOLUME_SECRET_REFS)
        if kind == "azureFile" and body.get("secretName"):
            yield "secrets", f"{where}.azureFile.secretName: {body['secretName']!r}"


def _container_references(container: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    for i, env in enumerate(_list(container.get("env"))):
        value_from = env.get("valueFrom") if isinstance(env, Mapping) else None
        if isinstance(value_from, Mapping):
            yield from _named_references(value_from, f"{where}.env[{i}].valueFrom", _ENV_REFS)
    for i, env_from in enumerate(_list(container.get("envFrom"))):
        if isinstance(env_from, Mapping):
            yield from _named_references(env_from, f"{where}.envFrom[{i}]", _ENV_FROM_REFS)


def _named_references(body: Mapping[str, Any], at: str, refs: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(resource, where) for each field of `refs` (field -> resource) that `body` holds as a reference."""
    for key, resource in refs.items():
        if isinstance(body.get(key), Mapping):
            yield resource, f"{at}.{key}: {_name(body[key])}"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(ref: Any, key: str = "name") -> str:
    name = ref.get(key) if isinstance(ref, Mapping) else None
    return repr(name) if name else "(no name)"


def _validate_schema(pod: dict[str, Any]) -> None:
    try:
        kubernetes_validate.validate(pod, KUBE_MINOR_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = _json_path(list(exc.path))
        raise ManifestError(f"invalid Pod: {where or '(top level)'}: {exc.message}") from None


def _json_path(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _unique_label(where: str, kind: str, name: str, seen: set[str]) -> None:
    """`name` at `where` must be a DNS-1123 label not in `seen` (volume and container names)."""
    if len(name) > 63 or not _DNS1123_LABEL.fullmatch(name):
        raise ManifestError(f"invalid Pod: {where}.name: {name!r} is not a DNS-1123 label")
    if name in seen:
        raise ManifestError(f"invalid Pod: {where}.name: duplicate {kind} name {name!r}")
    seen.add(name)


def _validate_semantics(pod: Mapping[str, Any], node_name: str) -> None:
    """The parts of ValidatePodCreate that matter before running and the schema leaves out."""
    meta = pod["metadata"]
    namespace = meta.get("namespace") or "default"
    if len(namespace) > 63 or not _DNS1123_LABEL.fullmatch(namespace):
        raise ManifestError(f"invalid Pod: metadata.namespace: {namespace!r} is not a DNS-1123 label")
    name = static_pod_name(meta["name"], node_name)
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        raise ManifestError(
            f"invalid Pod: metadata.name: {meta['name']!r} (as {name!r}) is not a DNS-1123 subdomain"
        )
    spec = pod.get("spec") or {}
    if not spec.get("containers"):
        raise ManifestError("invalid Pod: spec.containers: at least one container is required")
    volume_names: set[str] = set()
    for i, volume in enumerate(_items(spec, "volumes")):
        _unique_label(f"spec.volumes[{i}]", "volume", volume.get("name") or "", volume_names)
    seen: set[str] = set()
    for list_name in _CONTAINER_LISTS:
        for i, container in enumerate(_items(spec, list_name)):
            where = f"spec.{list_name}[{i}]"
            _unique_label(where, "container", container.get("name") or "", seen)
            if not (container.get("image") or "").strip():
                raise ManifestError(f"invalid Pod: {where}.image: an image is required")


def _items(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The entries of a list of objects in `spec`; a null entry (the schema lets one through) is
    the empty object Go decodes it to, so it fails the checks on its name."""
    return [item or {} for item in spec.get(key) or []]


def static_pod_name(name: str, node_name: str) -> str:
    """`<name>-<lower-cased node name>`, the kubelet's generatePodName for file pods."""
    return f"{name}-{node_name.lower()}"


def static_pod_uid(pod: Mapping[str, Any], path: str, node_name: str) -> str:
    """Hex hash over the decoded object, `host:<node>` and `file:<path>` (applyDefaults).

    The object is hashed in canonical JSON, so comments, key order and formatting do not
    change the UID, while any change of content, path or node does.
    """
    hasher = hashlib.md5(usedforsecurity=False)
    hasher.update(json.dumps(pod, sort_keys=True, separators=(",", ":")).encode())
    hasher.update(f"host:{node_name}".encode())
    hasher.update(f"file:{path}".encode())
    return hasher.hexdigest()


def apply_defaults(pod: Mapping[str, Any], path: str, node_name: str, now: datetime) -> dict[str, Any]:
    """The kubelet's file-source defaults, on a copy of the decoded pod."""
    result = copy.deepcopy(dict(pod))
    meta = result["metadata"]
    uid = meta.get("uid") or static_pod_uid(pod, path, node_name)
    meta["uid"] = uid
    meta["name"] = static_pod_name(meta["name"], node_name)
    meta["namespace"] = meta.get("namespace") or "default"
    annotations = dict(meta.get("annotations") or {})
    annotations[CONFIG_HASH_ANNOTATION] = uid
    annotations[CONFIG_SOURCE_ANNOTATION] = FILE_SOURCE
    annotations[CONFIG_SEEN_ANNOTATION] = format_time_nano(now)
    meta["annotations"] = annotations
    spec = result.setdefault("spec", {})
    spec["nodeName"] = node_name
    tolerations = list(spec.get("tolerations") or [])
    if NO_EXECUTE_TOLERATION not in tolerations:
        tolerations.append(dict(NO_EXECUTE_TOLERATION))
    spec["tolerations"] = tolerations
    result["status"] = {"phase": "Pending"}
    return result
